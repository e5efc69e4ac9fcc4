"""What the database can do, read from it rather than assumed: its PostgreSQL and pgvector versions.

pgvector ≥ 0.8 (the embedded engine's 0.8.6, and a managed service's when it has it) gives a `halfvec` HNSW
index (half the size at the same recall) and iterative index scans (a filtered search is no longer cut short
by the filter); older pgvector (0.5–0.7 on many managed services) keeps full-size `vector` indexes and the
exact re-check of short filtered answers.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import tuple_row

log = logging.getLogger(__name__)

#: The pgvector version from which `halfvec` indexes and `hnsw.iterative_scan` are used.
MODERN_PGVECTOR = (0, 8)


def version_tuple(version: str | None) -> tuple[int, ...]:
    """'0.8.6' → (0, 8, 6); unreadable parts stop the tuple ('0.7.0-dev' → (0, 7))."""
    parts: list[int] = []
    for piece in (version or "").split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits or digits != piece:
            if digits and piece.startswith(digits):
                parts.append(int(digits))
            break
        parts.append(int(digits))
    return tuple(parts)


def modern_pgvector(version: str | None) -> bool:
    return version_tuple(version)[:2] >= MODERN_PGVECTOR


@dataclass(frozen=True)
class Capabilities:
    engine: str  # "embedded" or "external"
    server_version: str
    pgvector: str | None
    halfvec_index: bool
    iterative_scan: bool

    def describe(self) -> str:
        features = (
            "halfvec HNSW indexes, iterative filtered scans"
            if self.iterative_scan
            else "vector HNSW indexes, exact re-check of short filtered answers (pgvector < 0.8)"
        )
        return f"{self.engine} PostgreSQL {self.server_version}, pgvector {self.pgvector or 'missing'}: {features}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


async def detect(conn: AsyncConnection[Any], *, embedded: bool) -> Capabilities:
    """Read the versions (at start; the vector extension is created by then)."""
    async with conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute(
            "SELECT current_setting('server_version'), (SELECT extversion FROM pg_extension WHERE extname = 'vector')"
        )
        row = await cur.fetchone()
    assert row is not None
    pgvector = None if row[1] is None else str(row[1])
    modern = modern_pgvector(pgvector)
    return Capabilities(
        engine="embedded" if embedded else "external",
        server_version=str(row[0]).split(" ")[0],
        pgvector=pgvector,
        halfvec_index=modern,
        iterative_scan=modern,
    )


async def pgvector_version(conn: AsyncConnection[Any]) -> str | None:
    """The installed pgvector's version, on the caller's connection (in its transaction)."""
    async with conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = await cur.fetchone()
    return None if row is None else str(row[0])
