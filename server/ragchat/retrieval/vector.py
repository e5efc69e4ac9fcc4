"""The vector arm: pgvector cosine distance in the active embedding space, HNSW where it can answer, an exact
scan where filters are selective.

Vectors live in `chunk_embeddings`, one partial HNSW index per space over `embedding::vector(dim)` or, on
pgvector >= 0.8, `embedding::halfvec(dim)` (the space's `index_type`); the query orders by that same
expression so the index serves `ORDER BY … LIMIT n`, and the similarity returned is always the full-precision
one (rows re-sorted by it). On a halfvec space the scan is iterative (`hnsw.iterative_scan = relaxed_order`):
it goes on past `ef_search` until `n` rows pass the filter. Before pgvector 0.8 an HNSW scan returns its
`ef_search` nearest rows and the WHERE clause then drops the ones filtered out, so a selective filter can
return fewer than `n` rows. Either way we count the rows a filter leaves; small sets are scanned exactly, and
a short HNSW answer is retried exactly.
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
        # candidates were filtered away (pgvector < 0.8, or an iterative scan's tuple budget ran out). The exact
        # scan answers both correctly.
        rows = await _run(conn, space, where, params, exact=True, ef_search=0)
    ranked = sorted(rows, key=lambda r: (float(r["distance"]), int(r["id"])))
    return [(int(r["id"]), min(1.0, max(0.0, 1.0 - float(r["distance"])))) for r in ranked]


async def _run(
    conn: Conn, space: Space, where: str, params: dict[str, Any], *, exact: bool, ef_search: int
) -> list[dict[str, Any]]:
    distance = sql.SQL("{} <=> %(q)s").format(space.vector_expr("e"))
    # `+ 0` makes the ORDER BY expression something the HNSW index cannot serve: an exact, filtered scan.
    indexed = sql.SQL("{} <=> {}").format(space.index_expr("e"), space.query_expr("q"))
    order = sql.SQL("({}) + 0").format(distance) if exact else indexed
    query = sql.SQL(
        "SELECT e.chunk_id AS id, {} AS distance FROM chunk_embeddings e "
        "WHERE e.space_id = {} AND {} ORDER BY {} LIMIT %(n)s"
    ).format(distance, sql.Literal(space.id), sql.SQL(where), order)  # type: ignore[arg-type]
    async with conn.transaction():
        if not exact:
            await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(ef_search, 1000)),))
            if space.index_type == "halfvec":  # only built on pgvector >= 0.8, which has iterative scans
                await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        return await (await conn.execute(query, params)).fetchall()
