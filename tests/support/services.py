"""Building blocks for tests that assemble part of the runtime by hand (most use the `runtime` fixture)."""

from __future__ import annotations

from typing import Any

from ragchat.core.principal import LOCAL_OWNER_ID, Principal, local_principal
from ragchat.documents.ingest.pipeline import IngestionPipeline
from ragchat.providers.embeddings import build_embedder
from ragchat.retrieval.search import Reranker, Searcher
from ragchat.settings import Settings
from ragchat.vectors.registry import SpaceRegistry

LOCAL = local_principal()

__all__ = ["LOCAL", "LOCAL_OWNER_ID", "Principal", "make_pipeline", "make_searcher", "make_spaces"]


def make_spaces(pool: Any, embedder: Any, settings: Settings) -> SpaceRegistry:
    return SpaceRegistry(
        pool,
        embedder,
        lambda provider, model: build_embedder(settings.embeddings, settings.llm, provider, model),
        refresh_s=0.0,
    )


def make_searcher(pool: Any, embedder: Any, settings: Settings, reranker: Reranker | None = None) -> Searcher:
    return Searcher(pool, make_spaces(pool, embedder, settings), settings.retrieval, reranker)


def make_pipeline(pool: Any, embedder: Any, settings: Settings, **kwargs: Any) -> IngestionPipeline:
    models = {"embed_batch_size": settings.embeddings.embed_batch_size, "chat_model": settings.llm.chat_model}
    return IngestionPipeline(pool, make_spaces(pool, embedder, settings), settings.ingestion, **(models | kwargs))


async def ingest_texts(pool: Any, embedder: Any, settings: Settings, docs: dict[str, str]) -> None:
    """Register `{filename: text}` for the local owner and ingest them all."""
    from ragchat.documents.ingest.registration import register_bytes

    for name, text in docs.items():
        await register_bytes(pool, LOCAL_OWNER_ID, name, text.encode(), settings.ingestion)
    await make_pipeline(pool, embedder, settings).run()


async def register_many(
    pool: Any,
    files: dict[str, bytes],
    *,
    owner: Any = LOCAL_OWNER_ID,
    status: str = "queued",
    error: str | None = None,
) -> list[Any]:
    """Register `{filename: bytes}` for `owner` in one transaction, without ingesting them (hundreds a second:
    for the documents page's listing); `status` (and `error`) set as given, e.g. "ready" or "failed"."""
    import hashlib

    from ragchat.documents.catalog import repository as repo
    from ragchat.documents.parsing.parsers import content_type_for

    ids = []
    async with pool.connection() as conn, conn.transaction():
        for name, data in files.items():
            doc = repo.NewDocument(
                name, name.rsplit(".", 1)[0], content_type_for(name), hashlib.sha256(data).hexdigest(), data, {}
            )
            ids.append((await repo.insert_document(conn, owner, doc))[0])
        # one transaction shares one now(): a millisecond apart, in the order given (the last is the newest)
        await conn.execute(
            """UPDATE documents d SET status = %s, error = %s,
                   created_at = now() - make_interval(secs => (%s - p.n) / 1000.0)
               FROM unnest(%s::uuid[]) WITH ORDINALITY AS p(id, n) WHERE d.id = p.id""",
            (status, error, len(ids), ids),
        )
    return ids
