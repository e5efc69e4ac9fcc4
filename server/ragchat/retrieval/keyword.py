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

from ragchat.core.search import SearchFilters
from ragchat.db.pool import Conn
from ragchat.readscope.sql import OTHERS_SHARED_DOCUMENTS, ReadScope
from ragchat.retrieval.filters import filter_sql

Scorer = Literal["bm25", "ts_rank"]
MAX_QUERY_TERMS = 32
MAX_SHARED_LEXEMES = 256  # a 10k-character query is cut to this many distinct lexemes before counting


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
    score: the reader's own from `bm25_stats`/`bm25_terms` (kept by triggers), plus, when documents of other
    owners are shared with them, those documents' counts for the query's lexemes, computed on the fly."""
    uid = scope.user_id
    own = await (
        await conn.execute("SELECT n_chunks, total_len FROM bm25_stats WHERE owner_id = %s", (uid,))
    ).fetchone()
    n = int(own["n_chunks"]) if own else 0
    total = int(own["total_len"]) if own else 0
    if not scope.shared:
        if n <= 0:
            return [], 0, 0.0
        rows = await (
            await conn.execute(
                """SELECT b.term, b.df FROM (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %s))) q
                   JOIN bm25_terms b ON b.owner_id = %s AND b.term = q.lexeme
                   WHERE b.df > 0 ORDER BY b.df, b.term LIMIT %s""",
                (query, uid, MAX_QUERY_TERMS),
            )
        ).fetchall()
        terms = [TermStat(r["term"], int(r["df"]), bm25_idf(n, int(r["df"]))) for r in rows]
        return terms, n, max(total / n, 1.0)

    lexemes = [
        r["lexeme"]
        for r in await (
            await conn.execute(
                "SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %s)) ORDER BY lexeme LIMIT %s",
                (query, MAX_SHARED_LEXEMES),
            )
        ).fetchall()
    ]
    if not lexemes:
        return [], 0, 0.0
    df: dict[str, int] = {}
    for r in await (
        await conn.execute(
            "SELECT term, df FROM bm25_terms WHERE owner_id = %s AND term = ANY(%s) AND df > 0", (uid, lexemes)
        )
    ).fetchall():
        df[r["term"]] = int(r["df"])
    params = {"uid": uid, "lexemes": lexemes, "tsq": or_query(lexemes)}
    shared = await (await conn.execute(_SHARED_STATS_SQL, params)).fetchone()
    if shared:
        n += int(shared["n"])
        total += int(shared["len"])
    for r in await (await conn.execute(_SHARED_DF_SQL, params)).fetchall():
        df[r["term"]] = df.get(r["term"], 0) + int(r["df"])
    if n <= 0:
        return [], 0, 0.0
    ranked = sorted((d, t) for t, d in df.items() if d > 0)[:MAX_QUERY_TERMS]
    return [TermStat(t, d, bm25_idf(n, d)) for d, t in ranked], n, max(total / n, 1.0)


_SHARED_STATS_SQL = f"""
SELECT count(*) AS n, coalesce(sum(c.doc_len), 0) AS len FROM document_chunks c
WHERE c.document_id IN ({OTHERS_SHARED_DOCUMENTS})
"""

_SHARED_DF_SQL = f"""
SELECT t.lexeme AS term, count(*) AS df
FROM document_chunks c
-- only the query's lexemes: setweight marks them 'A', ts_filter drops the rest before unnest
CROSS JOIN LATERAL unnest(ts_filter(setweight(c.search_vector, 'A', %(lexemes)s::text[]), '{{a}}')) t
WHERE c.document_id IN ({OTHERS_SHARED_DOCUMENTS}) AND c.search_vector @@ %(tsq)s::tsquery
GROUP BY t.lexeme
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
