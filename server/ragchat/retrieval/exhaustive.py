"""Exhaustive search: every readable document with a passage that matches (server/ragchat/core/matches.py).

Three statements, all inside the read scope (`filter_sql`, the same clause the keyword arm ranks with):
1. the query as a tsquery (`websearch_to_tsquery` for `all`; the query's lexemes OR-ed for `any`), built by
   Postgres itself, so no user text ever reaches the tsquery parser;
2. the matching passages (GIN bitmap scan, at most `limit` + 1: the bound), counted per document, and one
   page of documents after the keyset cursor (most matches first, then document id);
3. the best passage (BM25, the keyword arm's formula and per-scope statistics) of each document on the page.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from typing import Any
from uuid import UUID

from psycopg import sql

from ragchat.core.errors import BadRequest
from ragchat.core.matches import DocumentMatches, MatchedDocument, MatchRequest
from ragchat.core.search import Location, Passage, Trace
from ragchat.db.pool import Pool
from ragchat.readscope.sql import ReadScope
from ragchat.retrieval.filters import filter_sql
from ragchat.retrieval.keyword import QueryAnalysis, analyse_query, or_query
from ragchat.settings import RetrievalSettings

MAX_PAGE_SIZE = 200
MAX_CURSOR_CHARS = 200

# Once per text-search configuration in the reader's scope (retrieval/keyword.py): `all` is every word under
# one of them (the per-configuration queries OR-ed), `any` every lexeme of any of them.
_TSQUERY_ALL = """SELECT string_agg('(' || x.t::text || ')', ' | ' ORDER BY x.cfg) AS tsq FROM (
    SELECT c.cfg, websearch_to_tsquery(c.cfg, %(q)s) AS t FROM unnest(%(configs)s::regconfig[]) AS c(cfg)
) x WHERE numnode(x.t) > 0"""
_LEXEMES = """SELECT DISTINCT v.lexeme
    FROM unnest(%(configs)s::regconfig[]) AS c(cfg) CROSS JOIN LATERAL unnest(to_tsvector(c.cfg, %(q)s)) v
    ORDER BY v.lexeme LIMIT 256"""

_PAGE_SQL = sql.SQL("""
WITH scanned AS MATERIALIZED (
    SELECT c.document_id FROM document_chunks c
    WHERE {where} AND c.search_vector @@ %(tsq)s::tsquery
    LIMIT %(limit)s + 1
), kept AS (
    SELECT document_id FROM scanned LIMIT %(limit)s
), per_doc AS (
    SELECT document_id, count(*)::int AS n FROM kept GROUP BY document_id
), totals AS (
    SELECT (SELECT count(*) FROM per_doc)::int AS documents, (SELECT count(*) FROM kept)::int AS passages,
           (SELECT count(*) FROM scanned) > %(limit)s AS stopped
), page AS (
    SELECT p.document_id, p.n FROM per_doc p
    WHERE %(after_n)s::int IS NULL OR p.n < %(after_n)s::int
          OR (p.n = %(after_n)s::int AND p.document_id > %(after_id)s::uuid)
    ORDER BY p.n DESC, p.document_id
    LIMIT %(page)s + 1
)
SELECT t.documents, t.passages, t.stopped, page.document_id, page.n
FROM totals t LEFT JOIN page ON TRUE
ORDER BY page.n DESC NULLS LAST, page.document_id
""")

_BEST_SQL = sql.SQL("""
SELECT DISTINCT ON (c.document_id)
       c.id, c.document_id, c.chunk_index, c.content, c.page, c.section, c.location,
       d.filename, d.title, d.metadata, coalesce(s.score, 0) AS score
FROM document_chunks c
JOIN documents d ON d.id = c.document_id
LEFT JOIN LATERAL (
    SELECT sum(w.idf * t.tf * (%(k1)s + 1) / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * c.doc_len / %(avgdl)s))) AS score
    FROM (SELECT v.lexeme, coalesce(array_length(v.positions, 1), 1)::float8 AS tf
          FROM unnest(ts_filter(setweight(c.search_vector, 'A', %(terms)s::text[]), '{{a}}')) v) t
    JOIN unnest(%(terms)s::text[], %(idfs)s::float8[]) AS w(term, idf) ON w.term = t.lexeme
) s ON TRUE
WHERE c.document_id = ANY(%(docs)s) AND {where} AND c.search_vector @@ %(tsq)s::tsquery
ORDER BY c.document_id, score DESC, c.chunk_index
""")


def _fingerprint(query: str, match: str) -> str:
    return hashlib.sha256(f"{match}\x00{query}".encode()).hexdigest()[:12]


def encode_cursor(query: str, match: str, matches: int, document_id: UUID) -> str:
    raw = json.dumps({"q": _fingerprint(query, match), "n": matches, "id": str(document_id)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, query: str, match: str) -> tuple[int, UUID]:
    """(matches, document id) of the previous page's last document; a 400 for anything else."""
    bad = BadRequest("cursor is not one this search returned: pass next_cursor from the previous page unchanged")
    if len(cursor) > MAX_CURSOR_CHARS or not cursor.isascii():
        raise bad
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        matches, document_id, fingerprint = data["n"], UUID(str(data["id"])), data["q"]
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError):
        raise bad from None
    if not isinstance(matches, int) or isinstance(matches, bool) or not 0 < matches < 2**31:
        raise bad
    if fingerprint != _fingerprint(query, match):
        raise BadRequest("cursor belongs to another query: start again without a cursor")
    return matches, document_id


