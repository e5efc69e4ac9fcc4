"""In-process fake of the Ollama HTTP API, for tests and benches.

`FakeOllama` serves Ollama's wire format (NDJSON streams, tool calls, `{"error": ...}` bodies) on 127.0.0.1
from a uvicorn thread, so the application talks to it through the official `ollama` client. Answers to
`/api/chat` and `/api/generate` are scripted with `Reply` objects: a FIFO queue, then `responder`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import random
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import uvicorn

Message = dict[str, Any]
Send = Callable[[Message], Awaitable[None]]
Receive = Callable[[], Awaitable[Message]]
ToolSpec = tuple[str, Mapping[str, Any] | None]

DEFAULT_MODELS: tuple[str, ...] = ("llama3.2:latest",)
DEFAULT_EMBED_DIM = 384
NO_SCRIPT_ERROR = "fake ollama: no scripted reply"
_TOKEN_RE = re.compile(r"\s*\S+|\s+$")
_JSON = (b"content-type", b"application/json; charset=utf-8")
_NDJSON = (b"content-type", b"application/x-ndjson")
_TEXT = (b"content-type", b"text/plain; charset=utf-8")
_MODIFIED = "2025-01-01T12:00:00.000000Z"


def split_tokens(text: str) -> list[str]:
    """Split text into word-sized deltas (leading whitespace kept); they concatenate back to `text`."""
    return _TOKEN_RE.findall(text)


def fake_embedding(text: str, dim: int = DEFAULT_EMBED_DIM) -> list[float]:
    """Deterministic, L2-normalised pseudo-embedding seeded by a hash of `text`."""
    rng = random.Random(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))
    vec = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [x / norm for x in vec]


def full_model_name(model: str) -> str:
    """`llama3.2` -> `llama3.2:latest` (the tag defaults to latest)."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


def no_tools_message(model: str) -> str:
    """The exact error text Ollama returns (HTTP 400) when a model has no tool support."""
    name = full_model_name(model)
    return f"registry.ollama.ai/{name if '/' in name else 'library/' + name} does not support tools"


