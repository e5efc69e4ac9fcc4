"""In-process fake of the Ollama HTTP API, for tests and benches.

`FakeOllama` serves Ollama's wire format (NDJSON streams, tool calls, `{"error": ...}` bodies) on 127.0.0.1
from a uvicorn thread, so the application talks to it through the official `ollama` client. Answers to
`/api/chat` and `/api/generate` are scripted with `Reply` objects: a FIFO queue, then `responder`.
The server plumbing and `Reply` live in script.py (shared with the OpenAI fake); every name is re-exported here.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from datetime import UTC, datetime
from typing import Any

from tests.fakes.script import (
    DEFAULT_EMBED_DIM,
    JSON_TYPE,
    Message,
    Receive,
    Reply,
    RequestRecord,
    ScriptedServer,
    Send,
    ToolSpec,
    closed_port_url,
    fake_embedding,
    full_model_name,
    no_tools_message,
    split_tokens,
)

__all__ = [
    "DEFAULT_EMBED_DIM",
    "DEFAULT_MODELS",
    "NO_SCRIPT_ERROR",
    "FakeOllama",
    "Message",
    "Receive",
    "Reply",
    "RequestRecord",
    "Send",
    "ToolSpec",
    "closed_port_url",
    "fake_embedding",
    "full_model_name",
    "no_tools_message",
    "split_tokens",
]

DEFAULT_MODELS: tuple[str, ...] = ("llama3.2:latest",)
NO_SCRIPT_ERROR = "fake ollama: no scripted reply"
_JSON = JSON_TYPE
_NDJSON = (b"content-type", b"application/x-ndjson")
_TEXT = (b"content-type", b"text/plain; charset=utf-8")
_MODIFIED = "2025-01-01T12:00:00.000000Z"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class FakeOllama(ScriptedServer):
    """Ollama-protocol HTTP server on a background thread; `start()`/`stop()` or a context manager."""

    label = "fake ollama"
    chat_paths = ("/api/chat",)
    embed_paths = ("/api/embed",)

    def __init__(self, host: str = "127.0.0.1", port: int = 0, embed_dim: int = DEFAULT_EMBED_DIM) -> None:
        self.version = "0.12.6"
        super().__init__(host, port, embed_dim)

    def _set_defaults(self) -> None:
        super()._set_defaults()
        self.models: list[str] = list(DEFAULT_MODELS)  # /api/tags and /api/show
        self.capabilities: dict[str, list[str]] = {}  # full model name -> /api/show capabilities
        # /api/embed models: None serves any name; a list answers others with 404 "... try pulling it first"
        self.embed_models: list[str] | None = None

    # ---- ASGI ------------------------------------------------------------------------------------
    async def _route(self, send: Send, receive: Receive, rec: RequestRecord, gen: int) -> None:
        method, path = rec.method, rec.path
        body: dict[str, Any] = rec.body if isinstance(rec.body, dict) else {}
        if not isinstance(rec.body, dict):
            await self._send_json(send, rec, 400, {"error": "invalid JSON request body"})
        elif path == "/" and method in ("GET", "HEAD"):
            await self._send(send, rec, 200, b"Ollama is running", _TEXT)
        elif path == "/api/version" and method == "GET":
            await self._send_json(send, rec, 200, {"version": self.version})
        elif path == "/api/tags" and method == "GET":
            await self._send_json(send, rec, 200, {"models": [self._model_entry(m) for m in self.models]})
        elif path == "/api/show" and method == "POST":
            await self._show(send, rec, str(body.get("model") or body.get("name") or ""))
        elif path == "/api/embed" and method == "POST":
            await self._guarded(send, receive, rec, gen, lambda s, abort: self._embed(s, rec, body, abort), count=False)
        elif path in ("/api/chat", "/api/generate") and method == "POST":
            chat = path == "/api/chat"
            await self._guarded(send, receive, rec, gen, lambda s, abort: self._answer(s, rec, body, abort, chat))
        else:
            await self._send(send, rec, 404, b"404 page not found", _TEXT)

    @staticmethod
    def _details(name: str) -> dict[str, Any]:
        family = re.split(r"[^a-z]", name.lower())[0] or "llama"
        return {"parent_model": "", "format": "gguf", "family": family, "families": [family],
                "parameter_size": "3.2B", "quantization_level": "Q4_K_M"}  # fmt: skip

    def _model_entry(self, name: str) -> dict[str, Any]:
        digest = hashlib.sha256(name.encode()).hexdigest()
        return {"name": name, "model": name, "modified_at": _MODIFIED, "size": 2019393189,
                "digest": digest, "details": self._details(name)}  # fmt: skip

    async def _show(self, send: Send, rec: RequestRecord, name: str) -> None:
        full = full_model_name(name) if name else ""
        if full not in {full_model_name(m) for m in self.models}:
            await self._send_json(send, rec, 404, {"error": f"model '{name}' not found"})
            return
        fam = self._details(full)["family"]
        info = {"general.architecture": fam, "general.parameter_count": 3212749888,
                f"{fam}.context_length": 131072, f"{fam}.embedding_length": 3072}  # fmt: skip
        await self._send_json(send, rec, 200, {
            "license": "", "modelfile": f"FROM {full}\n", "parameters": 'stop "<|eot_id|>"',
            "template": "{{ .Prompt }}", "details": self._details(full), "model_info": info,
            "capabilities": self.capabilities.get(full, ["completion", "tools"]), "modified_at": _MODIFIED,
        })  # fmt: skip

    async def _embed(self, send: Send, rec: RequestRecord, body: dict[str, Any], abort: asyncio.Event) -> None:
        model = str(body.get("model") or "")
        if not model:
            return await self._send_json(send, rec, 400, {"error": "model is required"})
        if self.embed_models is not None and full_model_name(model) not in map(full_model_name, self.embed_models):
            return await self._send_json(send, rec, 404, {"error": f'model "{model}" not found, try pulling it first'})
        reply = rec.reply = self._next_embed_reply()
        if reply is not None and await self._sleep(reply.delay, abort):
            return await self._send_json(send, rec, 503, {"error": "fake ollama: aborted"})
        rec.first_byte_at = time.monotonic()
        if reply is not None and reply.status >= 400:
            return await self._send_json(send, rec, reply.status, {"error": reply.error_message})
        dim = int(body.get("dimensions") or self.embed_dim)
        texts = rec.inputs
        await self._send_json(send, rec, 200, {
            "model": model, "embeddings": [fake_embedding(t, dim) for t in texts],
            "total_duration": 14143917, "load_duration": 1019500,
            "prompt_eval_count": sum(len(split_tokens(t)) for t in texts),
        })  # fmt: skip

    async def _answer(
        self, send: Send, rec: RequestRecord, body: dict[str, Any], abort: asyncio.Event, chat: bool
    ) -> None:
        model = body.get("model")
        if not model:
            return await self._send_json(send, rec, 400, {"error": "model is required"})
        try:
            reply = rec.reply = self._next_reply(body)
        except Exception as exc:
            return await self._send_json(send, rec, 500, {"error": f"fake ollama: responder failed: {exc!r}"})
        t0 = time.perf_counter_ns()
        if await self._sleep(self.latency + (reply.delay if reply else 0.0), abort):
            return await self._send_json(send, rec, 503, {"error": "fake ollama: aborted"})
        rec.first_byte_at = time.monotonic()
        if reply is None:
            return await self._send_json(send, rec, 500, {"error": NO_SCRIPT_ERROR})
        if reply.status >= 400:
            message = no_tools_message(model) if reply.error_for_model else reply.error_message
            return await self._send_json(send, rec, reply.status, {"error": message})
        delay = self.token_delay if reply.token_delay is None else reply.token_delay
        trailer = reply.trailer if reply.stream_error is None else json.dumps({"error": reply.stream_error})

        def chunk(content: str, **extra: Any) -> dict[str, Any]:
            if chat:
                msg = {"role": "assistant", "content": content, **extra}
                return {"model": model, "created_at": _now(), "message": msg, "done": False}
            return {"model": model, "created_at": _now(), "response": content, "done": False}

        def final(content: str = "", **extra: Any) -> dict[str, Any]:
            total, prompt = time.perf_counter_ns() - t0, json.dumps(body.get("messages" if chat else "prompt"))
            stats = {"done": True, "done_reason": reply.done_reason, "total_duration": total,
                     "load_duration": 1_000_000, "prompt_eval_count": max(1, len(prompt) // 4),
                     "prompt_eval_duration": total // 10, "eval_count": len(reply.deltas) + 1,
                     "eval_duration": total - total // 10}  # fmt: skip
            return {**chunk(content, **extra), **({} if chat else {"context": [1, 2, 3]}), **stats}

        if not body.get("stream", True):
            if await self._sleep(delay * len(reply.deltas), abort):
                return await self._send_json(send, rec, 503, {"error": "fake ollama: aborted"})
            if trailer is not None:  # `{"error": ...}` -> HTTP 500; garbage -> 200 with a non-JSON body
                status = 500 if trailer.lstrip().startswith("{") else 200
                return await self._send(send, rec, status, trailer.encode(), _JSON)
            extra = {"tool_calls": list(reply.calls)} if reply.calls and chat else {}
            answer = final(reply.content, **extra)
            if body.get("logprobs") and reply.logprobs is not None:  # Ollama >= 0.12.11; older ones send none
                answer["logprobs"] = reply.logprobs
            return await self._send_json(send, rec, 200, answer)

        rec.status = 200
        await send({"type": "http.response.start", "status": 200, "headers": [_NDJSON]})
        parts = [chunk(t) for t in reply.deltas] + (
            [chunk("", tool_calls=list(reply.calls))] if reply.calls and chat else []
        )
        last = b""
        for i, part in enumerate(parts):
            if (i and await self._sleep(delay, abort)) or abort.is_set():
                break
            part["created_at"] = _now()
            await send({"type": "http.response.body", "body": json.dumps(part).encode() + b"\n", "more_body": True})
            rec.tokens_sent += 1
        else:
            if not (parts and await self._sleep(delay, abort)):
                last = (trailer if trailer is not None else json.dumps(final())).encode() + b"\n"
        await send({"type": "http.response.body", "body": last, "more_body": False})
