"""In-process fake of an OpenAI-compatible server (llama.cpp server, LM Studio, vLLM, OpenAI), for tests and benches.

`FakeOpenAI` serves the `/v1` wire format (chat completions as JSON or SSE with streamed tool-call deltas,
embeddings as floats or base64, OpenAI error bodies) on 127.0.0.1 from a uvicorn thread, so the application talks
to it through the official `openai` client. Chat answers are scripted with the same `Reply` objects as
`FakeOllama`: a FIFO queue, then `responder`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import time
import uuid
from typing import Any

from tests.fakes.script import (
    DEFAULT_EMBED_DIM,
    JSON_TYPE,
    Receive,
    Reply,
    RequestRecord,
    ScriptedServer,
    Send,
    fake_embedding,
    no_tools_message,
    split_tokens,
)

__all__ = [
    "DEFAULT_MODELS",
    "NO_SCRIPT_ERROR",
    "FakeOpenAI",
    "Reply",
    "RequestRecord",
    "decode_base64_embedding",
    "openai_error",
]

DEFAULT_MODELS: tuple[str, ...] = ("llama3.2",)
NO_SCRIPT_ERROR = "fake openai: no scripted reply"
SYSTEM_FINGERPRINT = "fp_fake"
_CREATED = 1735689600  # 2025-01-01, the `created` of every model
_SSE = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
_NO_RETRY = [(b"x-should-retry", b"false")]
_RETRY_AFTER = [(b"retry-after", b"1")]


def openai_error(
    message: str, type_: str = "invalid_request_error", code: str | int | None = None, param: str | None = None
) -> dict[str, Any]:
    """`{"error": {"message", "type", "param", "code"}}`, the body of every OpenAI error."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _status_error(status: int, message: str) -> dict[str, Any]:
    if status == 429:
        return openai_error(message, "requests", "rate_limit_exceeded")
    if status == 401:
        return openai_error(message, "invalid_request_error", "invalid_api_key")
    if status == 403:
        return openai_error(message, "permission_error")
    if status >= 500:
        return openai_error(message, "server_error")
    return openai_error(message)