def closed_port_url() -> str:
    """URL of a local port where nothing listens (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Reply:
    """One scripted answer; build it with the classmethods."""

    deltas: tuple[str, ...] = ()  # content deltas, streamed in order
    calls: tuple[dict[str, Any], ...] = ()  # tool calls, one chunk after the content deltas
    token_delay: float | None = None  # None -> FakeOllama.token_delay
    done_reason: str = "stop"
    status: int = 200  # >= 400 -> HTTP error `{"error": error_message}` instead of a stream
    error_message: str | None = None
    error_for_model: bool = False  # no-tools error text derived from the request's model
    delay: float = 0.0  # extra wait before the first byte (hang)
    trailer: str | None = None  # raw line sent instead of the final done chunk

    @property
    def content(self) -> str:
        """Full assistant content."""
        return "".join(self.deltas)

    @classmethod
    def text(cls, text: str, token_delay: float | None = None, done_reason: str = "stop") -> Reply:
        """Stream `text` split into word-sized deltas."""
        return cls.tokens(split_tokens(text), token_delay, done_reason)

    @classmethod
    def tokens(cls, tokens: Iterable[str], token_delay: float | None = None, done_reason: str = "stop") -> Reply:
        """Stream exactly these deltas."""
        return cls(deltas=tuple(tokens), token_delay=token_delay, done_reason=done_reason)

    @classmethod
    def tool_call(
        cls,
        name: str | Iterable[ToolSpec],
        arguments: Mapping[str, Any] | None = None,
        content_before: str = "",
        token_delay: float | None = None,
    ) -> Reply:
        """One tool call, or several if `name` is a list of (name, arguments); optional content first."""
        specs = [(name, arguments)] if isinstance(name, str) else list(name)
        calls = tuple({"function": {"name": n, "arguments": dict(a or {})}} for n, a in specs)
        return cls(deltas=tuple(split_tokens(content_before)), calls=calls, token_delay=token_delay)

    @classmethod
    def tool_calls(cls, calls: Iterable[ToolSpec], content_before: str = "") -> Reply:
        """Several tool calls in one chunk: `Reply.tool_calls([("a", {...}), ("b", {...})])`."""
        return cls.tool_call(calls, content_before=content_before)

    @classmethod
    def error(cls, status: int = 500, message: str = "fake ollama: scripted error") -> Reply:
        """HTTP error with body `{"error": message}`; the client raises `ResponseError` with that status."""
        return cls(status=status, error_message=message)

    @classmethod
    def no_tools(cls, model: str | None = None) -> Reply:
        """400 "registry.ollama.ai/library/<model>:latest does not support tools" (default: request model)."""
        msg = None if model is None else no_tools_message(model)
        return cls(status=400, error_for_model=model is None, error_message=msg)

    @classmethod
    def garbage_mid_stream(
        cls,
        tokens: Iterable[str] = ("Hel", "lo"),
        line: str = "<html>502 Bad Gateway</html>",
        error: str | None = None,
        token_delay: float | None = None,
    ) -> Reply:
        """Stream valid tokens, then the non-JSON `line` (or `{"error": error}` if `error` is given)."""
        trailer = json.dumps({"error": error}) if error is not None else line
        return cls(deltas=tuple(tokens), token_delay=token_delay, trailer=trailer)

    @classmethod
    def error_mid_stream(
        cls,
        tokens: Iterable[str] = ("Hel", "lo"),
        message: str = "an error was encountered while running the model: unexpected EOF",
    ) -> Reply:
        """Stream valid tokens, then `{"error": message}` as Ollama does when the runner fails."""
        return cls.garbage_mid_stream(tokens, error=message)

    @classmethod
    def hang(cls, seconds: float, then: Reply | None = None) -> Reply:
        """Wait `seconds` before the first byte, then answer with `then` (default: empty text)."""
        return replace(then or cls(), delay=seconds)

    @classmethod
    def json(cls, obj: Any, token_delay: float | None = None) -> Reply:
        """Content for `format=` requests: a string verbatim (garbage, fences, <think>...), else json.dumps."""
        return cls.text(obj if isinstance(obj, str) else json.dumps(obj), token_delay)


@dataclass
class RequestRecord:
    """What the fake saw for one HTTP request; times are `time.monotonic()` seconds."""

    method: str
    path: str
    body: Any = None  # parsed JSON body ({} when empty)
    started_at: float = 0.0
    first_byte_at: float | None = None  # chat/generate: when the latency/hang wait ended
    finished_at: float | None = None
    status: int | None = None
    disconnected: bool = False  # the client went away before the response finished
    tokens_sent: int = 0  # streamed delta chunks (content deltas and the tool-call chunk)
    reply: Reply | None = None

    @property
    def model(self) -> str | None:
        """The `model` field of the body."""
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat `messages` of the body."""
        return list(self.body.get("messages") or []) if isinstance(self.body, dict) else []


