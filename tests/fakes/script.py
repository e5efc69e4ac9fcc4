"""What the fake LLM servers share: scripted `Reply` objects, request records, and the uvicorn-thread server.

`ScriptedServer` runs a raw ASGI app on 127.0.0.1 from a daemon thread and keeps the FIFO of replies, the request
records, the in-flight counters and the disconnect detection; `FakeOllama` (ollama_server.py) and `FakeOpenAI`
(openai_server.py) only add their wire formats. The same `Reply` objects drive both.
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
from dataclasses import dataclass, field, replace
from typing import Any, Self

import uvicorn

Message = dict[str, Any]
Send = Callable[[Message], Awaitable[None]]
Receive = Callable[[], Awaitable[Message]]
ToolSpec = tuple[str, Mapping[str, Any] | str | None]
Answer = Callable[[Send, asyncio.Event], Awaitable[None]]

DEFAULT_EMBED_DIM = 384
_TOKEN_RE = re.compile(r"\s*\S+|\s+$")
JSON_TYPE = (b"content-type", b"application/json; charset=utf-8")


def split_tokens(text: str) -> list[str]:
    """Split text into word-sized deltas (leading whitespace kept); they concatenate back to `text`."""
    return _TOKEN_RE.findall(text)


def fake_embedding(text: str, dim: int = DEFAULT_EMBED_DIM) -> list[float]:
    """Deterministic, L2-normalised pseudo-embedding seeded by a hash of `text`."""
    rng = random.Random(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))
    vec = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [x / norm for x in vec]


def closed_port_url() -> str:
    """URL of a local port where nothing listens (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@dataclass(frozen=True)
class Reply:
    """One scripted answer; build it with the classmethods."""

    deltas: tuple[str, ...] = ()  # content deltas, streamed in order
    # tool calls, after the content: {"function": {"name": str, "arguments": dict | str (raw text, OpenAI only)}}
    calls: tuple[dict[str, Any], ...] = ()
    token_delay: float | None = None  # None -> the server's token_delay
    done_reason: str = "stop"  # Ollama done_reason; OpenAI finish_reason ("tool_calls" when there are calls)
    status: int = 200  # >= 400 -> HTTP error in the protocol's error body instead of an answer
    error_message: str | None = None
    error_for_model: bool = False  # no-tools error text derived from the request's model
    delay: float = 0.0  # extra wait before the first byte (hang)
    trailer: str | None = None  # raw non-JSON line sent instead of the end of the stream (garbage)
    stream_error: str | None = None  # error event sent instead of the end of the stream (runner failure)
    # per-token log-probabilities in the wire's shape ([{"token", "logprob", "top_logprobs": [...]}]), sent only
    # when the request asks for `logprobs` (anything else, e.g. a string, is sent as it is: malformed)
    logprobs: Any = None

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
        arguments: Mapping[str, Any] | str | None = None,
        content_before: str = "",
        token_delay: float | None = None,
    ) -> Reply:
        """One tool call, or several if `name` is a list of (name, arguments); optional content first.

        `arguments` as a str is sent verbatim as the OpenAI arguments text (e.g. malformed JSON); Ollama
        clients expect a mapping.
        """
        specs = [(name, arguments)] if isinstance(name, str) else list(name)
        calls = tuple(
            {"function": {"name": n, "arguments": a if isinstance(a, str) else dict(a or {})}} for n, a in specs
        )
        return cls(deltas=tuple(split_tokens(content_before)), calls=calls, token_delay=token_delay)

    @classmethod
    def tool_calls(cls, calls: Iterable[ToolSpec], content_before: str = "") -> Reply:
        """Several tool calls in one answer: `Reply.tool_calls([("a", {...}), ("b", {...})])`."""
        return cls.tool_call(calls, content_before=content_before)

    @classmethod
    def error(cls, status: int = 500, message: str = "fake ollama: scripted error") -> Reply:
        """HTTP error `status` carrying `message` in the protocol's error body."""
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
        """Stream valid tokens, then the non-JSON `line` (or an error event if `error` is given)."""
        if error is not None:
            return cls(deltas=tuple(tokens), token_delay=token_delay, stream_error=error)
        return cls(deltas=tuple(tokens), token_delay=token_delay, trailer=line)

    @classmethod
    def error_mid_stream(
        cls,
        tokens: Iterable[str] = ("Hel", "lo"),
        message: str = "an error was encountered while running the model: unexpected EOF",
    ) -> Reply:
        """Stream valid tokens, then an error event as the server does when the runner fails."""
        return cls.garbage_mid_stream(tokens, error=message)

    @classmethod
    def hang(cls, seconds: float, then: Reply | None = None) -> Reply:
        """Wait `seconds` before the first byte, then answer with `then` (default: empty text)."""
        return replace(then or cls(), delay=seconds)

    @classmethod
    def label(cls, top: Mapping[str, float], token: str | None = None) -> Reply:
        """A one-token answer (`token`, default the likeliest of `top`) whose first-token alternatives are `top`
        (token -> log-probability), returned to requests that ask for logprobs; others get the text only."""
        first = token if token is not None else max(top, key=lambda t: top[t])
        alternatives = [{"token": t, "logprob": lp} for t, lp in sorted(top.items(), key=lambda p: -p[1])]
        entry = {"token": first, "logprob": top.get(first, -30.0), "top_logprobs": alternatives}
        return cls(deltas=(first,), logprobs=[entry])

    @classmethod
    def json(cls, obj: Any, token_delay: float | None = None) -> Reply:
        """Content for structured-output requests: a str verbatim (garbage, fences, <think>...), else json.dumps."""
        return cls.text(obj if isinstance(obj, str) else json.dumps(obj), token_delay)


