"""`ragchat serve` answers `/livez` from its first second (issue 44).

The app's start (importing it: ~10 s on a busy 2-core machine; the database, migrations, the embedding model:
seconds to minutes) is slow, and uvicorn binds its port only after the app's lifespan has started. `EarlyStart`
stands in for the app: it tells uvicorn "started" at once (so the port is bound), builds the app (`load`, in a
thread: the imports), runs the app's own lifespan behind it, and until that is done answers `GET /livez` itself
(200) and every other request 503 `starting` with a Retry-After. Once the app has started, everything goes to
the app (its /livez, /readyz and /metrics too); if building or starting it fails, `on_failed` runs (the server
exits) and the failure is logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from litestar.types import ASGIApp, Receive, Scope, Send

from ragchat.httpapi.http import error_body, scope_request_id

log = logging.getLogger("ragchat.startup")

RETRY_AFTER_S = 2


class EarlyStart:
    def __init__(
        self, load: Callable[[], ASGIApp], *, on_ready: Callable[[], None], on_failed: Callable[[], None]
    ) -> None:
        self.load = load
        self.app: ASGIApp | None = None  # built by `load` as the lifespan starts
        self.on_ready = on_ready
        self.on_failed = on_failed
        self.started = False  # the app's lifespan has started
        self.failed = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
        elif self.started and self.app is not None:
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            if scope["path"] == "/livez" and scope["method"] in ("GET", "HEAD"):
                await _answer(send, 200, {"status": "ok"})
            else:
                detail = "ragchat is starting (database, migrations, the embedding model): try again shortly"
                await _answer(send, 503, error_body(503, "starting", detail, scope_request_id(scope)))
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1013})  # try again later

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        first = await receive()
        if first["type"] != "lifespan.startup":
            return
        reply: Any = send  # the lifespan messages, which Litestar's Message type does not list
        await reply({"type": "lifespan.startup.complete"})  # uvicorn binds the port now
        shutdown = asyncio.ensure_future(receive())
        building = asyncio.ensure_future(asyncio.to_thread(self.load))
        await asyncio.wait({building, shutdown}, return_when=asyncio.FIRST_COMPLETED)
        if not building.done() or building.exception() is not None:
            if building.done():  # it could not be built: say why, and exit
                self.failed = True
                log.error("ragchat could not start: %s", _failure(building))
                self.on_failed()
            await shutdown
            await reply({"type": "lifespan.shutdown.complete"})
            return
        app = self.app = building.result()
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        inbox.put_nowait({"type": "lifespan.startup"})
        loop = asyncio.get_running_loop()
        started: asyncio.Future[dict[str, Any]] = loop.create_future()
        stopped: asyncio.Future[dict[str, Any]] = loop.create_future()

        async def inner_send(message: Any) -> None:
            kind = message["type"]
            target = started if kind.startswith("lifespan.startup") else stopped
            if not target.done():
                target.set_result(message)

        async def inner_receive() -> Any:
            return await inbox.get()

        inner = asyncio.ensure_future(app(scope, inner_receive, inner_send))
        await asyncio.wait({started, inner, shutdown}, return_when=asyncio.FIRST_COMPLETED)
        if started.done() and started.result()["type"] == "lifespan.startup.complete":
            self.started = True
            self.on_ready()
        elif not shutdown.done():  # the app's start failed
            self.failed = True
            message = started.result().get("message", "") if started.done() else _failure(inner)
            log.error("ragchat could not start: %s", message or "the application's start-up failed")
            self.on_failed()
        await shutdown  # uvicorn stops: stop the app too
        if self.started and not inner.done():
            inbox.put_nowait({"type": "lifespan.shutdown"})
            await asyncio.wait({stopped, inner}, return_when=asyncio.FIRST_COMPLETED)
        elif not inner.done():  # stopped while still starting: its start unwinds (the database is stopped)
            inner.cancel()
        with suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(inner, timeout=30)
        await reply({"type": "lifespan.shutdown.complete"})


def _failure(task: asyncio.Future[Any]) -> str:
    if task.cancelled():
        return "cancelled"
    error = task.exception()
    return f"{type(error).__name__}: {error}" if error is not None else ""


async def _answer(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"),
    ]
    if status == 503:
        headers.append((b"retry-after", str(RETRY_AFTER_S).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data, "more_body": False})