class FakeOllama:
    """Ollama-protocol HTTP server on a background thread; `start()`/`stop()` or a context manager."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, embed_dim: int = DEFAULT_EMBED_DIM) -> None:
        self.host, self._port, self._default_dim = host, port, embed_dim
        self.version = "0.12.6"
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._records: list[RequestRecord] = []
        self._in_flight = self._max_concurrent = self._generation = 0
        self._aborts: dict[asyncio.Event, int] = {}  # abort event -> generation of its request
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._set_defaults()

    def _set_defaults(self) -> None:
        self.latency: float = 0.0  # seconds before the first byte of every chat/generate answer
        self.token_delay: float = 0.0  # default pause between streamed chunks
        self.models: list[str] = list(DEFAULT_MODELS)  # /api/tags and /api/show
        self.capabilities: dict[str, list[str]] = {}  # full model name -> /api/show capabilities
        self.embed_dim: int = self._default_dim
        self.responder: Callable[[dict[str, Any]], Reply | str] | None = None

    # ---- lifecycle -------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """Base URL, e.g. `http://127.0.0.1:43123`."""
        return f"http://{self.host}:{self._port}"

    @property
    def available(self) -> bool:
        """Listening? Set False to refuse connections (same as stop()), True to listen again on the same port."""
        return self._server is not None

    @available.setter
    def available(self, value: bool) -> None:
        self.start() if value else self.stop()

    def start(self) -> FakeOllama:
        """Bind (a free port the first time, then the same one) and serve from a daemon thread."""
        if self._server is not None:
            return self
        # IPPROTO_TCP explicitly: asyncio only turns on TCP_NODELAY for sockets created with it.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self._port))
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app, interface="asgi3", lifespan="off", log_level="error", access_log=False,
            loop="asyncio", http="h11", backlog=4096, timeout_graceful_shutdown=1,
        )  # fmt: skip
        server = self._server = uvicorn.Server(config)
        thread = self._thread = threading.Thread(target=self._serve, args=(server, sock), daemon=True)
        thread.start()
        deadline = time.monotonic() + 5
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("fake ollama failed to start")
            time.sleep(0.002)
        return self

    def _serve(self, server: uvicorn.Server, sock: socket.socket) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            await server.serve(sockets=[sock])

        asyncio.run(main())

    def stop(self) -> None:
        """Abort in-flight answers and stop listening (the port then refuses connections)."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self.abort_in_flight()
        server.should_exit = True
        thread.join(3)
        server.force_exit = True
        thread.join(3)
        self._server = self._thread = self._loop = None

    def reset(self) -> None:
        """Clear script, records and counters, restore default knobs, abort leftovers, ensure listening."""
        self.abort_in_flight()
        with self._lock:
            self._queue.clear()
            self._records.clear()
            self._in_flight = self._max_concurrent = 0
            self._generation += 1
        self._set_defaults()
        self.start()

    def abort_in_flight(self) -> None:
        """End every chat/generate answer in flight now (hangs and streams); later requests are unaffected."""
        loop, gen = self._loop, self._generation
        with contextlib.suppress(RuntimeError):  # loop already closed
            if loop is not None:
                loop.call_soon_threadsafe(lambda: [e.set() for e, g in list(self._aborts.items()) if g <= gen])

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- scripting & inspection ------------------------------------------------------------------
    def enqueue(self, *replies: Reply | str) -> FakeOllama:
        """Queue replies (a str means `Reply.text(str)`) for the next chat/generate calls, FIFO."""
        with self._lock:
            self._queue.extend(Reply.text(r) if isinstance(r, str) else r for r in replies)
        return self

    @property
    def pending_replies(self) -> int:
        """Scripted replies not consumed yet."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RequestRecord]:
        """Snapshot of all request records, in arrival order."""
        with self._lock:
            return list(self._records)

    @property
    def chat_requests(self) -> list[RequestRecord]:
        """Records of `/api/chat` calls."""
        return [r for r in self.requests if r.path == "/api/chat"]

    @property
    def in_flight(self) -> int:
        """Chat/generate requests being answered right now."""
        with self._lock:
            return self._in_flight

    @property
    def max_concurrent(self) -> int:
        """Peak simultaneous chat/generate requests since the last reset."""
        with self._lock:
            return self._max_concurrent

    def _first_disconnect(self) -> RequestRecord | None:
        return next((r for r in self.requests if r.disconnected and r.finished_at is not None), None)

    def wait_for_disconnect(self, timeout: float = 1.0) -> RequestRecord | None:
        """Block until a request was abandoned by its client and its handler stopped; return its record."""
        deadline = time.monotonic() + timeout
        while (rec := self._first_disconnect()) is None and time.monotonic() < deadline:
            time.sleep(0.005)
        return rec

    async def await_until(self, predicate: Callable[[], bool], timeout: float = 1.0) -> bool:  # noqa: ASYNC109
        """Poll `predicate` without blocking the caller's event loop; False on timeout."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.005)
        return True

    async def await_disconnect(self, timeout: float = 1.0) -> RequestRecord | None:  # noqa: ASYNC109
        """Async `wait_for_disconnect`."""
        await self.await_until(lambda: self._first_disconnect() is not None, timeout)
        return self._first_disconnect()

    # ---- ASGI ------------------------------------------------------------------------------------
    async def _app(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method, path, raw = scope["method"], scope["path"], bytearray()
        while True:
            msg = await receive()
            raw += msg.get("body", b"")
            if msg["type"] == "http.disconnect" or not msg.get("more_body"):
                break
        rec = RequestRecord(method, path, started_at=time.monotonic())
        with self._lock:
            self._records.append(rec)
            generation = self._generation
        try:
            rec.body = json.loads(raw) if raw.strip() else {}
        except ValueError:
            rec.body = raw.decode(errors="replace")
        body: dict[str, Any] = rec.body if isinstance(rec.body, dict) else {}
        try:
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
                await self._embed(send, rec, body)
            elif path in ("/api/chat", "/api/generate") and method == "POST":
                await self._generate(send, receive, rec, body, generation, chat=path == "/api/chat")
            else:
                await self._send(send, rec, 404, b"404 page not found", _TEXT)
        finally:
            rec.finished_at = time.monotonic()

    @staticmethod
    async def _send(send: Send, rec: RequestRecord, status: int, data: bytes, ctype: Any) -> None:
        rec.status = status
        headers = [ctype, (b"content-length", str(len(data)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data, "more_body": False})

    async def _send_json(self, send: Send, rec: RequestRecord, status: int, obj: Any) -> None:
        await self._send(send, rec, status, json.dumps(obj).encode(), _JSON)

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

    async def _embed(self, send: Send, rec: RequestRecord, body: dict[str, Any]) -> None:
        dim = int(body.get("dimensions") or self.embed_dim)
        raw = body.get("input", [])
        texts = [raw] if isinstance(raw, str) else [str(t) for t in raw]
        await self._send_json(send, rec, 200, {
            "model": body.get("model"), "embeddings": [fake_embedding(t, dim) for t in texts],
            "total_duration": 14143917, "load_duration": 1019500,
            "prompt_eval_count": sum(len(split_tokens(t)) for t in texts),
        })  # fmt: skip

    def _next_reply(self, body: dict[str, Any]) -> Reply | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if (responder := self.responder) is None:
            return None
        reply = responder(body)
        return Reply.text(reply) if isinstance(reply, str) else reply

    @staticmethod
    async def _sleep(seconds: float, abort: asyncio.Event) -> bool:
        """Sleep unless aborted first; True if aborted."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return abort.is_set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(abort.wait(), seconds)
        return abort.is_set()

    async def _generate(
        self, send: Send, receive: Receive, rec: RequestRecord, body: dict[str, Any], gen: int, chat: bool
    ) -> None:
        abort, finishing = asyncio.Event(), False

        async def watched_send(msg: Message) -> None:
            nonlocal finishing
            finishing = finishing or (msg["type"] == "http.response.body" and not msg.get("more_body"))
            await send(msg)

        async def watch() -> None:  # a disconnect before our last body chunk means the client went away
            while (await receive())["type"] != "http.disconnect":
                pass
            if not finishing:
                rec.disconnected = True
                abort.set()

        watcher = asyncio.create_task(watch())
        self._aborts[abort] = gen
        with self._lock:
            if gen == self._generation:
                self._in_flight += 1
                self._max_concurrent = max(self._max_concurrent, self._in_flight)
        try:
            await self._answer(watched_send, rec, body, abort, chat)
        finally:
            watcher.cancel()
            self._aborts.pop(abort, None)
            with self._lock:
                if gen == self._generation:
                    self._in_flight -= 1

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
            if reply.trailer is not None:  # `{"error": ...}` -> HTTP 500; garbage -> 200 with a non-JSON body
                status = 500 if reply.trailer.lstrip().startswith("{") else 200
                return await self._send(send, rec, status, reply.trailer.encode(), _JSON)
            extra = {"tool_calls": list(reply.calls)} if reply.calls and chat else {}
            return await self._send_json(send, rec, 200, final(reply.content, **extra))

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
                last = (reply.trailer if reply.trailer is not None else json.dumps(final())).encode() + b"\n"
        await send({"type": "http.response.body", "body": last, "more_body": False})
