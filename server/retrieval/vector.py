"""The vector arm: pgvector cosine distance, HNSW where it can answer, exact scan where filters are selective.

pgvector 0.6 has no iterative index scans: an HNSW scan returns its `ef_search` nearest rows and the WHERE
clause then drops the ones filtered out, so a selective filter can return fewer than `n` rows. We count the
rows a filter leaves; small sets are scanned exactly, and a short HNSW answer is retried exactly.
"""

from __future__ import annotations

from uuid import UUID

import numpy as np
from psycopg import AsyncConnection

from server.retrieval.filters import filter_sql
from server.retrieval.models import SearchFilters


async def _filtered_rows(conn: AsyncConnection, where: str, params: dict, cap: int) -> int:
    row = await (
        await conn.execute(
            f"SELECT count(*) AS n FROM (SELECT 1 FROM document_chunks c WHERE {where} LIMIT %(cap)s) s",
            {**params, "cap": cap + 1},
        )
    ).fetchone()
    return int(row["n"])


async def vector_search(
    conn: AsyncConnection,
    query_vector: np.ndarray,
    *,
    owner: UUID,
    n: int,
    filters: SearchFilters | None = None,
    ef_search: int = 100,
    exact_max_rows: int = 20000,
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity clipped to 0..1), best first, at most `n`."""
    where, params = filter_sql(owner, filters)
    params = {**params, "q": query_vector, "n": n}
    population = None
    if filters is not None and filters.active:
        population = await _filtered_rows(conn, where, params, exact_max_rows)
    exact = population is not None and population <= exact_max_rows
    rows = await _run(conn, where, params, exact=exact, ef_search=max(ef_search, n))
    if not exact and len(rows) < n:
        # HNSW + post-filter came back short: either the owner/filter really has fewer rows, or the index
        # candidates were filtered away. The exact scan answers both correctly.
        rows = await _run(conn, where, params, exact=True, ef_search=0)
    return [(int(r["id"]), min(1.0, max(0.0, 1.0 - float(r["distance"])))) for r in rows]


async def _run(conn: AsyncConnection, where: str, params: dict, *, exact: bool, ef_search: int) -> list[dict]:
    # `+ 0` makes the ORDER BY expression something the HNSW index cannot serve: an exact, filtered scan.
    order = "(c.embedding <=> %(q)s) + 0" if exact else "c.embedding <=> %(q)s"
    sql = f"""SELECT c.id, c.embedding <=> %(q)s AS distance FROM document_chunks c
              WHERE {where} AND c.embedding IS NOT NULL
              ORDER BY {order} LIMIT %(n)s"""
    async with conn.transaction():
        if not exact:
            await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(ef_search, 1000)),))
        return await (await conn.execute(sql, params)).fetchall()
