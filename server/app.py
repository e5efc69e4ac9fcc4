"""The Litestar application factory: routes of every domain over one runtime (server/runtime.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from litestar import Litestar, Request, Response, get
from litestar.di import Provide
from litestar.exceptions import HTTPException, NotFoundException
from litestar.response import File

from server.chat.routes import chat_handlers
from server.chat.service import ChatService
from server.core.errors import RagchatError
from server.core.principal import Principal, local_principal
from server.documents.routes import DocumentController
from server.documents.service import DocumentService
from server.retrieval.routes import search_handlers
from server.retrieval.search import Searcher
from server.runtime import Overrides, Runtime, open_runtime
from server.settings import Settings
from server.system_routes import system_handlers

log = logging.getLogger(__name__)
REPO_ROOT = Path(__file__).resolve().parents[1]


def error_handler(_: Request[Any, Any, Any], exc: RagchatError) -> Response[dict[str, Any]]:
    return Response(
        {"status_code": exc.status_code, "code": exc.code, "detail": exc.message}, status_code=exc.status_code
    )


def provide_principal() -> Principal:
    """The caller. Until accounts exist, the local user."""
    return local_principal()


def _client_dist(settings: Settings) -> Path:
    return settings.client_dist or REPO_ROOT / "client" / "dist"


def create_app(settings: Settings, runtime: Runtime | None = None, *, overrides: Overrides | None = None) -> Litestar:
    """The app over `runtime` (used as it is, not closed), or over one its lifespan opens (with `overrides`)."""
    holder: dict[str, Runtime] = {}

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            rt = runtime or await stack.enter_async_context(open_runtime(settings, overrides))
            holder["runtime"] = rt
            if runtime is None:  # a real start: say what to fix before the first request needs it
                for problem in await rt.startup_problems():
                    log.warning("%s", problem)
            stop = asyncio.Event()
            workers = [
                asyncio.create_task(rt.documents.run_worker(stop), name="ingest-worker")
                for _ in range(settings.ingest_workers)
            ]
            try:
                yield
            finally:
                stop.set()
                for task in workers:
                    task.cancel()
                    with suppress(asyncio.CancelledError, Exception):
                        await task

    def current() -> Runtime:
        return holder["runtime"]

    dist = _client_dist(settings)

    @get(["/", "/{path:path}"], include_in_schema=False)
    async def client_app(path: str = "/") -> File:
        """The built web client; unknown paths get index.html so client-side routes work on reload."""
        if path.startswith("/api"):
            raise NotFoundException(f"no API route {path}")
        candidate = (dist / path.lstrip("/")).resolve()
        if candidate.is_file() and dist.resolve() in candidate.parents:
            return File(candidate, filename=candidate.name, content_disposition_type="inline")
        index = dist / "index.html"
        if not index.is_file():
            raise HTTPException(
                status_code=404, detail="the web client is not built: run `make client` (or `make run`)"
            )
        return File(index, filename="index.html", content_disposition_type="inline")

    return Litestar(
        route_handlers=[*system_handlers(), DocumentController, *search_handlers(), *chat_handlers(), client_app],
        dependencies={
            "runtime": Provide(current, sync_to_thread=False),
            "principal": Provide(provide_principal, sync_to_thread=False),
            "documents": Provide(lambda: current().documents, sync_to_thread=False),
            "searcher": Provide(lambda: current().searcher, sync_to_thread=False),
            "chat": Provide(lambda: current().chat, sync_to_thread=False),
        },
        signature_namespace={
            "Runtime": Runtime,
            "Principal": Principal,
            "DocumentService": DocumentService,
            "Searcher": Searcher,
            "ChatService": ChatService,
        },
        lifespan=[lifespan],
        exception_handlers={RagchatError: error_handler},
        request_max_body_size=int(settings.max_upload_bytes * 20) + 1_000_000,
        debug=False,
    )
