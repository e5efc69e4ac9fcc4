"""Which embedding space answers searches and takes new vectors, and the embedder for it.

The active space is the truth: a process configured with another model (EMBED_PROVIDER / EMBED_MODEL) keeps
searching and ingesting with the model the stored vectors were made with, so vector spaces never mix, and
`status()` says what to run (`ragchat reembed`). With nothing stored yet, the configured model becomes the
active space on first ingest. Each process re-reads the active space every `SPACES_REFRESH_S`, so a switch
made by another process (the CLI, another server) is picked up without a restart.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragchat.core.errors import BadRequest, ServiceUnavailable
from ragchat.db.pool import Pool
from ragchat.providers.embeddings.base import EmbeddingProvider
from ragchat.vectors import store
from ragchat.vectors.store import Space

log = logging.getLogger(__name__)

EmbedderFactory = Callable[[str, str], EmbeddingProvider]


@dataclass(frozen=True)
class ActiveSpace:
    space: Space
    embedder: EmbeddingProvider


class SpaceRegistry:
    def __init__(
        self,
        pool: Pool,
        configured: EmbeddingProvider,
        factory: EmbedderFactory,
        *,
        refresh_s: float = 2.0,
        known: Sequence[EmbeddingProvider] = (),
    ) -> None:
        """`known`: embedders built elsewhere (not closed here) that a stored space may name."""
        self.pool = pool
        self.configured = configured
        self.factory = factory
        self.refresh_s = refresh_s
        self._embedders: dict[tuple[str, str], EmbeddingProvider] = {self.identity(e): e for e in known}
        self._embedders[self.identity(configured)] = configured
        self._building: dict[tuple[str, str], asyncio.Future[EmbeddingProvider]] = {}
        self._owned: list[EmbeddingProvider] = []
        self._active: Space | None = None
        self._read_at = float("-inf")
        self._lock = asyncio.Lock()

    @staticmethod
    def identity(embedder: EmbeddingProvider) -> tuple[str, str]:
        return (embedder.provider, embedder.model_name)

    # ---- the active space -------------------------------------------------------------------------------
    async def active_space(self, *, fresh: bool = False) -> Space | None:
        """The active space, read again every `refresh_s`; while there is none it is read every time, so the
        first document another process (`ragchat worker`) embeds is searched by meaning at once."""
        stale = time.monotonic() - self._read_at > self.refresh_s
        if fresh or stale or self._active is None:
            async with self.pool.connection() as conn:
                self._active = await store.space_in_state(conn, "active")
            self._read_at = time.monotonic()
        return self._active

    def invalidate(self) -> None:
        self._read_at = float("-inf")

    async def active(self) -> ActiveSpace | None:
        """The active space and its embedder, or None when nothing is stored yet."""
        space = await self.active_space()
        if space is None:
            return None
        return ActiveSpace(space, await self.embedder_for(space.provider, space.model))

    async def for_ingest(self) -> ActiveSpace:
        """Where new vectors go: the active space, created for the configured model when there is none."""
        current = await self.active()
        if current is not None:
            return current
        async with self._lock:
            dim = await self.configured.dimension()
            async with self.pool.connection() as conn, conn.transaction():
                await conn.execute("LOCK TABLE embedding_spaces IN SHARE ROW EXCLUSIVE MODE")
                space = await store.space_in_state(conn, "active")
                if space is None:
                    provider, model = self.identity(self.configured)
                    space = await store.create_space(conn, provider, model, dim, "active")
                    log.info("embedding space %s created for %s", space.id, space.label)
            self.invalidate()
        return ActiveSpace(space, await self.embedder_for(space.provider, space.model))

    async def embedder_for(self, provider: str, model: str, *, requested: bool = False) -> EmbeddingProvider:
        """The embedder for (provider, model), built once. `requested`: a caller asked for this model (a re-embed),
        so a model that cannot be built is their mistake (400), not a broken server (503)."""
        key = (provider, model)
        embedder = self._embedders.get(key)
        if embedder is not None:
            return embedder
        building = self._building.get(key)
        if building is None:  # the first caller builds it; callers meanwhile wait for that build (a model once)
            building = self._building[key] = asyncio.ensure_future(asyncio.to_thread(self.factory, provider, model))
            building.add_done_callback(lambda done: self._built(key, done))
        try:
            return await asyncio.shield(building)
        except Exception as exc:
            if requested:
                raise BadRequest(f"{model} ({provider}) cannot be used here: {exc}") from exc
            raise ServiceUnavailable(
                f"The stored vectors were made by {model} ({provider}), which cannot be loaded here ({exc}). "
                f"Configure that provider, or run `ragchat reembed` to switch to "
                f"{self.configured.model_name}."
            ) from exc

    def _built(self, key: tuple[str, str], done: asyncio.Future[EmbeddingProvider]) -> None:
        self._building.pop(key, None)
        if not done.cancelled() and done.exception() is None:  # a failed build is tried again next time
            self._embedders[key] = done.result()
            self._owned.append(done.result())

    async def warm(self) -> None:
        """Build the active space's embedder now (a server start), so the first search does not wait for a
        model load; what goes wrong is said by `status()` and by the search that needs it."""
        try:
            await self.active()
        except Exception as exc:
            log.warning("the stored vectors' embedding model could not be loaded: %s", exc)

    # ---- reporting --------------------------------------------------------------------------------------
    async def status(self) -> dict[str, Any]:
        """Health's view: the model of the stored vectors, the configured one, a build under way, the fix."""
        async with self.pool.connection() as conn:
            spaces = await store.list_spaces(conn)
        active = next((s for s in spaces if s.state == "active"), None)
        building = next((s for s in spaces if s.state == "building"), None)
        provider, model = self.identity(self.configured)
        out: dict[str, Any] = {
            "configured": {"provider": provider, "model": model},
            "stored": None
            if active is None
            else {"provider": active.provider, "model": active.model, "dim": active.dim},
            "building": None
            if building is None
            else {"provider": building.provider, "model": building.model, "dim": building.dim},
            "status": "ok",
            "message": None,
        }
        if active is not None and active.identity != (provider, model):
            target = f"{model} ({provider})"
            if building is not None and building.identity == (provider, model):
                out["status"] = "reembedding"
                out["message"] = f"Re-embedding with {target}; search uses {active.label} until it finishes."
            else:
                out["status"] = "mismatch"
                out["message"] = (
                    f"The stored vectors were made by {active.label}, but EMBED_MODEL is {target}. Search keeps "
                    f"using {active.model}; run `ragchat reembed` to switch to {model} without downtime."
                )
        return out

    async def close(self) -> None:
        for building in list(self._building.values()):
            building.cancel()
        for embedder in self._owned:
            try:
                await embedder.close()
            except Exception:
                log.debug("closing embedder failed", exc_info=True)
