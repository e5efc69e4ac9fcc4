"""The vector arm: pgvector cosine distance in the active embedding space, HNSW where it can answer, an exact
scan where filters are selective.

Vectors live in `chunk_embeddings`, one partial HNSW index per space over `embedding::vector(dim)`; the
query uses that same expression so the index serves `ORDER BY … LIMIT n`. pgvector 0.6 has no iterative
index scans: an HNSW scan returns its `ef_search` nearest rows and the WHERE clause then drops the ones
filtered out, so a selective filter can return fewer than `n` rows. We count the rows a filter leaves;
small sets are scanned exactly, and a short HNSW answer is retried exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from psycopg import sql

from ragchat.core.search import SearchFilters
from ragchat.db.pool import Conn
from ragchat.readscope.sql import ReadScope
from ragchat.retrieval.filters import filter_sql
from ragchat.vectors.store import Space


async def _filtered_rows(conn: Conn, space: Space, where: str, params: dict[str, Any], cap: int) -> int:
    query = sql.SQL(
        "SELECT count(*) AS n FROM (SELECT 1 FROM chunk_embeddings e WHERE e.space_id = {} AND {} LIMIT %(cap)s) s"
    ).format(sql.Literal(space.id), sql.SQL(where))  # type: ignore[arg-type]  # `where` is our own fragment
    row = await (await conn.execute(query, {**params, "cap": cap + 1})).fetchone()
    assert row is not None
    return int(row["n"])


async def vector_search(
    conn: Conn,
    space: Space,
    query_vector: np.ndarray,
    *,
    scope: ReadScope,
    n: int,
    filters: SearchFilters | None = None,
    ef_search: int = 100,
    exact_max_rows: int = 20000,
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity clipped to 0..1), best first, at most `n`."""
    where, params = filter_sql(scope, filters, alias="e")
    params = {**params, "q": query_vector, "n": n}
    population = None
    if filters is not None and filters.active:
        population = await _filtered_rows(conn, space, where, params, exact_max_rows)
    exact = population is not None and population <= exact_max_rows
    rows = await _run(conn, space, where, params, exact=exact, ef_search=max(ef_search, n))
    if not exact and len(rows) < n:
        # HNSW + post-filter came back short: either the reader/filter really has fewer rows, or the index
        # candidates were filtered away. The exact scan answers both correctly.
        rows = await _run(conn, space, where, params, exact=True, ef_search=0)
    return [(int(r["id"]), min(1.0, max(0.0, 1.0 - float(r["distance"])))) for r in rows]


async def _run(
    conn: Conn, space: Space, where: str, params: dict[str, Any], *, exact: bool, ef_search: int
) -> list[dict[str, Any]]:
    distance = sql.SQL("{} <=> %(q)s").format(space.vector_expr("e"))
    # `+ 0` makes the ORDER BY expression something the HNSW index cannot serve: an exact, filtered scan.
    order = sql.SQL("({}) + 0").format(distance) if exact else distance
    query = sql.SQL(
        "SELECT e.chunk_id AS id, {} AS distance FROM chunk_embeddings e "
        "WHERE e.space_id = {} AND {} ORDER BY {} LIMIT %(n)s"
    ).format(distance, sql.Literal(space.id), sql.SQL(where), order)  # type: ignore[arg-type]
    async with conn.transaction():
        if not exact:
            await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(ef_search, 1000)),))
        return await (await conn.execute(query, params)).fetchall()
