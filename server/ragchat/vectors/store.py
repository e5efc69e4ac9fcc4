"""SQL for embedding spaces and their vectors. Every function takes a connection; callers own transactions.

A space's id and dimension are integers from our own table; they are composed into SQL as literals (never
user input) because a partial index is only used when the planner sees `space_id = <literal>`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np
import psycopg
from psycopg import sql
from psycopg.rows import class_row

from ragchat.db.capabilities import modern_pgvector, pgvector_version
from ragchat.db.pool import Conn

MAX_DIM = 2000  # a `vector` HNSW index takes at most 2,000 dimensions (a `halfvec` one 4,000)
INDEX_TYPES = ("vector", "halfvec")
TITLE_CHARS = 200  # of the document title that goes into each chunk's vector


def embedding_text(title: str, content: str) -> str:
    """What a chunk's vector is made of: the (capped) document title, then the chunk text."""
    title = title.strip()[:TITLE_CHARS]
    return f"{title}\n{content}" if title else content


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Space:
    id: int
    provider: str
    model: str
    dim: int
    state: str
    created_at: datetime
    activated_at: datetime | None = None
    retired_at: datetime | None = None
    index_type: str = "vector"  # of its HNSW index: "halfvec" on pgvector >= 0.8 (vectors/indexes.py)

    @property
    def identity(self) -> tuple[str, str]:
        return (self.provider, self.model)

    @property
    def label(self) -> str:
        return f"{self.model} ({self.provider}, {self.dim} dims)"

    def vector_expr(self, alias: str = "e") -> sql.Composed:
        """`e.embedding::vector(dim)`: the stored vector at full precision (exact distances)."""
        return sql.SQL("{}.embedding::vector({})").format(sql.Identifier(alias), sql.Literal(self.dim))

    def index_expr(self, alias: str = "e") -> sql.Composed:
        """The expression this space's HNSW index is built on: `ORDER BY <this> <=> query_expr()` uses it."""
        return sql.SQL("{}.embedding::{}({})").format(sql.Identifier(alias), self._type(), sql.Literal(self.dim))

    def query_expr(self, param: str = "q") -> sql.Composed:
        """The query vector parameter cast to the index's type."""
        return sql.SQL("{}::{}({})").format(sql.Placeholder(param), self._type(), sql.Literal(self.dim))

    @property
    def index_relname(self) -> str:
        """The name of this space's HNSW index, as pg_class has it."""
        suffix = "_half" if self.index_type == "halfvec" else ""
        return f"chunk_embeddings_hnsw_{self.id}{suffix}"

    def index_name(self) -> sql.Identifier:
        return sql.Identifier(self.index_relname)

    def index_ddl(self) -> sql.Composed:
        """CREATE INDEX for this space's partial HNSW index (cosine)."""
        return sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON chunk_embeddings USING hnsw (({}) {}) "
            "WITH (m = 16, ef_construction = 64) WHERE space_id = {}"
        ).format(
            self.index_name(),
            sql.SQL("embedding::{}({})").format(self._type(), sql.Literal(self.dim)),
            sql.SQL("halfvec_cosine_ops") if self.index_type == "halfvec" else sql.SQL("vector_cosine_ops"),
            sql.Literal(self.id),
        )

    def _type(self) -> sql.SQL:
        if self.index_type == "halfvec":
            return sql.SQL("halfvec")
        if self.index_type == "vector":
            return sql.SQL("vector")
        raise ValueError(f"unknown index type {self.index_type!r}")


@dataclass(frozen=True)
class VectorRow:
    chunk_id: int
    document_id: UUID
    owner_id: UUID
    content_hash: str
    embedding: np.ndarray


@dataclass(frozen=True)
class PendingChunk:
    """A chunk that still needs a vector in a space being built."""

    id: int
    document_id: UUID
    owner_id: UUID
    content_hash: str
    title: str
    content: str


_SPACE_COLUMNS = "id, provider, model, dim, state, created_at, activated_at, retired_at, index_type"


async def list_spaces(conn: Conn) -> list[Space]:
    async with conn.cursor(row_factory=class_row(Space)) as cur:
        await cur.execute(f"SELECT {_SPACE_COLUMNS} FROM embedding_spaces ORDER BY id")
        return await cur.fetchall()