def check_request(request: MatchRequest, settings: RetrievalSettings) -> int:
    """The bound on matching passages for this request; a 400 for a bad page size, limit or query."""
    if not 1 <= request.page_size <= MAX_PAGE_SIZE:
        raise BadRequest(f"page_size must be 1 to {MAX_PAGE_SIZE} (got {request.page_size})")
    if request.match not in ("all", "any"):
        raise BadRequest(f"match must be all or any (got {request.match!r})")
    if "\x00" in request.query:
        raise BadRequest("the query contains a NUL character")
    limit = settings.search_all_limit if request.limit is None else request.limit
    if not 1 <= limit <= settings.search_all_max_limit:
        raise BadRequest(f"limit must be 1 to {settings.search_all_max_limit} matching passages (got {limit})")
    return limit


async def find_documents(
    pool: Pool, scope: ReadScope, request: MatchRequest, settings: RetrievalSettings
) -> DocumentMatches:
    started = time.perf_counter()
    limit = check_request(request, settings)
    query = request.query.strip()
    after = decode_cursor(request.cursor, query, request.match) if request.cursor else None
    where, params = filter_sql(scope, request.filters)
    async with pool.connection() as conn:
        analysis = await analyse_query(conn, query, scope)
        tsq = await _tsquery(conn, query, request.match, analysis.configs)
        empty = DocumentMatches(
            query=query,
            match=request.match,
            tsquery=tsq,
            documents=[],
            total_documents=0,
            total_passages=0,
            complete=True,
            limit=limit,
            max_limit=settings.search_all_max_limit,
            timing_ms=0.0,
        )
        if not tsq:
            empty.note = "The query has no searchable words (only stop words or punctuation): nothing can match."
            empty.timing_ms = _ms(started)
            return empty
        page_sql = _PAGE_SQL.format(where=where)
        page_params = {
            **params,
            "tsq": tsq,
            "limit": limit,
            "page": request.page_size,
            "after_n": after[0] if after else None,
            "after_id": after[1] if after else None,
        }
        rows = await (await conn.execute(page_sql, page_params)).fetchall()
        head = rows[0]
        page = [(r["document_id"], int(r["n"])) for r in rows if r["document_id"] is not None]
        more = len(page) > request.page_size
        page = page[: request.page_size]
        best = await _best_passages(conn, analysis, tsq, [d for d, _ in page], where, params, settings)
    top = max((float(r["score"]) for r in best.values()), default=0.0) or 1.0
    documents = []
    for document_id, n in page:
        row = best.get(document_id)
        if row is None:  # deleted between the two statements
            continue
        documents.append(
            MatchedDocument(
                document_id=document_id,
                filename=row["filename"],
                title=row["title"],
                matches=n,
                best=_passage(row, top),
            )
        )
    stopped = bool(head["stopped"])
    result = empty.model_copy(
        update={
            "documents": documents,
            "total_documents": int(head["documents"]),
            "total_passages": int(head["passages"]),
            "complete": not stopped,
            "next_cursor": encode_cursor(query, request.match, page[-1][1], page[-1][0]) if more and page else None,
        }
    )
    if stopped:
        higher = (
            f"raise limit (at most {settings.search_all_max_limit}) or narrow the query"
            if limit < settings.search_all_max_limit
            else "narrow the query (the limit is at its maximum)"
        )
        result.note = (
            f"Stopped early after {limit} matching passages: documents with matches beyond them are not listed, "
            f"and counts may be low. To see them, {higher}."
        )
    result.timing_ms = _ms(started)
    return result


async def _tsquery(conn: Any, query: str, match: str, configs: tuple[str, ...]) -> str:
    params = {"q": query, "configs": list(configs)}
    if match == "all":
        row = await (await conn.execute(_TSQUERY_ALL, params)).fetchone()
        tsq = str(row["tsq"] or "") if row else ""
        return tsq[1:-1] if len(configs) == 1 and tsq else tsq  # one configuration: as before, unbracketed
    rows = await (await conn.execute(_LEXEMES, params)).fetchall()
    return or_query([r["lexeme"] for r in rows])


async def _best_passages(
    conn: Any,
    analysis: QueryAnalysis,
    tsq: str,
    documents: list[UUID],
    where: sql.Composable,
    params: dict[str, Any],
    settings: RetrievalSettings,
) -> dict[UUID, dict[str, Any]]:
    if not documents:
        return {}
    terms, avgdl = analysis.terms, analysis.avgdl
    best = _BEST_SQL.format(where=where)
    rows = await (
        await conn.execute(
            best,
            {
                **params,
                "tsq": tsq,
                "docs": documents,
                "terms": [t.term for t in terms],
                "idfs": [t.idf for t in terms],
                "avgdl": avgdl or 1.0,
                "k1": settings.bm25_k1,
                "b": settings.bm25_b,
            },
        )
    ).fetchall()
    return {r["document_id"]: r for r in rows}


def _passage(row: dict[str, Any], top: float) -> Passage:
    raw = float(row["score"])
    return Passage(
        id=row["id"],
        document_id=row["document_id"],
        filename=row["filename"],
        title=row["title"],
        page=row["page"],
        section=row["section"],
        chunk_index=row["chunk_index"],
        content=row["content"],
        score=min(1.0, max(0.0, raw / top)),
        score_kind="bm25 (normalised)",
        trace=Trace(keyword_score=raw),
        location=Location.model_validate(row["location"]) if row["location"] else None,
        url=(row["metadata"] or {}).get("source_url"),
    )


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