def decode_base64_embedding(data: str) -> list[float]:
    """Inverse of the `encoding_format: "base64"` encoding: little-endian float32."""
    raw = base64.b64decode(data)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def _event(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _fragments(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class FakeOpenAI(ScriptedServer):
    """OpenAI-protocol HTTP server on a background thread; `url` ends in `/v1` (the client's `base_url`)."""

    label = "fake openai"
    chat_paths = ("/v1/chat/completions",)
    embed_paths = ("/v1/embeddings",)

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, embed_dim: int = DEFAULT_EMBED_DIM, api_key: str | None = None
    ) -> None:
        self._default_api_key = api_key
        super().__init__(host, port, embed_dim)

    def _set_defaults(self) -> None:
        super()._set_defaults()
        self.models: list[str] = list(DEFAULT_MODELS)  # /v1/models; other names get 404 model_not_found
        self.api_key: str | None = self._default_api_key  # set: /v1/* needs `Authorization: Bearer <key>`
        self.n_ctx: int | None = None  # set: llama.cpp's `GET /props` reports this context size; None: 404
        self.arguments_chunk_size: int = 8  # characters of tool-call arguments per streamed delta
        # Reject what OpenAI rejects: tool messages answering no earlier tool call, unanswered tool calls,
        # tool-call arguments that are not JSON strings. False: accept any message list (like llama.cpp).
        self.strict_messages: bool = True

    @property
    def url(self) -> str:
        """Base URL including `/v1`, e.g. `http://127.0.0.1:43123/v1`."""
        return f"{self.root_url}/v1"

    # ---- ASGI ------------------------------------------------------------------------------------
    async def _route(self, send: Send, receive: Receive, rec: RequestRecord, gen: int) -> None:
        method, path = rec.method, rec.path
        body: dict[str, Any] = rec.body if isinstance(rec.body, dict) else {}
        if path.startswith("/v1/") and self.api_key is not None:
            if rec.headers.get("authorization") != f"Bearer {self.api_key}":
                error = openai_error("Incorrect API key provided", code="invalid_api_key")
                return await self._send_json(send, rec, 401, error)
        if not isinstance(rec.body, dict):
            return await self._send_json(
                send, rec, 400, openai_error("We could not parse the JSON body of your request.")
            )
        if path == "/v1/models" and method == "GET":
            await self._send_json(send, rec, 200, {"object": "list", "data": [self._model(m) for m in self.models]})
        elif path.startswith("/v1/models/") and method == "GET":
            model = path.removeprefix("/v1/models/")
            if model in self.models:
                await self._send_json(send, rec, 200, self._model(model))
            else:
                await self._send_json(send, rec, 404, self._model_missing(model))
        elif path == "/v1/chat/completions" and method == "POST":
            await self._guarded(send, receive, rec, gen, lambda s, abort: self._chat(s, rec, body, abort))
        elif path == "/v1/embeddings" and method == "POST":
            answer = lambda s, abort: self._embeddings(s, rec, body, abort)  # noqa: E731
            await self._guarded(send, receive, rec, gen, answer, count=False)
        elif path == "/props" and method == "GET" and self.n_ctx is not None:
            settings = {"n_ctx": self.n_ctx, "model": self.models[0] if self.models else ""}
            await self._send_json(send, rec, 200, {"default_generation_settings": settings, "total_slots": 1})
        else:
            await self._send_json(send, rec, 404, openai_error(f"Invalid URL ({method} {path})"))

    @staticmethod
    def _model(name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": _CREATED, "owned_by": "fake"}

    @staticmethod
    def _model_missing(model: str) -> dict[str, Any]:
        return openai_error(f"The model `{model}` does not exist", code="model_not_found")

    async def _check_model(self, send: Send, rec: RequestRecord, body: dict[str, Any]) -> bool:
        """Answer 400/404 and return False unless the body names a served model."""
        model = body.get("model")
        if not model:
            await self._send_json(send, rec, 400, openai_error("you must provide a model parameter", param="model"))
            return False
        if model not in self.models:
            await self._send_json(send, rec, 404, self._model_missing(str(model)))
            return False
        return True

    async def _send_error(self, send: Send, rec: RequestRecord, status: int, message: str) -> None:
        await self._send_json(send, rec, status, _status_error(status, message), _RETRY_AFTER if status == 429 else ())

    def _messages_error(self, messages: Any) -> str | None:
        """What OpenAI would reject in `messages`, or None."""
        if not isinstance(messages, list) or not messages:
            return (
                "Missing required parameter: 'messages'."
                if messages is None
                else "'messages' must be a non-empty array"
            )
        if not self.strict_messages:
            return None
        open_ids: list[str] = []  # tool calls of the last assistant message not answered yet
        unanswered = (
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            "'tool_call_id'. The following tool_call_ids did not have response messages: {}"
        )
        for i, m in enumerate(messages):
            role = m.get("role") if isinstance(m, dict) else None
            if role == "tool":
                call_id = m.get("tool_call_id")
                if call_id not in open_ids:
                    return (
                        f"Invalid parameter: messages[{i}] with role 'tool' must be a response to a preceding "
                        f"message with 'tool_calls' (no open tool call has id {call_id!r})."
                    )
                open_ids.remove(call_id)
                continue
            if open_ids:
                return unanswered.format(", ".join(open_ids))
            for j, call in enumerate((m.get("tool_calls") or []) if role == "assistant" else []):
                arguments = (call.get("function") or {}).get("arguments")
                if not isinstance(arguments, str):
                    return (
                        f"Invalid type for 'messages[{i}].tool_calls[{j}].function.arguments': expected a string, "
                        f"but got {type(arguments).__name__} instead."
                    )
                open_ids.append(str(call.get("id")))
        return unanswered.format(", ".join(open_ids)) if open_ids else None

    async def _chat(self, send: Send, rec: RequestRecord, body: dict[str, Any], abort: asyncio.Event) -> None:
        if not await self._check_model(send, rec, body):
            return
        model = str(body["model"])
        if (problem := self._messages_error(body.get("messages"))) is not None:
            return await self._send_json(send, rec, 400, openai_error(problem, param="messages"))
        try:
            reply = rec.reply = self._next_reply(body)
        except Exception as exc:
            return await self._send_error(send, rec, 500, f"fake openai: responder failed: {exc!r}")
        if await self._sleep(self.latency + (reply.delay if reply else 0.0), abort):
            return await self._send_error(send, rec, 503, "fake openai: aborted")
        rec.first_byte_at = time.monotonic()
        if reply is None:  # a test bug, not a server fault: tell the client not to retry
            return await self._send_json(send, rec, 500, openai_error(NO_SCRIPT_ERROR, "server_error"), _NO_RETRY)
        if reply.status >= 400:
            message = no_tools_message(model) if reply.error_for_model else reply.error_message
            return await self._send_error(send, rec, reply.status, message or "fake openai: scripted error")
        delay = self.token_delay if reply.token_delay is None else reply.token_delay

        calls = []
        for call in reply.calls:
            fn = call["function"]
            args = fn["arguments"]
            text = args if isinstance(args, str) else json.dumps(args, separators=(",", ":"), ensure_ascii=False)
            calls.append((f"call_{uuid.uuid4().hex[:24]}", str(fn["name"]), text))
        rec.tool_call_ids = [c[0] for c in calls]
        finish = "tool_calls" if calls else reply.done_reason
        prompt_tokens = max(1, len(json.dumps(body.get("messages"))) // 4)
        completion_tokens = len(reply.deltas) + sum(1 + len(split_tokens(a)) for _, _, a in calls)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        head = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "created": int(time.time()), "model": model}

        parts: list[dict[str, Any]] = [{"content": t} for t in reply.deltas]
        for i, (call_id, name, text) in enumerate(calls):
            first = {"index": i, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
            parts.append({"tool_calls": [first]})
            frags = _fragments(text, self.arguments_chunk_size)
            parts += [{"tool_calls": [{"index": i, "function": {"arguments": f}}]} for f in frags]

        if not body.get("stream"):
            if await self._sleep(delay * len(parts), abort):
                return await self._send_error(send, rec, 503, "fake openai: aborted")
            if reply.stream_error is not None:
                return await self._send_error(send, rec, 500, reply.stream_error)
            if reply.trailer is not None:  # garbage: 200 with a non-JSON body
                return await self._send(send, rec, 200, reply.trailer.encode(), JSON_TYPE)
            answer: dict[str, Any] = {
                "role": "assistant",
                "content": (reply.content or None) if calls else reply.content,
                "refusal": None,
            }
            if calls:
                answer["tool_calls"] = [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": text}}
                    for cid, name, text in calls
                ]
            logprobs = None  # like llama.cpp: `{"content": [...]}` only when asked for and the script has them
            if body.get("logprobs") and reply.logprobs is not None:
                logprobs = {"content": reply.logprobs, "refusal": None}
            choice = {"index": 0, "message": answer, "logprobs": logprobs, "finish_reason": finish}
            return await self._send_json(send, rec, 200, {
                **head, "object": "chat.completion", "system_fingerprint": SYSTEM_FINGERPRINT,
                "choices": [choice], "usage": usage,
            })  # fmt: skip

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            obj = {**head, "object": "chat.completion.chunk", "system_fingerprint": SYSTEM_FINGERPRINT}
            return _event({**obj, "choices": [choice], **({"usage": None} if include_usage else {})})

        rec.status = 200
        await send({"type": "http.response.start", "status": 200, "headers": _SSE})
        await send(
            {"type": "http.response.body", "body": chunk({"role": "assistant", "content": ""}), "more_body": True}
        )
        last = b""
        for i, part in enumerate(parts):
            if (i and await self._sleep(delay, abort)) or abort.is_set():
                break
            await send({"type": "http.response.body", "body": chunk(part), "more_body": True})
            rec.tokens_sent += 1
        else:
            if not (parts and await self._sleep(delay, abort)):
                if reply.stream_error is not None:  # llama.cpp: an error event, then the stream ends (no [DONE])
                    last = _event({"error": {"message": reply.stream_error, "type": "server_error", "code": 500}})
                elif reply.trailer is not None:
                    last = b"data: " + reply.trailer.encode() + b"\n\n"
                else:
                    last = chunk({}, finish)
                    if include_usage:
                        obj = {**head, "object": "chat.completion.chunk", "system_fingerprint": SYSTEM_FINGERPRINT}
                        last += _event({**obj, "choices": [], "usage": usage})
                    last += b"data: [DONE]\n\n"
        await send({"type": "http.response.body", "body": last, "more_body": False})

    async def _embeddings(self, send: Send, rec: RequestRecord, body: dict[str, Any], abort: asyncio.Event) -> None:
        if not await self._check_model(send, rec, body):
            return
        if body.get("input") is None:
            return await self._send_json(
                send, rec, 400, openai_error("Missing required parameter: 'input'.", param="input")
            )
        texts = rec.inputs
        if not texts:
            return await self._send_json(send, rec, 400, openai_error("'input' must not be empty", param="input"))
        fmt = body.get("encoding_format") or "float"
        if fmt not in ("float", "base64"):
            error = openai_error(f"Invalid value for 'encoding_format': {fmt!r}", param="encoding_format")
            return await self._send_json(send, rec, 400, error)
        reply = rec.reply = self._next_embed_reply()
        if reply is not None and await self._sleep(reply.delay, abort):
            return await self._send_error(send, rec, 503, "fake openai: aborted")
        rec.first_byte_at = time.monotonic()
        if reply is not None and reply.status >= 400:
            return await self._send_error(send, rec, reply.status, reply.error_message or "fake openai: scripted error")
        dim = int(body.get("dimensions") or self.embed_dim)
        data = []
        for i, text in enumerate(texts):
            vec = fake_embedding(text, dim)
            emb: list[float] | str = vec
            if fmt == "base64":
                emb = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        n = sum(max(1, len(split_tokens(t))) for t in texts)
        usage = {"prompt_tokens": n, "total_tokens": n}
        await self._send_json(send, rec, 200, {"object": "list", "data": data, "model": body["model"], "usage": usage})
