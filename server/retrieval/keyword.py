"""The keyword arm: BM25 computed inside Postgres over the stored tsvector, on a bounded candidate set.

Query lexemes come from the same `to_tsvector('english', …)` as the documents (so punctuation, operators and
any language are safe: they never reach the tsquery parser unquoted). Document frequencies and lengths come
from `bm25_terms` / `bm25_stats` (kept by triggers), term frequencies from the tsvector's positions.

Candidates: rare query terms are matched exhaustively while their posting lists fit in `candidates`; common
terms (small idf) then only add to the score of those candidates, like MaxScore's non-essential lists. A
query made only of very common words takes chunks matching all of its rarest terms first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, LiteralString, cast
from uuid import UUID

from server.core.search import SearchFilters
from server.db.pool import Conn
from server.retrieval.filters import filter_sql

Scorer = Literal["bm25", "ts_rank"]
MAX_QUERY_TERMS = 32


@dataclass(frozen=True)
class TermStat:
    term: str
    df: int
    idf: float


def quote_lexeme(lexeme: str) -> str:
    """A lexeme as a quoted tsquery operand (backslash and quote escaped)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def or_query(terms: list[str]) -> str:
    return " | ".join(quote_lexeme(t) for t in terms)


def and_query(terms: list[str]) -> str:
    return " & ".join(quote_lexeme(t) for t in terms)


def bm25_idf(n_chunks: int, df: int) -> float:
    """Lucene's BM25 idf: always positive."""
    return math.log(1.0 + (n_chunks - df + 0.5) / (df + 0.5))


async def query_terms(conn: Conn, query: str, owner: UUID) -> tuple[list[TermStat], int, float]:
    """Distinct query lexemes present in the owner's corpus (rarest first), N, and average chunk length."""
    stats = await (
        await conn.execute("SELECT n_chunks, total_len FROM bm25_stats WHERE owner_id = %s", (owner,))
    ).fetchone()
    if not stats or stats["n_chunks"] <= 0:
        return [], 0, 0.0
    n, total = int(stats["n_chunks"]), int(stats["total_len"])
    rows = await (
        await conn.execute(
            """SELECT b.term, b.df FROM (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %s))) q
               JOIN bm25_terms b ON b.owner_id = %s AND b.term = q.lexeme
               WHERE b.df > 0 ORDER BY b.df, b.term LIMIT %s""",
            (query, owner, MAX_QUERY_TERMS),
        )
    ).fetchall()
    terms = [TermStat(r["term"], int(r["df"]), bm25_idf(n, int(r["df"]))) for r in rows]
    return terms, n, max(total / n, 1.0)


def candidate_terms(terms: list[TermStat], budget: int) -> list[TermStat]:
    """Rarest terms whose posting lists together fit the candidate budget (at least one)."""
    chosen: list[TermStat] = []
    used = 0
    for t in terms:
        if chosen and used + t.df > budget:
            break
        chosen.append(t)
        used += t.df
    return chosen


_BM25_SQL = """
WITH cand AS (
    SELECT c.id, c.search_vector, c.doc_len FROM document_chunks c
    WHERE {where} AND c.search_vector @@ %(tsq)s::tsquery
    LIMIT %(cap)s
)
SELECT cand.id,
       sum(w.idf * t.tf * (%(k1)s + 1) / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * cand.doc_len / %(avgdl)s))) AS score
FROM cand
CROSS JOIN LATERAL (
    -- only the query's lexemes: setweight marks them 'A', ts_filter drops the rest before unnest
    SELECT v.lexeme, coalesce(array_length(v.positions, 1), 1)::float8 AS tf
    FROM unnest(ts_filter(setweight(cand.search_vector, 'A', %(terms)s::text[]), '{{a}}')) v
) t
JOIN unnest(%(terms)s::text[], %(idfs)s::float8[]) AS w(term, idf) ON w.term = t.lexeme
GROUP BY cand.id
ORDER BY score DESC, cand.id
LIMIT %(n)s
"""

_TS_RANK_SQL = """
WITH cand AS (
    SELECT c.id, c.search_vector FROM document_chunks c
    WHERE {where} AND c.search_vector @@ %(tsq)s::tsquery
    LIMIT %(cap)s
)
SELECT cand.id, ts_rank(cand.search_vector, %(all_terms)s::tsquery, 1) AS score
FROM cand ORDER BY score DESC, cand.id LIMIT %(n)s
"""


async def keyword_search(
    conn: Conn,
    query: str,
    *,
    owner: UUID,
    n: int,
    filters: SearchFilters | None = None,
    scorer: Scorer = "bm25",
    k1: float = 0.9,
    b: float = 0.4,
    candidates: int = 1000,
) -> list[tuple[int, float]]:
    """(chunk id, keyword score), best first, at most `n`. Unmatchable queries give []."""
    terms, _n_chunks, avgdl = await query_terms(conn, query, owner)
    if not terms:
        return []
    where, params = filter_sql(owner, filters)
    # `where` is filter_sql's own fragment (bound parameters only), never user text
    sql = cast(LiteralString, (_BM25_SQL if scorer == "bm25" else _TS_RANK_SQL).format(where=where))
    params.update(
        n=n,
        cap=max(candidates, n),
        k1=k1,
        b=b,
        avgdl=avgdl,
        terms=[t.term for t in terms],
        idfs=[t.idf for t in terms],
        all_terms=or_query([t.term for t in terms]),
    )
    chosen = candidate_terms(terms, candidates)
    if len(chosen) == 1 and chosen[0].df > candidates and len(terms) > 1:
        # Only common words: prefer chunks that contain all of the rarest few, then fill up.
        rows = await (await conn.execute(sql, {**params, "tsq": and_query([t.term for t in terms[:4]])})).fetchall()
        if len(rows) >= n:
            return [(int(r["id"]), float(r["score"])) for r in rows]
    rows = await (await conn.execute(sql, {**params, "tsq": or_query([t.term for t in chosen])})).fetchall()
    return [(int(r["id"]), float(r["score"])) for r in rows]
