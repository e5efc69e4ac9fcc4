"""The Litestar application factory. External clients (pool, LLM, embedder) are handed in or built here."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from litestar import Litestar, Request, Response, get
from litestar.di import Provide
from litestar.exceptions import HTTPException, NotFoundException
from litestar.response import File
from psycopg_pool import AsyncConnectionPool

from server.chat.clients import chat_client, rerank_client
from server.db.pool import make_pool, prepare_database
from server.documents.ingest import run_worker
from server.documents.routes import DocumentController
from server.errors import RagchatError
from server.retrieval.embedder import Embedder, SentenceTransformerEmbedder
from server.retrieval.rerank_factory import make_reranker
from server.retrieval.search import Searcher
from server.services import Services
from server.settings import Settings

log = logging.getLogger(__name__)
REPO_ROOT = Path(__file__).resolve().parents[1]


def build_embedder(settings: Settings) -> Embedder:
    return SentenceTransformerEmbedder(
        settings.embed_model, batch_size=settings.embed_batch_size, query_precision=settings.query_embed_precision
    )


def error_handler(_: Request, exc: RagchatError) -> Response[dict[str, Any]]:
    return Response(
        {"status_code": exc.status_code, "code": exc.code, "detail": exc.message}, status_code=exc.status_code
    )


@get("/api/health")
async def health(services: Services) -> dict[str, Any]:
    """Database, embedder and Ollama status; `status` is "ok" when the database answers."""
    database = "ok"
    try:
        async with services.pool.connection(timeout=2) as conn:
            await conn.execute("SELECT 1")
    except Exception as exc:
        database = f"error: {exc}"
    from server.chat.llm import ollama_status  # local import: chat is optional for this endpoint

    return {
        "status": "ok" if database == "ok" else "degraded",
        "database": database,
        "embedder": f"{services.embedder.model_name} ({services.embedder.dim} dims)",
        "ollama": await ollama_status(services.llm, services.settings),
    }


def _client_dist(settings: Settings) -> Path:
    return settings.client_dist or REPO_ROOT / "client" / "dist"


def create_app(
    settings: Settings,
    *,
    pool: AsyncConnectionPool | None = None,
    llm: Any = None,
    rerank_llm: Any = None,
    embedder: Embedder | None = None,
    extra_handlers: list[Any] | None = None,
) -> Litestar:
    """Build the app. Clients passed in are used as they are (and not closed); missing ones are built.

    The reranker gets `rerank_llm`; when it is missing, `llm` if that was passed, else its own sharded client.
    """
    holder: dict[str, Services] = {}

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        database = None
        own_pool = pool is None
        active_pool = pool
        if active_pool is None:
            database = await asyncio.to_thread(prepare_database, settings)
            active_pool = make_pool(database.uri, min_size=settings.db_pool_min, max_size=settings.db_pool_max)
            await active_pool.open(wait=True)
        active_embedder = embedder or await asyncio.to_thread(build_embedder, settings)
        owned: list[Any] = []  # clients built here, closed at shutdown
        active_llm = llm
        if active_llm is None:
            active_llm = chat_client(settings)
            owned.append(active_llm)
        active_rerank_llm = rerank_llm if rerank_llm is not None else llm
        if active_rerank_llm is None:
            active_rerank_llm = rerank_client(settings)
            owned.append(active_rerank_llm)
        services = Services(settings, active_pool, active_embedder, active_llm)
        services.searcher = Searcher(active_pool, active_embedder, settings, make_reranker(active_rerank_llm, settings))
        holder["services"] = services
        stop = asyncio.Event()
        wake = asyncio.Event()
        services.extras["wake_worker"] = wake.set
        workers = [
            asyncio.create_task(run_worker(active_pool, active_embedder, settings, stop, wake))
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
            for client in owned:
                with suppress(Exception):
                    await client.close()
            if own_pool:
                await active_pool.close()
            if database is not None:
                await asyncio.to_thread(database.close)

    def provide_services() -> Services:
        return holder["services"]

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

    from server.chat.routes import chat_handlers
    from server.retrieval.routes import search_handlers

    handlers: list[Any] = [
        health,
        DocumentController,
        *search_handlers(),
        *chat_handlers(),
        *(extra_handlers or []),
        client_app,
    ]
    return Litestar(
        route_handlers=handlers,
        dependencies={"services": Provide(provide_services, sync_to_thread=False)},
        lifespan=[lifespan],
        exception_handlers={RagchatError: error_handler},
        request_max_body_size=int(settings.max_upload_bytes * 20) + 1_000_000,
        debug=False,
    )
