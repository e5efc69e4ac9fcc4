"""ragchat as an OpenAI-compatible model: `GET /v1/models`, `POST /v1/chat/completions` (streamed or not).

Any OpenAI client (the `openai` package, Open WebUI as a connection, Continue, curl) gets answers grounded
in the caller's documents: the last user message is the question, earlier user/assistant messages are the
history, and the model searches through the same tool as chat. Sources follow the answer as a numbered list
and, structured, in an extra `sources` field (the final chunk's, when streamed). Authenticate with a
personal API token (`api_key=` in the client). Errors are OpenAI-style `{"error": {message, type, code}}`.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from litestar import Request, Response, Router, get, post
from litestar.exceptions import HTTPException
from litestar.response import Stream

from ragchat.chat.api.openai_schemas import (
    MODEL_ID,
    AssistantMessage,
    ChatCompletion,
    Choice,
    Completion,
    CompletionSource,
    CompletionUsage,
    Model,
    ModelList,
)
from ragchat.chat.engine.answer import Answer, AnswerRequest
from ragchat.chat.engine.faults import as_http_error
from ragchat.chat.engine.verify import footnotes
from ragchat.chat.schemas import AnswerVerification
from ragchat.chat.service import ChatService
from ragchat.core.errors import BadRequest, RagchatError, RateLimited
from ragchat.core.options import Asked
from ragchat.core.principal import Principal
from ragchat.httpapi.http import EventStream, also_event_stream, error_responses, request_id_of, response_spec
from ragchat.policy.request import Ask, RequestPolicy

log = logging.getLogger(__name__)
MAX_CHARS = 64_000


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if isinstance(content, list):  # [{"type": "text", "text": …}, …]
        return "".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return (content or "").replace("\x00", "")


def to_request(body: Completion) -> AnswerRequest:
    turns = [(m.role, _text(m.content)) for m in body.messages if m.role in ("user", "assistant")]
    if not turns or turns[-1][0] != "user" or not turns[-1][1].strip():
        raise BadRequest("the last message must be a non-empty user message (the question)")
    if sum(len(t) for _, t in turns) > MAX_CHARS:
        raise BadRequest(f"the messages are too long (at most {MAX_CHARS} characters in all)")
    history = [{"role": r, "content": t} for r, t in turns[:-1] if t.strip()]
    return AnswerRequest(question=turns[-1][1].strip(), history=history)


def sources_block(answer: Answer, with_footnotes: bool = False) -> str:
    """The numbered sources under the answer's text; with RAG_FOOTNOTES, the verification too."""
    cited = set(answer.citations.get("cited") or [])
    lines = [
        f"[{s['n']}] {s['filename']}" + (f", p. {s['page']}" if s.get("page") else "")
        for s in answer.sources
        if not cited or s["n"] in cited
    ]
    out = "\n\nSources:\n" + "\n".join(lines) if lines else ""
    notes = footnotes(answer.verification) if with_footnotes else ""
    return out + (f"\n\nChecks:\n{notes}" if notes else "")


def _sources(answer: Answer) -> list[dict[str, Any]]:
    return [
        {k: s.get(k) for k in ("n", "document_id", "filename", "title", "page", "section", "score", "content")}
        for s in answer.sources
    ]


