"""The keyword arm: BM25 computed inside Postgres over the stored tsvector, on a bounded candidate set.

Query lexemes come from the same `to_tsvector('english', …)` as the documents (so punctuation, operators and
any language are safe: they never reach the tsquery parser unquoted). Document frequencies and lengths come
from the per-share-group `bm25_group_terms` / `bm25_group_stats` (kept by triggers, migrations/0017), term
frequencies from the tsvector's positions.

Candidates: rare query terms are matched exhaustively while their posting lists fit in `candidates`; common
terms (small idf) then only add to the score of those candidates, like MaxScore's non-essential lists. A
query made only of very common words takes chunks matching all of its rarest terms first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, LiteralString, cast

from ragchat.core.search import SearchFilters
from ragchat.db.pool import Conn
from ragchat.readscope.sql import SHARED_GROUPS, ReadScope
from ragchat.retrieval.filters import filter_sql

Scorer = Literal["bm25", "ts_rank"]
MAX_QUERY_TERMS = 32
MAX_SHARED_LEXEMES = 256  # a 10k-character query is cut to this many distinct lexemes before looking them up


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


async def query_terms(conn: Conn, query: str, scope: ReadScope) -> tuple[list[TermStat], int, float]:
    """Distinct query lexemes present in what the reader may read (rarest first), N, and average chunk length.

    The statistics cover exactly the readable chunks, so another user's private documents never change a
    score: the sum over the reader's share groups (migrations/0017: the documents of one owner in one set of
    collections, kept by triggers), each counted once however many readable collections hold it. Cost: one
    index probe per (readable group, query lexeme, written shard), never a scan of the shared chunks."""
    params = {"uid": scope.user_id, "query": query, "max_lexemes": MAX_SHARED_LEXEMES}
    groups = _SHARED_GROUPS_SQL if scope.shared else _OWN_GROUPS_SQL
    # constant SQL: the group subquery is one of the two fragments below, never user text
    stats_sql = cast(LiteralString, _STATS_SQL.format(groups=groups))
    terms_sql = cast(LiteralString, _TERMS_SQL.format(groups=groups))
    row = await (await conn.execute(stats_sql, params)).fetchone()
    n = int(row["n"]) if row else 0
    total = int(row["len"]) if row else 0
    if n <= 0:
        return [], 0, 0.0
    rows = await (await conn.execute(terms_sql, params)).fetchall()
    ranked = sorted((int(r["df"]), r["term"]) for r in rows)[:MAX_QUERY_TERMS]
    return [TermStat(t, d, bm25_idf(n, d)) for d, t in ranked], n, max(total / n, 1.0)


#: The reader's own documents only (`ReadScope.shared` False: nothing of another owner is shared with them).
_OWN_GROUPS_SQL = "SELECT g.id FROM bm25_groups g WHERE g.owner_id = %(uid)s"
#: Theirs, and every group with a collection they are a member of (UNION: each group once).
_SHARED_GROUPS_SQL = f"""{_OWN_GROUPS_SQL}
    UNION
    {SHARED_GROUPS}"""

_STATS_SQL = """
SELECT coalesce(sum(s.n_chunks), 0) AS n, coalesce(sum(s.total_len), 0) AS len
FROM bm25_group_stats s WHERE s.group_id IN ({groups})
"""

_TERMS_SQL = """
WITH q AS (
    SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %(query)s)) ORDER BY lexeme LIMIT %(max_lexemes)s
)
SELECT t.term, sum(t.df) AS df
FROM bm25_group_terms t
WHERE t.group_id IN ({groups}) AND t.term IN (SELECT lexeme FROM q)
GROUP BY t.term HAVING sum(t.df) > 0
"""


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
    scope: ReadScope,
    n: int,
    filters: SearchFilters | None = None,
    scorer: Scorer = "bm25",
    k1: float = 0.9,
    b: float = 0.4,
    candidates: int = 1000,
) -> list[tuple[int, float]]:
    """(chunk id, keyword score), best first, at most `n`. Unmatchable queries give []."""
    terms, _n_chunks, avgdl = await query_terms(conn, query, scope)
    if not terms:
        return []
    where, params = filter_sql(scope, filters)
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
