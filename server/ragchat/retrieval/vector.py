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

`ef_search` is the candidate list at `EF_REFERENCE_ROWS` indexed rows. A larger graph needs a longer list for
the same recall (bench/search.py: recall@10 0.98 at 100k rows but 0.92 at 1M with ef_search 100), so with
`ef_growth` > 0 it grows as (rows / EF_REFERENCE_ROWS) ** ef_growth, rows being the index's own estimate
(pg_class.reltuples, read in the statement that sets it). A filtered HNSW scan multiplies it by
`filtered_ef_factor`: most of what the graph walk finds is then filtered away.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg import sql

from ragchat.core.search import SearchFilters
from ragchat.db.pool import Conn
from ragchat.readscope.sql import ReadScope
from ragchat.retrieval.filters import filter_sql
from ragchat.vectors.store import Space


async def _filtered_rows(conn: Conn, space: Space, where: sql.Composable, params: dict[str, Any], cap: int) -> int:
    query = sql.SQL(
        "SELECT count(*) AS n FROM (SELECT 1 FROM chunk_embeddings e WHERE e.space_id = {} AND {} LIMIT %(cap)s) s"
    ).format(sql.Literal(space.id), where)
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
    ef_growth: float = 0.0,
    filtered_ef_factor: float = 1.0,
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity clipped to 0..1), best first, at most `n`."""
    where, params = filter_sql(scope, filters, alias="e")
    params = {**params, "q": query_vector, "n": n}
    population = None
    if filters is not None and filters.active:
        population = await _filtered_rows(conn, space, where, params, exact_max_rows)
    exact = population is not None and population <= exact_max_rows
    ef = EfPolicy(max(ef_search, n), ef_growth, filtered_ef_factor if population is not None else 1.0)
    rows = await _run(conn, space, where, params, exact=exact, ef=ef)
    if not exact and len(rows) < n:
        # HNSW + post-filter came back short: either the reader/filter really has fewer rows, or the index
        # candidates were filtered away (pgvector < 0.8, or an iterative scan's tuple budget ran out). The exact
        # scan answers both correctly.
        rows = await _run(conn, space, where, params, exact=True, ef=None)
    ranked = sorted(rows, key=lambda r: (float(r["distance"]), int(r["id"])))
    return [(int(r["id"]), min(1.0, max(0.0, 1.0 - float(r["distance"])))) for r in ranked]


EF_REFERENCE_ROWS = 100_000
EF_MAX = 1000  # pgvector's own limit for hnsw.ef_search


@dataclass(frozen=True)
class EfPolicy:
    base: int  # at EF_REFERENCE_ROWS rows, never below the rows asked for
    growth: float = 0.0  # 0: `base` whatever the size
    factor: float = 1.0  # filtered scans

    def at(self, rows: float) -> int:
        """The ef_search for an index of `rows` entries (what _SET_EF computes in SQL)."""
        scale = max(1.0, max(rows, 1.0) / EF_REFERENCE_ROWS) ** self.growth
        return min(EF_MAX, max(self.base, round(self.base * self.factor * scale)))


# The index's row estimate is read in the statement that sets ef_search (no extra round trip); an index never
# analysed (reltuples -1) or not there counts as small. Computes what EfPolicy.at computes.
_SET_EF = """
SELECT set_config('hnsw.ef_search', least(%(max)s, greatest(%(base)s, round(%(base)s * %(factor)s * power(
    greatest(1.0, coalesce((SELECT c.reltuples FROM pg_class c WHERE c.oid = to_regclass(quote_ident(%(index)s))), 1.0)
        / %(reference)s), %(growth)s))))::int::text, true)
"""


async def _run(
    conn: Conn, space: Space, where: sql.Composable, params: dict[str, Any], *, exact: bool, ef: EfPolicy | None
) -> list[dict[str, Any]]:
    distance = sql.SQL("{} <=> %(q)s").format(space.vector_expr("e"))
    # `+ 0` makes the ORDER BY expression something the HNSW index cannot serve: an exact, filtered scan.
    indexed = sql.SQL("{} <=> {}").format(space.index_expr("e"), space.query_expr("q"))
    order = sql.SQL("({}) + 0").format(distance) if exact else indexed
    query = sql.SQL(
        "SELECT e.chunk_id AS id, {} AS distance FROM chunk_embeddings e "
        "WHERE e.space_id = {} AND {} ORDER BY {} LIMIT %(n)s"
    ).format(distance, sql.Literal(space.id), where, order)
    async with conn.transaction():
        if not exact and ef is not None:
            await conn.execute(
                _SET_EF,
                {
                    "max": EF_MAX,
                    "base": ef.base,
                    "factor": ef.factor,
                    "growth": ef.growth,
                    "reference": float(EF_REFERENCE_ROWS),
                    "index": space.index_relname,
                },
            )
            if space.index_type == "halfvec":  # only built on pgvector >= 0.8, which has iterative scans
                await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        return await (await conn.execute(query, params)).fetchall()