def _usage(answer: Answer) -> dict[str, int]:
    prompt, completion = int(answer.usage.get("prompt_tokens") or 0), int(answer.usage.get("completion_tokens") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@get("/models")
async def list_models(principal: Principal) -> ModelList:
    return ModelList(data=[Model(id=MODEL_ID)])


@post(
    "/chat/completions",
    status_code=200,
    responses={
        200: response_spec(ChatCompletion, "the answer; with `stream: true`, chat.completion.chunk SSE"),
        **error_responses(404, 429, 502, 504),
    },
    operation_class=also_event_stream("with `stream: true`: `data:` lines of chat.completion.chunk JSON, then [DONE]"),
)
async def chat_completions(
    data: Completion, chat: ChatService, principal: Principal, policy: RequestPolicy
) -> ChatCompletion | Stream:
    req = to_request(data)
    # the request names no search options: the user's preferences, else the environment's
    ask = Ask(
        search=Asked(),
        document_ids=data.document_ids,
        collection_ids=data.collection_ids,
        documents_only=data.documents_only,
        default_limit=chat.settings.chat_search_limit,
        charge="question",
    )
    checked = await policy.check(principal, ask)
    req = replace(
        req,
        options=checked.options,
        document_ids=checked.document_ids,
        collection_ids=checked.collection_ids,
        documents_only=checked.documents_only,
    )
    cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    if not data.stream:
        try:
            answer = await chat.answer(principal, req)
        except Exception as exc:
            raise as_http_error(exc) from exc
        return ChatCompletion(
            id=cid,
            created=created,
            model=MODEL_ID,
            choices=[
                Choice(
                    index=0,
                    message=AssistantMessage(content=answer.text + sources_block(answer, chat.settings.rag_footnotes)),
                    finish_reason="stop",
                )
            ],
            usage=CompletionUsage(**_usage(answer)),
            sources=[CompletionSource.model_validate(s) for s in _sources(answer)],
            verification=AnswerVerification.model_validate(answer.verification) if answer.verification else None,
        )
    return EventStream(_stream(chat, principal, req, cid, created))


async def _stream(
    chat: ChatService, principal: Principal, req: AnswerRequest, cid: str, created: int
) -> AsyncGenerator[bytes, None]:
    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        body = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": MODEL_ID,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(body)}\n\n".encode()

    yield chunk({"role": "assistant", "content": ""})
    out: list[Answer] = []
    try:
        async with aclosing(chat.answer_stream(principal, req, out=out)) as events:
            async for event in events:
                if event.event == "token" and event.data["delta"]:
                    yield chunk({"content": event.data["delta"]})
                elif event.event == "retry":  # the text so far failed a check: say so, then the new answer
                    yield chunk({"content": f"\n\n({event.data['message']})\n\n"})
    except Exception as exc:  # mid-stream: an OpenAI-style error object as the last data line
        err = as_http_error(exc)
        yield f"data: {json.dumps({'error': _error_body(err)})}\n\n".encode()
        yield b"data: [DONE]\n\n"
        return
    answer = out[0]
    tail = sources_block(answer, chat.settings.rag_footnotes)
    if tail:
        yield chunk({"content": tail})
    yield chunk({}, "stop", sources=_sources(answer), usage=_usage(answer), verification=answer.verification)
    yield b"data: [DONE]\n\n"


def _error_body(exc: RagchatError) -> dict[str, Any]:
    kind = "invalid_request_error" if exc.status_code < 500 else "server_error"
    if exc.status_code == 401:
        kind = "authentication_error"
    return {"message": exc.message, "type": kind, "code": exc.code}


def openai_error(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    """OpenAI's error shape (what its clients parse), with our code and the request id."""
    if isinstance(exc, HTTPException):
        err = RagchatError(str(exc.detail))
        err.status_code, err.code = exc.status_code, "invalid_request" if exc.status_code < 500 else "server_error"
        headers = dict(exc.headers or {})
    else:
        err = as_http_error(exc)
        if err.status_code >= 500 and err.code == "internal_error":  # a bug: traceback logged, no internals sent
            log.error("request %s: unhandled error on %s", request_id_of(request), request.url.path, exc_info=exc)
            err = RagchatError(f"internal server error (logged on the server as {request_id_of(request)})")
        headers = {"Retry-After": str(err.retry_after)} if isinstance(err, RateLimited) else {}
    body = {"error": {**_error_body(err), "request_id": request_id_of(request)}}
    return Response(body, status_code=err.status_code, headers=headers)


def openai_router() -> Router:
    return Router(
        path="/v1",
        route_handlers=[list_models, chat_completions],
        exception_handlers={Exception: openai_error},
        tags=["OpenAI-compatible"],
    )
