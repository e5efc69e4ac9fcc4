"""POST /api/rag: retrieve, then answer, in one JSON response `{answer, chunks, citations, verification, usage,
debug}`: the chat's answer pipeline (chat/engine/pipeline.py), its verification included.

The same retrieval and prompt as chat's retrieve-then-answer path; nothing is saved. `debug` shows what each
arm found (`vectorResults`, `keywordResults`), what the reranker kept (`rerankedResults`) and per-stage
`stats` in ms.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from litestar import post
from litestar.response import Stream

from ragchat.chat.api.sse import server_sent_events
from ragchat.chat.engine.answer import Answer, AnswerRequest
from ragchat.chat.engine.faults import as_http_error, describe_failure
from ragchat.chat.engine.loop import ChatEvent
from ragchat.chat.schemas import MAX_QUERY_CHARS, RagAnswer, RagBody, RagFilters, check_task
from ragchat.chat.service import ChatService
from ragchat.core.errors import BadRequest
from ragchat.core.options import Asked
from ragchat.core.principal import Principal
from ragchat.httpapi.http import EventStream, also_event_stream, error_responses, response_spec
from ragchat.policy.request import Ask, Charge, RequestPolicy


def _arm(chunks: list[dict[str, Any]], rank_key: str, score_key: str) -> list[dict[str, Any]]:
    ranked = [c for c in chunks if c["trace"].get(rank_key) is not None]
    ranked.sort(key=lambda c: c["trace"][rank_key])
    return [
        {
            "id": c["id"],
            "document_id": c["document_id"],
            "filename": c["filename"],
            "rank": c["trace"][rank_key],
            "score": c["trace"][score_key],
        }
        for c in ranked
    ]


def rag_answer(answer: Answer, elapsed_ms: float, *, debug: bool = True) -> RagAnswer:
    """The /api/rag response (also `ragchat search --rag --json`)."""
    out: dict[str, Any] = {
        "answer": answer.text,
        "chunks": answer.sources,
        "citations": answer.citations,
        "verification": answer.verification,
        "usage": answer.usage,
        "finish_reason": answer.finish_reason,
    }
    if debug:
        result = answer.tool_results[0] if answer.tool_results else None
        chunks = result["chunks"] if result else []
        timings = dict(result["timings"]) if result else {}
        timings["answer_ms"] = round(elapsed_ms - float(timings.get("total_ms") or 0.0), 2)
        timings["total_ms"] = round(elapsed_ms, 2)
        out["debug"] = {
            "search_mode": result["search_mode"] if result else None,
            "reranked": bool(result and result["reranked"]),
            "vectorResults": _arm(chunks, "vector_rank", "vector_score"),
            "keywordResults": _arm(chunks, "keyword_rank", "keyword_score"),
            "rerankedResults": [
                {"id": c["id"], "filename": c["filename"], "score": c["trace"]["rerank_score"]}
                for c in chunks
                if c["trace"].get("rerank_score") is not None
            ],
            "stats": timings,
        }
    return RagAnswer.model_validate(out)


def rag_question(body: RagBody) -> str:
    """The body's question, checked (400s before anything is counted)."""
    query = body.query.replace("\x00", "").strip()
    if not query:
        raise BadRequest("query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(f"query is too long ({len(query)} characters; at most {MAX_QUERY_CHARS})")
    check_task(body.task, (body.filters or RagFilters()).document_ids, "filters.document_ids")
    return query


async def checked_rag(policy: RequestPolicy, principal: Principal, body: RagBody, charge: Charge) -> AnswerRequest:
    """The body as an answer request, through the request policy (/api/rag, and `ragchat search --rag`)."""
    question = rag_question(body)
    f = body.filters or RagFilters()
    ask = Ask(
        search=Asked(mode=body.mode, rerank=body.rerank, limit=body.top_k),
        document_ids=f.document_ids,
        collection_ids=f.collection_ids,
        documents_only=body.documents_only,
        charge=charge,
    )
    checked = await policy.check(principal, ask)
    return AnswerRequest(
        question=question,
        document_ids=checked.document_ids,
        collection_ids=checked.collection_ids,
        metadata=f.metadata or None,
        options=checked.options,
        retrieve_first=True,
        task=body.task,
        documents_only=checked.documents_only,
    )


async def _events(chat: ChatService, principal: Principal, req: AnswerRequest) -> AsyncGenerator[ChatEvent, None]:
    """The answer's events; a failure is the stream's last event, `error` {code, message}, as in chat."""
    try:
        async with aclosing(chat.answer_stream(principal, req)) as events:
            async for event in events:
                yield event
    except Exception as exc:
        yield ChatEvent("error", describe_failure(exc).to_json())


async def _sse(chat: ChatService, principal: Principal, req: AnswerRequest) -> AsyncGenerator[bytes, None]:
    async with aclosing(server_sent_events(_events(chat, principal, req))) as events:
        async for event in events:
            yield event.encode()


@post(
    "/api/rag",
    status_code=200,
    responses={
        200: response_spec(RagAnswer, "the answer (JSON), or with `stream: true` the chat SSE events"),
        **error_responses(404, 429, 502, 504),
    },
    operation_class=also_event_stream("with `stream: true`: the chat events (docs/SSE.md, ChatStream), no `thread`"),
)
async def rag(data: RagBody, chat: ChatService, principal: Principal, policy: RequestPolicy) -> RagAnswer | Stream:
    """Retrieve `top_k` passages for `query` and answer from them, citing [n]; `debug` traces each stage.
    With `stream: true` the answer comes as the chat SSE events instead (see docs/SSE.md), no `thread`."""
    req = await checked_rag(policy, principal, data, "question")
    if data.stream:
        return EventStream(_sse(chat, principal, req), headers={"Cache-Control": "no-store"})
    start = time.perf_counter()
    try:
        answer = await chat.answer(principal, req)
    except Exception as exc:
        raise as_http_error(exc) from exc
    return rag_answer(answer, (time.perf_counter() - start) * 1000, debug=data.debug)
