"""The keyword arm: BM25 computed inside Postgres over the stored tsvector, on a bounded candidate set.

Query lexemes come from the same `to_tsvector(config, …)` as the documents (so punctuation, operators and
any language are safe: they never reach the tsquery parser unquoted), once per text-search configuration the
chunks in the reader's scope use (migrations/0029: `bm25_owner_configs`, one row per owner and configuration),
their lexemes unioned: an English-only scope analyses the query once with `english`, as before; a scope with
German and English documents analyses it with both, and each chunk matches the lexemes of its own analysis.
Document frequencies and lengths come from the per-share-group `bm25_group_terms` / `bm25_group_stats` (kept
by triggers, migrations/0017), term frequencies from the tsvector's positions. Lexemes of different
configurations are different strings (a German 'haus' and an English 'hous'), so each keeps its own df; each
chunk's length counts its own analysis.

Candidates: rare query terms are matched exhaustively while their posting lists fit in `candidates`; common
terms (small idf) then only add to the score of those candidates, like MaxScore's non-essential lists. A
query made only of very common words takes chunks matching all of its rarest terms first.

Coverage (`KeywordHits.coverage`): the largest share of the query's term weight one returned chunk holds,
under the chunk's own analysis: the idf of the query lexemes it contains over the idf of all the query's
lexemes in that configuration, a lexeme found nowhere in the scope weighing the most (df 0). A question about
something the documents never mention leaves its rare words unmatched, whatever the language; the search
reads it as its confidence where the embedding model does not understand the text (`Searcher`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from psycopg import sql

from ragchat.core.search import SearchFilters
from ragchat.db.pool import Conn
from ragchat.readscope.sql import SHARED_GROUPS, ReadScope
from ragchat.retrieval.filters import filter_sql

Scorer = Literal["bm25", "ts_rank"]
MAX_QUERY_TERMS = 32
MAX_SHARED_LEXEMES = 256  # a 10k-character query is cut to this many distinct lexemes before looking them up


DEFAULT_CONFIG = "english"  # a scope with no recorded configuration (nothing ingested yet)


@dataclass(frozen=True)
class TermStat:
    term: str
    df: int
    idf: float


@dataclass(frozen=True)
class QueryAnalysis:
    terms: list[TermStat]  # rarest first, at most MAX_QUERY_TERMS
    n_chunks: int
    avgdl: float
    configs: tuple[str, ...]  # the text-search configurations the query was analysed with (the scope's)
    weight: dict[str, float] = field(default_factory=dict)  # per configuration: the idf sum of its query lexemes


@dataclass(frozen=True)
class KeywordHits:
    hits: list[tuple[int, float]]
    configs: tuple[str, ...]
    coverage: float | None = None  # best share of the query's term weight in one hit; None: nothing to weigh


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
    """Distinct query lexemes present in what the reader may read (rarest first), N, and average chunk length."""
    a = await analyse_query(conn, query, scope)
    return a.terms, a.n_chunks, a.avgdl


async def analyse_query(conn: Conn, query: str, scope: ReadScope) -> QueryAnalysis:
    """`query_terms`, and the configurations the query was analysed with.

    The statistics cover exactly the readable chunks, so another user's private documents never change a
    score: the sum over the reader's share groups (migrations/0017: the documents of one owner in one set of
    collections, kept by triggers), each counted once however many readable collections hold it. Cost: one
    index probe per (readable group, query lexeme, written shard), never a scan of the shared chunks."""
    params: dict[str, object] = {"uid": scope.user_id, "query": query, "max_lexemes": MAX_SHARED_LEXEMES}
    groups = _SHARED_GROUPS_SQL if scope.shared else _OWN_GROUPS_SQL
    # the reader's groups once (a CTE) when shared, for the statistics and for their owners' configurations
    stats_sql = (_SHARED_STATS_SQL if scope.shared else _STATS_SQL).format(groups=groups)
    terms_sql = _TERMS_SQL.format(groups=groups)
    row = await (await conn.execute(stats_sql, params)).fetchone()
    n = int(row["n"]) if row else 0
    total = int(row["len"]) if row else 0
    configs = tuple(row["configs"] or ()) if row else ()
    configs = configs or (DEFAULT_CONFIG,)
    if n <= 0:
        return QueryAnalysis([], 0, 0.0, configs)
    params["configs"] = list(configs)
    rows = await (await conn.execute(terms_sql, params)).fetchall()
    weight: dict[str, float] = {}
    for r in rows:
        weight[r["cfg"]] = weight.get(r["cfg"], 0.0) + bm25_idf(n, int(r["df"]))
    present = {(int(r["df"]), r["term"]) for r in rows if int(r["df"]) > 0}
    ranked = sorted(present)[:MAX_QUERY_TERMS]
    terms = [TermStat(t, d, bm25_idf(n, d)) for d, t in ranked]
    return QueryAnalysis(terms, n, max(total / n, 1.0), configs, weight)


#: The reader's own documents only (`ReadScope.shared` False: nothing of another owner is shared with them).
_OWN_GROUPS_SQL = sql.SQL("SELECT g.id FROM bm25_groups g WHERE g.owner_id = %(uid)s")
#: Theirs, and every group with a collection they are a member of (UNION: each group once).
_SHARED_GROUPS_SQL = sql.SQL("{} UNION {}").format(_OWN_GROUPS_SQL, SHARED_GROUPS)

_STATS_SQL = sql.SQL("""
SELECT coalesce(sum(s.n_chunks), 0) AS n, coalesce(sum(s.total_len), 0) AS len,
       ARRAY(SELECT o.config::text FROM bm25_owner_configs o WHERE o.owner_id = %(uid)s ORDER BY 1) AS configs