def full_model_name(model: str) -> str:
    """`llama3.2` -> `llama3.2:latest` (Ollama's tag defaults to latest)."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


def no_tools_message(model: str) -> str:
    """The exact error text Ollama returns (HTTP 400) when a model has no tool support."""
    name = full_model_name(model)
    return f"registry.ollama.ai/{name if '/' in name else 'library/' + name} does not support tools"


def _parse_arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


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
    tokens_sent: int = 0  # streamed delta chunks (content deltas and tool-call chunks)
    reply: Reply | None = None
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    tool_call_ids: list[str] = field(default_factory=list)  # ids of the tool calls the fake answered with

    @property
    def model(self) -> str | None:
        """The `model` field of the body."""
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat `messages` of the body."""
        return list(self.body.get("messages") or []) if isinstance(self.body, dict) else []

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools the request offered."""
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return [str((t.get("function") or {}).get("name")) for t in tools or [] if isinstance(t, dict)]

    @property
    def tool_messages(self) -> list[dict[str, Any]]:
        """The `role: "tool"` messages (tool results; OpenAI ones carry `tool_call_id`)."""
        return [m for m in self.messages if m.get("role") == "tool"]

    @property
    def assistant_tool_calls(self) -> list[dict[str, Any]]:
        """Tool calls of earlier assistant messages, flattened: `{"id", "name", "arguments"}`.

        `arguments` is parsed when the wire carried a JSON string (OpenAI), kept as sent otherwise.
        """
        out = []
        for m in self.messages:
            if m.get("role") != "assistant":
                continue
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                out.append(
                    {"id": call.get("id"), "name": fn.get("name"), "arguments": _parse_arguments(fn.get("arguments"))}
                )
        return out

    @property
    def inputs(self) -> list[str]:
        """Embedding request inputs as a list of texts (`input` may be a str or a list)."""
        raw = self.body.get("input") if isinstance(self.body, dict) else None
        if raw is None:
            return []
        if isinstance(raw, str):
            return [raw]
        if raw and all(isinstance(t, int) for t in raw):  # one input given as token ids
            return [json.dumps(raw)]
        return [t if isinstance(t, str) else json.dumps(t) for t in raw]


class ScriptedServer:
    """HTTP server on a background thread with a FIFO of `Reply`s; `start()`/`stop()` or a context manager.

    Subclasses implement `_route` (and usually extend `_set_defaults`); chat-like answers go through
    `_guarded`, which counts them in flight and notices clients that go away.
    """

    label = "fake server"
    chat_paths: tuple[str, ...] = ()
    embed_paths: tuple[str, ...] = ()

    def __init__(self, host: str = "127.0.0.1", port: int = 0, embed_dim: int = DEFAULT_EMBED_DIM) -> None:
        self.host, self._port, self._default_dim = host, port, embed_dim
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._embed_queue: deque[Reply] = deque()
        self._records: list[RequestRecord] = []
        self._in_flight = self._max_concurrent = self._generation = 0
        self._aborts: dict[asyncio.Event, int] = {}  # abort event -> generation of its request
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._set_defaults()

    #: uvicorn's idle keep-alive (its default 5 s). Ollama's Go server keeps idle connections far longer; a bench
    #: whose clients pause about that long between calls sets more, or a reused connection the fake has just
    #: closed fails the next request (ReadError) where the real server would not.
    keep_alive_s: float = 5.0

    def _set_defaults(self) -> None:
        self.latency: float = 0.0  # seconds before the first byte of every chat answer
        self.token_delay: float = 0.0  # default pause between streamed chunks
        self.embed_dim: int = self._default_dim
        self.responder: Callable[[dict[str, Any]], Reply | str] | None = None

    # ---- lifecycle -------------------------------------------------------------------------------
    @property
    def root_url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        return f"http://{self.host}:{self._port}"

    @property
    def url(self) -> str:
        """Base URL for the protocol's client."""
        return self.root_url

    @property
    def available(self) -> bool:
        """Listening? Set False to refuse connections (same as stop()), True to listen again on the same port."""
        return self._server is not None

    @available.setter
    def available(self, value: bool) -> None:
        self.start() if value else self.stop()

    def start(self) -> Self:
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
            timeout_keep_alive=int(self.keep_alive_s),
        )  # fmt: skip
        server = self._server = uvicorn.Server(config)
        thread = self._thread = threading.Thread(target=self._serve, args=(server, sock), daemon=True)
        thread.start()
        deadline = time.monotonic() + 5
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.label} failed to start")
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
        """Clear scripts, records and counters, restore default knobs, abort leftovers, ensure listening."""
        self.abort_in_flight()
        with self._lock:
            self._queue.clear()
            self._embed_queue.clear()
            self._records.clear()
            self._in_flight = self._max_concurrent = 0
            self._generation += 1
        self._set_defaults()
        self.start()

    def abort_in_flight(self) -> None:
        """End every answer in flight now (hangs and streams); later requests are unaffected."""
        loop, gen = self._loop, self._generation
        with contextlib.suppress(RuntimeError):  # loop already closed
            if loop is not None:
                loop.call_soon_threadsafe(lambda: [e.set() for e, g in list(self._aborts.items()) if g <= gen])

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- scripting & inspection ------------------------------------------------------------------
    def enqueue(self, *replies: Reply | str) -> Self:
        """Queue replies (a str means `Reply.text(str)`) for the next chat calls, FIFO."""
        with self._lock:
            self._queue.extend(Reply.text(r) if isinstance(r, str) else r for r in replies)
        return self

    def enqueue_embed(self, *replies: Reply) -> Self:
        """Script the next embedding calls, FIFO: `Reply.error(...)` fails one, `Reply.hang(s)` delays one.

        Any other reply (e.g. `Reply()`) answers normally; with the queue empty every call succeeds.
        """
        with self._lock:
            self._embed_queue.extend(replies)
        return self

    @property
    def pending_replies(self) -> int:
        """Scripted chat replies not consumed yet."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RequestRecord]:
        """Snapshot of all request records, in arrival order."""
        with self._lock:
            return list(self._records)

    @property
    def chat_requests(self) -> list[RequestRecord]:
        """Records of chat calls."""
        return [r for r in self.requests if r.path in self.chat_paths]

    @property
    def embed_requests(self) -> list[RequestRecord]:
        """Records of embedding calls (`rec.inputs`, `rec.model`)."""
        return [r for r in self.requests if r.path in self.embed_paths]

    @property
    def in_flight(self) -> int:
        """Chat requests being answered right now."""
        with self._lock:
            return self._in_flight

    @property
    def max_concurrent(self) -> int:
        """Peak simultaneous chat requests since the last reset."""
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

    # ---- ASGI plumbing ---------------------------------------------------------------------------
    async def _app(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        raw = bytearray()
        while True:
            msg = await receive()
            raw += msg.get("body", b"")
            if msg["type"] == "http.disconnect" or not msg.get("more_body"):
                break
        headers: dict[str, str] = {}
        for k, v in scope.get("headers", []):
            name = k.decode("latin-1").lower()
            headers[name] = f"{headers[name]}, {v.decode('latin-1')}" if name in headers else v.decode("latin-1")
        rec = RequestRecord(scope["method"], scope["path"], started_at=time.monotonic(), headers=headers)
        with self._lock:
            self._records.append(rec)
            generation = self._generation
        try:
            rec.body = json.loads(raw) if raw.strip() else {}
        except ValueError:
            rec.body = raw.decode(errors="replace")
        try:
            await self._route(send, receive, rec, generation)
        finally:
            rec.finished_at = time.monotonic()

    async def _route(self, send: Send, receive: Receive, rec: RequestRecord, gen: int) -> None:
        raise NotImplementedError

    @staticmethod
    async def _send(
        send: Send, rec: RequestRecord, status: int, data: bytes, ctype: Any, extra: Iterable[Any] = ()
    ) -> None:
        rec.status = status
        headers = [ctype, (b"content-length", str(len(data)).encode()), *extra]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data, "more_body": False})

    async def _send_json(
        self, send: Send, rec: RequestRecord, status: int, obj: Any, extra: Iterable[Any] = ()
    ) -> None:
        await self._send(send, rec, status, json.dumps(obj).encode(), JSON_TYPE, extra)

    def _next_reply(self, body: dict[str, Any]) -> Reply | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if (responder := self.responder) is None:
            return None
        reply = responder(body)
        return Reply.text(reply) if isinstance(reply, str) else reply

    def _next_embed_reply(self) -> Reply | None:
        with self._lock:
            return self._embed_queue.popleft() if self._embed_queue else None

    @staticmethod
    async def _sleep(seconds: float, abort: asyncio.Event) -> bool:
        """Sleep unless aborted first; True if aborted."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return abort.is_set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(abort.wait(), seconds)
        return abort.is_set()

    async def _guarded(
        self, send: Send, receive: Receive, rec: RequestRecord, gen: int, answer: Answer, count: bool = True
    ) -> None:
        """Run `answer(send, abort)`; `abort` is set when the client goes away or on `abort_in_flight()`.

        `count`: include the request in `in_flight` / `max_concurrent`.
        """
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
        counted = False
        with self._lock:
            if count and gen == self._generation:
                counted = True
                self._in_flight += 1
                self._max_concurrent = max(self._max_concurrent, self._in_flight)
        try:
            await answer(watched_send, abort)
        finally:
            watcher.cancel()
            self._aborts.pop(abort, None)
            with self._lock:
                if counted and gen == self._generation:
                    self._in_flight -= 1