def manifest_spaces(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """The embedding spaces as a backup's manifest names them (server/ragchat/db/backup.py); none in a database
    the migrations have not made yet."""
    made = conn.execute("SELECT to_regclass('embedding_spaces') IS NOT NULL").fetchone()
    if not (made and made[0]):
        return []
    cur = conn.execute("SELECT provider, model, dim, state FROM embedding_spaces ORDER BY id")
    return [{"provider": r[0], "model": r[1], "dim": r[2], "state": r[3]} for r in cur]


async def space_in_state(conn: Conn, state: str) -> Space | None:
    async with conn.cursor(row_factory=class_row(Space)) as cur:
        await cur.execute(f"SELECT {_SPACE_COLUMNS} FROM embedding_spaces WHERE state = %s", (state,))
        return await cur.fetchone()


async def default_index_type(conn: Conn) -> str:
    """ "halfvec" when the installed pgvector has it with iterative scans (>= 0.8), else "vector"."""
    return "halfvec" if modern_pgvector(await pgvector_version(conn)) else "vector"


async def create_space(
    conn: Conn, provider: str, model: str, dim: int, state: str, index_type: str | None = None
) -> Space:
    """A new space and its (empty) partial HNSW index, in the caller's transaction.

    `index_type` None: the installed pgvector decides (`default_index_type`)."""
    index_type = index_type or await default_index_type(conn)
    if index_type not in INDEX_TYPES:
        raise ValueError(f"unknown index type {index_type!r}")
    if not 1 <= dim <= MAX_DIM:
        raise ValueError(f"{model} makes {dim}-dimension vectors; pgvector indexes at most {MAX_DIM}")
    async with conn.cursor(row_factory=class_row(Space)) as cur:
        await cur.execute(
            f"""INSERT INTO embedding_spaces (provider, model, dim, state, activated_at, index_type)
                VALUES (%s, %s, %s, %s, CASE WHEN %s = 'active' THEN now() END, %s) RETURNING {_SPACE_COLUMNS}""",
            (provider, model, dim, state, state, index_type),
        )
        space = await cur.fetchone()
    assert space is not None
    await conn.execute(space.index_ddl())
    return space


async def insert_vectors(conn: Conn, space: Space, rows: Sequence[VectorRow]) -> None:
    """Store vectors for chunks (existing ones for the same chunk are kept)."""
    if not rows:
        return
    async with conn.cursor().copy(
        "COPY chunk_embeddings (space_id, chunk_id, document_id, owner_id, content_hash, embedding) FROM STDIN"
    ) as copy:
        for r in rows:
            if r.embedding.shape[0] != space.dim:
                raise ValueError(f"a {r.embedding.shape[0]}-dimension vector cannot go into {space.label}")
            await copy.write_row((space.id, r.chunk_id, r.document_id, r.owner_id, r.content_hash, r.embedding))


async def cached_vectors(conn: Conn, space: Space, owner: UUID, hashes: Sequence[str]) -> dict[str, np.ndarray]:
    """Vectors this space already holds for these content hashes (reused on re-ingestion)."""
    if not hashes:
        return {}
    rows = await (
        await conn.execute(
            """SELECT DISTINCT ON (content_hash) content_hash, embedding FROM chunk_embeddings
               WHERE space_id = %s AND owner_id = %s AND content_hash = ANY(%s)""",
            (space.id, owner, list(hashes)),
        )
    ).fetchall()
    return {r["content_hash"]: as_array(r["embedding"]) for r in rows}


def as_array(value: Any) -> np.ndarray:
    """pgvector returns `Vector` objects (or arrays, depending on version): always hand back float32 numpy."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


async def pending_chunks(conn: Conn, space: Space, limit: int) -> list[PendingChunk]:
    """Chunks of ready documents without a vector in `space`, oldest first."""
    async with conn.cursor(row_factory=class_row(PendingChunk)) as cur:
        await cur.execute(
            """SELECT c.id, c.document_id, c.owner_id, c.content_hash, c.title, c.content
               FROM document_chunks c
               WHERE NOT EXISTS (SELECT 1 FROM chunk_embeddings e WHERE e.space_id = %s AND e.chunk_id = c.id)
               ORDER BY c.id LIMIT %s""",
            (space.id, limit),
        )
        return await cur.fetchall()


async def counts(conn: Conn, space: Space) -> tuple[int, int]:
    """(vectors in the space, chunks in total)."""
    row = await (
        await conn.execute(
            """SELECT (SELECT count(*) FROM chunk_embeddings WHERE space_id = %s) AS done,
                      (SELECT count(*) FROM document_chunks) AS total""",
            (space.id,),
        )
    ).fetchone()
    assert row is not None
    return int(row["done"]), int(row["total"])


async def activate(conn: Conn, building: Space, active: Space | None) -> None:
    """Flip `building` to active and `active` to retired, in the caller's transaction."""
    if active is not None:
        await conn.execute(
            "UPDATE embedding_spaces SET state = 'retired', retired_at = now() WHERE id = %s", (active.id,)
        )
    await conn.execute(
        "UPDATE embedding_spaces SET state = 'active', activated_at = now() WHERE id = %s", (building.id,)
    )


async def drop_space(conn: Conn, space: Space) -> None:
    """Delete a retired or abandoned space: its vectors, its index and its row."""
    await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(space.index_name()))
    await conn.execute("DELETE FROM chunk_embeddings WHERE space_id = %s", (space.id,))
    await conn.execute("DELETE FROM embedding_spaces WHERE id = %s", (space.id,))


async def still_active(conn: Conn, space: Space) -> bool:
    """Whether `space` is still the active one, holding it so (FOR SHARE) until the caller's transaction ends."""
    row = await (
        await conn.execute("SELECT state FROM embedding_spaces WHERE id = %s FOR SHARE", (space.id,))
    ).fetchone()
    return row is not None and row["state"] == "active"