FROM bm25_group_stats s WHERE s.group_id IN ({groups})
""")

#: The same, with the configurations of the groups' owners (kept per owner: a superset of the scope's is
#: harmless, its extra lexemes match nothing readable).
_SHARED_STATS_SQL = sql.SQL("""
WITH grp(id) AS MATERIALIZED ({groups})
SELECT coalesce(sum(s.n_chunks), 0) AS n, coalesce(sum(s.total_len), 0) AS len,
       ARRAY(SELECT DISTINCT o.config::text FROM bm25_owner_configs o
             WHERE o.owner_id IN (SELECT g.owner_id FROM bm25_groups g WHERE g.id IN (SELECT id FROM grp)
                                  UNION SELECT %(uid)s::uuid)
             ORDER BY 1) AS configs
FROM bm25_group_stats s WHERE s.group_id IN (SELECT id FROM grp)
""")

#: Every (configuration, query lexeme) with the lexeme's df in the scope (0: found nowhere in it).
_TERMS_SQL = sql.SQL("""
WITH q AS (
    SELECT DISTINCT c.cfg::text AS cfg, v.lexeme
    FROM unnest(%(configs)s::regconfig[]) AS c(cfg) CROSS JOIN LATERAL unnest(to_tsvector(c.cfg, %(query)s)) v
    ORDER BY v.lexeme, cfg LIMIT %(max_lexemes)s
), f AS (
    SELECT t.term, sum(t.df) AS df
    FROM bm25_group_terms t
    WHERE t.group_id IN ({groups}) AND t.term IN (SELECT lexeme FROM q)
    GROUP BY t.term HAVING sum(t.df) > 0
)
SELECT q.cfg, q.lexeme AS term, coalesce(f.df, 0) AS df FROM q LEFT JOIN f ON f.term = q.lexeme
""")


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


_BM25_SQL = sql.SQL("""
WITH cand AS (
    SELECT c.id, c.search_vector, c.doc_len, c.text_search_config::text AS cfg FROM document_chunks c
    WHERE {where} AND c.search_vector @@ %(tsq)s::tsquery
    LIMIT %(cap)s
)
SELECT cand.id,
       sum(w.idf * t.tf * (%(k1)s + 1) / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * cand.doc_len / %(avgdl)s))) AS score,
       sum(w.idf) AS matched, cand.cfg
FROM cand
CROSS JOIN LATERAL (
    -- only the query's lexemes: setweight marks them 'A', ts_filter drops the rest before unnest
    SELECT v.lexeme, coalesce(array_length(v.positions, 1), 1)::float8 AS tf
    FROM unnest(ts_filter(setweight(cand.search_vector, 'A', %(terms)s::text[]), '{{a}}')) v
) t
JOIN unnest(%(terms)s::text[], %(idfs)s::float8[]) AS w(term, idf) ON w.term = t.lexeme
GROUP BY cand.id, cand.cfg
ORDER BY score DESC, cand.id
LIMIT %(n)s
""")

_TS_RANK_SQL = sql.SQL("""
WITH cand AS (
    SELECT c.id, c.search_vector FROM document_chunks c
    WHERE {where} AND c.search_vector @@ %(tsq)s::tsquery
    LIMIT %(cap)s
)
SELECT cand.id, ts_rank(cand.search_vector, %(all_terms)s::tsquery, 1) AS score
FROM cand ORDER BY score DESC, cand.id LIMIT %(n)s
""")


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
    found = await keyword_arm(
        conn, query, scope=scope, n=n, filters=filters, scorer=scorer, k1=k1, b=b, candidates=candidates
    )
    return found.hits


async def keyword_arm(
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
) -> KeywordHits:
    """`keyword_search`'s hits, and the text-search configurations of the reader's scope."""
    a = await analyse_query(conn, query, scope)
    terms, avgdl = a.terms, a.avgdl
    if not terms:
        return KeywordHits([], a.configs, 0.0 if any(a.weight.values()) else None)
    where, params = filter_sql(scope, filters)
    ranked = (_BM25_SQL if scorer == "bm25" else _TS_RANK_SQL).format(where=where)
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
        rows = await (await conn.execute(ranked, {**params, "tsq": and_query([t.term for t in terms[:4]])})).fetchall()
        if len(rows) >= n:
            return _hits(rows, a, scorer)
    rows = await (await conn.execute(ranked, {**params, "tsq": or_query([t.term for t in chosen])})).fetchall()
    return _hits(rows, a, scorer)


def _hits(rows: Sequence[Mapping[str, Any]], a: QueryAnalysis, scorer: Scorer) -> KeywordHits:
    """The ranked rows, and (BM25) the best coverage among them (module docstring)."""
    hits = [(int(r["id"]), float(r["score"])) for r in rows]
    if scorer != "bm25":
        return KeywordHits(hits, a.configs)
    shares = [
        min(1.0, float(r["matched"]) / a.weight[str(r["cfg"])]) for r in rows if a.weight.get(str(r["cfg"]), 0.0) > 0
    ]
    return KeywordHits(hits, a.configs, max(shares, default=0.0))
