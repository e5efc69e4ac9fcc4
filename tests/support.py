"""Building blocks for tests that assemble part of the runtime by hand (most use the `runtime` fixture)."""

from __future__ import annotations

from typing import Any

from server.core.principal import LOCAL_OWNER_ID, Principal, local_principal
from server.documents.pipeline import IngestionPipeline
from server.providers.embeddings import build_embedder
from server.retrieval.search import Reranker, Searcher
from server.settings import Settings
from server.vectors.registry import SpaceRegistry

LOCAL = local_principal()

__all__ = ["LOCAL", "LOCAL_OWNER_ID", "Principal", "make_pipeline", "make_searcher", "make_spaces"]


def make_spaces(pool: Any, embedder: Any, settings: Settings) -> SpaceRegistry:
    return SpaceRegistry(
        pool, embedder, lambda provider, model: build_embedder(settings, provider, model), refresh_s=0.0
    )


def make_searcher(pool: Any, embedder: Any, settings: Settings, reranker: Reranker | None = None) -> Searcher:
    return Searcher(pool, make_spaces(pool, embedder, settings), settings, reranker)


def make_pipeline(pool: Any, embedder: Any, settings: Settings, **kwargs: Any) -> IngestionPipeline:
    return IngestionPipeline(pool, make_spaces(pool, embedder, settings), settings, **kwargs)


async def ingest_texts(pool: Any, embedder: Any, settings: Settings, docs: dict[str, str]) -> None:
    """Register `{filename: text}` for the local owner and ingest them all."""
    from server.documents.registration import register_bytes

    for name, text in docs.items():
        await register_bytes(pool, LOCAL_OWNER_ID, name, text.encode(), settings)
    await make_pipeline(pool, embedder, settings).run()
