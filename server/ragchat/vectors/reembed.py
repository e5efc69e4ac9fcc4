"""Switch embedding models without downtime: build the new space beside the active one, flip, drop the old.

1. `start(provider, model)` creates a `building` space (its own partial HNSW index) for the new model.
2. `run()` embeds every chunk that has no vector there yet, in batches, committing each batch; search keeps
   answering from the active space throughout. Only one process builds at a time (an advisory lock held by a
   transaction open for the build, which Postgres releases if the process dies; safe behind PgBouncer). After
    `kill -9`, running it again resumes where it stopped.
3. When nothing is missing, one transaction (holding off new chunks for that moment) flips the states: the
   new space is active, the old one retired. Every process picks the switch up within `SPACES_REFRESH_S`.
4. After `REEMBED_GRACE_S` (searches that started on the old space finish), the old vectors and index go.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragchat.core.errors import BadRequest, ServiceUnavailable
from ragchat.db.pool import Pool
from ragchat.vectors import store
from ragchat.vectors.registry import SpaceRegistry
from ragchat.vectors.store import Space, VectorRow, embedding_text

log = logging.getLogger(__name__)
_LOCK_CLASS = 7261  # advisory lock (class, space id) held by the process building a space


@dataclass
class ReembedProgress:
    state: str  # "idle" | "building"
    target: str | None = None
    done: int = 0
    total: int = 0

    def to_json(self) -> dict[str, Any]:
        percent = round(100.0 * self.done / self.total, 1) if self.total else (100.0 if self.state == "idle" else 0.0)
        return {"state": self.state, "target": self.target, "done": self.done, "total": self.total, "percent": percent}


class Reembedder:
    def __init__(self, pool: Pool, registry: SpaceRegistry, *, batch_size: int = 256, grace_s: float = 5.0) -> None:
        self.pool = pool
        self.registry = registry
        self.batch_size = batch_size
        self.grace_s = grace_s

    async def start(self, provider: str, model: str) -> Space:
        """The building space for (provider, model): created, or the one already under way for it."""
        async with self.pool.connection() as conn:
            active, building = await store.space_in_state(conn, "active"), await store.space_in_state(conn, "building")
        if self._check(active, building, provider, model) and building is not None:
            return building
        embedder = await self.registry.embedder_for(provider, model, requested=True)
        dim = await embedder.dimension()  # asks a remote model: outside any transaction
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute("LOCK TABLE embedding_spaces IN SHARE ROW EXCLUSIVE MODE")
            active = await store.space_in_state(conn, "active")
            building = await store.space_in_state(conn, "building")
            if building is not None and self._check(active, building, provider, model):
                return building
            space = await store.create_space(conn, provider, model, dim, "building" if active else "active")
        self.registry.invalidate()
        log.info("re-embedding into space %s: %s", space.id, space.label)
        return space

    @staticmethod
    def _check(active: Space | None, building: Space | None, provider: str, model: str) -> bool:
        """True when `building` is already the switch asked for; raises when the request cannot be served."""
        if building is not None:
            if building.identity == (provider, model):
                return True
            raise BadRequest(
                f"a switch to {building.label} is under way; let it finish (`ragchat reembed`) or cancel it "
                "(`ragchat reembed --cancel`) first"
            )
        if active is not None and active.identity == (provider, model):
            raise BadRequest(f"the stored vectors already use {active.label}: nothing to do")
        return False

    async def progress(self) -> ReembedProgress:
        async with self.pool.connection() as conn:
            building = await store.space_in_state(conn, "building")
            if building is None:
                return ReembedProgress("idle")
            done, total = await store.counts(conn, building)
        return ReembedProgress("building", building.label, done, total)

    async def cancel(self) -> bool:
        """Abandon a build: its vectors and index go; the active space is untouched."""
        async with self.pool.connection() as conn:
            building = await store.space_in_state(conn, "building")
            if building is None:
                return False
            async with conn.transaction():
                await store.drop_space(conn, building)
        return True

    async def run(self, on_progress: Callable[[ReembedProgress], None] | None = None) -> Space | None:
        """Fill the building space, switch, drop the old one. Returns the new active space (None: no build)."""
        report = on_progress or (lambda _p: None)
        await self.drop_retired()
        async with self.pool.connection() as lock_conn:
            async with self.pool.connection() as conn:
                space = await store.space_in_state(conn, "building")
            if space is None:
                return None
            # the lock is held by a transaction left open for the whole build (never a session's: a pooler in
            # transaction mode would hand the session to other clients); it ends with the build, or the process
            async with lock_conn.transaction():
                got = await (
                    await lock_conn.execute("SELECT pg_try_advisory_xact_lock(%s, %s) AS ok", (_LOCK_CLASS, space.id))
                ).fetchone()
                if not got or not got["ok"]:
                    raise ServiceUnavailable(f"another process is already re-embedding into {space.label}")
                embedder = await self.registry.embedder_for(space.provider, space.model)
                while True:
                    if await self._fill(space, embedder, report) == 0 and await self._switch(space):
                        break
        report(ReembedProgress("idle", space.label))
        self.registry.invalidate()
        await asyncio.sleep(self.grace_s)
        await self.drop_retired()
        log.info("re-embedding done: search uses %s", space.label)
        return space

    async def _fill(self, space: Space, embedder: Any, report: Callable[[ReembedProgress], None]) -> int:
        """Embed missing chunks until none is left; returns how many were embedded."""
        embedded = 0
        while True:
            async with self.pool.connection() as conn:
                pending = await store.pending_chunks(conn, space, self.batch_size)
            if not pending:
                return embedded
            vectors = await embedder.embed_documents([embedding_text(p.title, p.content) for p in pending])
            rows = [
                VectorRow(p.id, p.document_id, p.owner_id, p.content_hash, np.asarray(v, dtype=np.float32))
                for p, v in zip(pending, vectors, strict=True)
            ]
            async with self.pool.connection() as conn, conn.transaction():
                # a chunk deleted meanwhile would break the foreign key: keep only the ones still there
                alive = await (
                    await conn.execute(
                        "SELECT id FROM document_chunks WHERE id = ANY(%s) FOR SHARE", ([r.chunk_id for r in rows],)
                    )
                ).fetchall()
                keep = {r["id"] for r in alive}
                await store.insert_vectors(conn, space, [r for r in rows if r.chunk_id in keep])
                done, total = await store.counts(conn, space)
            embedded += len(rows)
            report(ReembedProgress("building", space.label, done, total))

    async def _switch(self, space: Space) -> bool:
        """Flip states if no chunk lacks a vector (new chunks wait for this transaction); False: fill again."""
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute("LOCK TABLE document_chunks IN SHARE MODE")
            if await store.pending_chunks(conn, space, 1):
                return False
            active = await store.space_in_state(conn, "active")
            await store.activate(conn, space, active)
        return True

    async def drop_retired(self) -> None:
        async with self.pool.connection() as conn:
            for space in await store.list_spaces(conn):
                if space.state == "retired":
                    async with conn.transaction():
                        await store.drop_space(conn, space)
