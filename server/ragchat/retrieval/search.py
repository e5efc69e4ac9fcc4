"""The one search orchestrator used by the chat tool, the HTTP API, the CLI and the evaluation.

[query expansion] → vector ∥ keyword (separate connections, concurrently) → fusion (`FUSION`: relative, score,
rrf or weighted_rrf) → hydrate → [LLM rerank] → SearchResult. The vector arm searches the active embedding space
with that space's own model, whatever EMBED_MODEL says (see server/vectors).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any, Protocol

import numpy as np
from psycopg import sql

from ragchat.core.matches import DocumentMatches, MatchRequest
from ragchat.core.options import SearchMode
from ragchat.core.principal import Principal
from ragchat.core.search import (
    ChunkHit,
    Confidence,
    ExpansionStatus,
    RerankStatus,
    ScoreKind,
    SearchFilters,
    SearchOptions,
    SearchResult,
    Timings,
    Trace,
)
from ragchat.db.pool import Pool
from ragchat.db.replicas import ReadRouter
from ragchat.observability import metrics, tracing
from ragchat.providers.embeddings.base import EmbeddingError
from ragchat.readscope.sql import ReadScope, read_chunk_scope, readable_chunks, scope_params
from ragchat.retrieval.exhaustive import find_documents
from ragchat.retrieval.expansion import NO_EXPANDER, Expander, keyword_text, vector_text
from ragchat.retrieval.fusion import Fused, fuse, keyword_only, other_languages, vector_only, vector_weight
from ragchat.retrieval.keyword import KeywordHits, keyword_arm
from ragchat.retrieval.rerank import Reranked
from ragchat.retrieval.vector import vector_search
from ragchat.retrieval.wording import NO_RERANKER, confidence_of, rerank_status
from ragchat.settings import RetrievalSettings
from ragchat.vectors.registry import ActiveSpace, SpaceRegistry
from ragchat.vectors.store import Space

HYBRID_ARM_DEPTH = 50  # each arm contributes at least this many ranks to the fusion
_SCORE_KIND: dict[SearchMode, ScoreKind] = {
    SearchMode.vector: "similarity",
    SearchMode.keyword: "bm25 (normalised)",
    SearchMode.hybrid: "fused",
}
_QUERY_CACHE_SIZE = 512


class Reranker(Protocol):
    async def rerank_with_status(self, query: str, candidates: list[ChunkHit], limit: int) -> Reranked:
        """Hits sorted by `score`: `trace.rerank_score` blended with the retrieval position
        (RERANK_RETRIEVAL_WEIGHT), at most `limit`, and how many the LLM scored (the unscored ones follow in
        retrieval order; none scored: the retrieval order)."""
        ...


def monotone(hits: list[ChunkHit]) -> list[ChunkHit]:
    """Reranked hits say so in `score_kind`; no hit's score is above the one before it (candidates the rerank
    deadline left unscored keep their retrieval score, capped by the last scored one)."""
    out: list[ChunkHit] = []
    ceiling = 1.0
    for hit in hits:
        update: dict[str, Any] = {}
        if hit.trace.rerank_score is not None:
            update["score_kind"] = "rerank"
        if hit.score > ceiling:
            update["score"] = ceiling
        out.append(hit.model_copy(update=update) if update else hit)
        ceiling = min(ceiling, out[-1].score)
    return out


def _candidates(n: int) -> dict[str, Any]:
    """A span's attribute for the candidates an arm ranks (a dotted name, so passed as keywords)."""
    return {"ragchat.candidates": n}


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


class Searcher:
    """Implements `ragchat.core.search.SearchService` and `ragchat.core.matches.DocumentFinder`."""

    def __init__(
        self,
        pool: Pool,
        spaces: SpaceRegistry,
        settings: RetrievalSettings,
        reranker: Reranker | None = None,
        reads: ReadRouter | None = None,
        expander: Expander | None = None,
    ) -> None:
        self.pool = pool
        self.reads = reads or ReadRouter(pool)  # searches run on a read replica when there is a usable one
        self.spaces = spaces
        self.settings = settings
        self.reranker = reranker
        self.expander = expander
        self._vectors: OrderedDict[tuple[int, str], np.ndarray] = OrderedDict()

    async def embed_query(self, active: ActiveSpace, query: str) -> np.ndarray:
        key = (active.space.id, query)
        cached = self._vectors.get(key)
        if cached is not None:
            self._vectors.move_to_end(key)
            return cached
        vector = (await active.embedder.embed_queries([query]))[0]
        if vector.shape[0] != active.space.dim:
            raise EmbeddingError(
                f"{active.embedder.model_name} returned {vector.shape[0]}-dimension vectors but the stored ones "
                f"({active.space.label}) have {active.space.dim}: run `ragchat reembed` to rebuild them."
            )
        self._vectors[key] = vector
        if len(self._vectors) > _QUERY_CACHE_SIZE:
            self._vectors.popitem(last=False)
        return vector

    async def search(
        self,
        query: str,
        *,
        principal: Principal,
        options: SearchOptions,
    ) -> SearchResult:
        """Search with `options` as resolved by the entry point (`ragchat.core.options`): nothing is parsed or
        defaulted here. The ranking runs on a read replica when one is usable (`ReadRouter`), else the primary."""
        started = time.perf_counter()
        return await self.reads.run(
            principal.user_id, lambda pool: self._search(pool, query, principal, options, started)
        )

    async def _search(
        self, pool: Pool, query: str, principal: Principal, options: SearchOptions, started: float
    ) -> SearchResult:
        """The search with every query on `pool` (run again on the primary when a replica fails)."""
        s = self.settings
        search_mode, limit, filters = options.mode, options.limit, options.filters
        want_rerank = options.rerank
        do_rerank = bool(want_rerank) and self.reranker is not None
        fetch = limit * max(1, s.rerank_candidates_factor) if do_rerank else limit
        timings = Timings()
        text = query.replace("\x00", " ").strip()  # Postgres text cannot hold NUL
        active = await self.spaces.active()
        scope = await self._scope(pool, principal)
        if not text:
            return self._result(
                text, search_mode, [], timings, started, await self._has_embeddings(pool, active, scope)
            )

        depth = max(fetch, HYBRID_ARM_DEPTH) if search_mode is SearchMode.hybrid else fetch
        expansion = await self._expand(text, options, timings)
        qvec_task = asyncio.create_task(self._timed_embed(active, text, timings))
        vtext, search_vec = vector_text(text, expansion), qvec_task  # hyde: the query and the passage, embedded
        tasks: dict[str, asyncio.Task[Any]] = {}
        if search_mode in (SearchMode.vector, SearchMode.hybrid) and active is not None:
            if vtext != text:
                search_vec = asyncio.create_task(self._timed_embed(active, vtext, timings))
            tasks["vector"] = asyncio.create_task(
                self._vector(pool, active.space, search_vec, scope, depth, filters, timings)
            )
        if search_mode in (SearchMode.keyword, SearchMode.hybrid):
            ktext = keyword_text(text, expansion)  # keywords: the query plus the extra terms
            tasks["keyword"] = asyncio.create_task(self._keyword(pool, ktext, scope, depth, filters, timings))
        try:
            await asyncio.gather(*tasks.values())
            try:
                qvec = await qvec_task
            except EmbeddingError:
                if search_mode is not SearchMode.keyword:
                    raise
                qvec = None  # keyword mode only shows the similarity: answer without it
        except BaseException:
            for task in [qvec_task, search_vec, *tasks.values()]:
                task.cancel()
            raise

        fuse_start = time.perf_counter()
        vec = tasks["vector"].result() if "vector" in tasks else []
        found: KeywordHits = tasks["keyword"].result() if "keyword" in tasks else KeywordHits([], ())
        kw = found.hits
        if search_mode is SearchMode.hybrid:
            weight = vector_weight(s, found.configs)
            fused = fuse(vec, kw, method=options.fusion, k=s.rrf_k, vector_weight=weight, depth=depth)
            fused = fused[:fetch]
        elif search_mode is SearchMode.vector:
            fused = vector_only(vec)
        else:
            fused = keyword_only(kw)
        hits = await self._hydrate(pool, active, scope, fused, qvec, kind=_SCORE_KIND[search_mode])
        timings.fuse_ms = _ms(fuse_start)

        status = RerankStatus(requested=bool(want_rerank))
        if do_rerank and hits:
            assert self.reranker is not None
            rerank_start = time.perf_counter()
            outcome = await self.reranker.rerank_with_status(text, hits, limit)
            timings.rerank_ms = _ms(rerank_start)
            status = rerank_status(
                True,
                outcome.scored,
                outcome.candidates,
                outcome.scorer,
                skipped=outcome.skipped,
                method=outcome.method,
                note=outcome.note,
            )
            if status.reranked:  # none scored: keep the retrieval order and scores as they were
                hits = outcome.hits
        elif want_rerank and self.reranker is None:
            status = RerankStatus(requested=True, warning=NO_RERANKER)
        hits = monotone(hits[:limit])
        has_embeddings = True if hits else await self._has_embeddings(pool, active, scope)
        # where the embedding model does not understand the scope's language, its similarities say little
        # (Spanish text sits 0.4-0.6 from any Spanish question): the question's words found decide too
        coverage = found.coverage if other_languages(s, found.configs) else None
        return self._result(
            text, search_mode, hits, timings, started, has_embeddings, status, expansion, coverage=coverage
        )

    async def _expand(self, text: str, options: SearchOptions, timings: Timings) -> ExpansionStatus:
        """The query expansion asked for (an honest status when it failed or nothing can expand)."""
        if options.expansion == "off":
            return ExpansionStatus()
        if self.expander is None:
            return ExpansionStatus(requested=options.expansion, warning=NO_EXPANDER)
        start = time.perf_counter()
        with tracing.span("search.expand"):
            expansion = await self.expander.expand(text, options.expansion)
        timings.expand_ms = _ms(start)
        return expansion

    async def find_documents(self, request: MatchRequest, *, principal: Principal) -> DocumentMatches:
        """Every readable document with a matching passage, paged (server/ragchat/retrieval/exhaustive.py); on a
        read replica when one is usable, as search is."""

        async def run(pool: Pool) -> DocumentMatches:
            return await find_documents(pool, await self._scope(pool, principal), request, self.settings)

        with tracing.span("search.documents"):
            return await self.reads.run(principal.user_id, run)

    async def _timed_embed(self, active: ActiveSpace | None, text: str, timings: Timings) -> np.ndarray | None:
        if active is None:
            return None
        start = time.perf_counter()
        with tracing.span("search.embed"):
            vector = await self.embed_query(active, text)
        timings.embed_ms = _ms(start)
        return vector

    async def _vector(
        self,
        pool: Pool,
        space: Space,
        qvec_task: asyncio.Task[np.ndarray | None],
        scope: ReadScope,
        n: int,
        filters: SearchFilters | None,
        t: Timings,
    ) -> list[tuple[int, float]]:
        qvec = await qvec_task
        if qvec is None:
            return []
        start = time.perf_counter()
        with tracing.span("search.vector", **_candidates(n)):
            rows = await self._vector_rows(pool, space, qvec, scope, n, filters)
        t.vector_ms = _ms(start)
        return rows

    async def _vector_rows(
        self, pool: Pool, space: Space, qvec: np.ndarray, scope: ReadScope, n: int, filters: SearchFilters | None
    ) -> list[tuple[int, float]]:
        async with pool.connection() as conn:
            return await vector_search(
                conn,
                space,
                qvec,
                scope=scope,
                n=n,
                filters=filters,
                ef_search=self.settings.hnsw_ef_search,
                exact_max_rows=self.settings.exact_scan_max_rows,
                ef_growth=self.settings.hnsw_ef_growth,
                filtered_ef_factor=self.settings.hnsw_filtered_ef_factor,
            )

    async def _keyword(
        self, pool: Pool, text: str, scope: ReadScope, n: int, filters: SearchFilters | None, t: Timings
    ) -> KeywordHits:
        start = time.perf_counter()
        with tracing.span("search.keyword", **_candidates(n)):
            async with pool.connection() as conn:
                rows = await keyword_arm(
                    conn,
                    text,
                    scope=scope,
                    n=n,
                    filters=filters,
                    scorer=self.settings.keyword_scorer,
                    k1=self.settings.bm25_k1,
                    b=self.settings.bm25_b,
                    candidates=self.settings.keyword_candidates,
                )
        t.keyword_ms = _ms(start)
        return rows

    async def _hydrate(
        self,
        pool: Pool,
        active: ActiveSpace | None,
        scope: ReadScope,
        fused: list[Fused],
        qvec: np.ndarray | None,
        *,
        kind: ScoreKind,
    ) -> list[ChunkHit]:
        """The hits in `fused` order, `score` the fused figure (see `kind`), the cosine in `similarity`."""
        if not fused:
            return []
        if active is None or qvec is None:
            similarity: sql.Composable = sql.SQL("NULL::float8")
            join: sql.Composable = sql.SQL("")
        else:
            similarity = sql.SQL("1 - ({} <=> %(q)s)").format(active.space.vector_expr("e"))
            join = sql.SQL("LEFT JOIN chunk_embeddings e ON e.space_id = {} AND e.chunk_id = c.id").format(
                sql.Literal(active.space.id)
            )
        query = sql.SQL(
            """SELECT c.id, c.document_id, c.chunk_index, c.content, c.page, c.section, c.content_hash, c.location,
                      d.filename, d.title, d.metadata, {} AS similarity
               FROM document_chunks c JOIN documents d ON d.id = c.document_id {}
               WHERE c.id = ANY(%(ids)s) AND {}"""
        ).format(similarity, join, readable_chunks(scope, "c.owner_id", "c.document_id", "c.share_group"))
        params = {**scope_params(scope), "q": qvec, "ids": [f.id for f in fused]}
        async with pool.connection() as conn:
            rows = await (await conn.execute(query, params)).fetchall()
        by_id = {r["id"]: r for r in rows}
        hits: list[ChunkHit] = []
        for f in fused:
            r = by_id.get(f.id)
            if r is None:  # deleted between ranking and hydration
                continue
            cosine = None if r["similarity"] is None else min(1.0, max(0.0, float(r["similarity"])))
            hits.append(
                ChunkHit(
                    id=r["id"],
                    document_id=r["document_id"],
                    filename=r["filename"],
                    title=r["title"],
                    page=r["page"],
                    section=r["section"],
                    chunk_index=r["chunk_index"],
                    content=r["content"],
                    content_hash=r["content_hash"],
                    metadata=r["metadata"] or {},
                    location=r["location"],
                    url=(r["metadata"] or {}).get("source_url"),
                    similarity=cosine,
                    score=min(1.0, max(0.0, f.score)),
                    score_kind=kind,
                    trace=Trace(
                        vector_rank=f.vector_rank,
                        vector_score=f.vector_score,
                        keyword_rank=f.keyword_rank,
                        keyword_score=f.keyword_score,
                        fused_score=f.score if kind == "fused" else None,
                        similarity=cosine,
                    ),
                )
            )
        return hits

    async def _scope(self, pool: Pool, principal: Principal) -> ReadScope:
        async with pool.connection() as conn:
            return await read_chunk_scope(conn, principal.user_id)

    async def _has_embeddings(self, pool: Pool, active: ActiveSpace | None, scope: ReadScope) -> bool:
        if active is None:
            return False
        query = sql.SQL("SELECT EXISTS (SELECT 1 FROM chunk_embeddings e WHERE e.space_id = {} AND {}) AS e").format(
            sql.Literal(active.space.id),
            readable_chunks(scope, "e.owner_id", "e.document_id"),
        )
        async with pool.connection() as conn:
            row = await (await conn.execute(query, scope_params(scope))).fetchone()
        return bool(row and row["e"])

    def confidence(self, hits: list[ChunkHit], coverage: float | None = None) -> Confidence:
        """The best similarity's tier; insufficient too when `coverage` (the keyword arm's, for a scope in
        languages the embedding model does not cover) is below CONFIDENCE_KEYWORD_FLOOR."""
        sims = [h.similarity for h in hits if h.similarity is not None]
        s = self.settings
        low_coverage = coverage is not None and coverage < s.confidence_keyword_floor
        return confidence_of(
            max(sims) if sims else None,
            high=s.confidence_high,
            moderate=s.confidence_moderate,
            floor=s.confidence_floor,
            uncovered=coverage if low_coverage else None,
        )

    def _result(
        self,
        query: str,
        mode: SearchMode,
        hits: list[ChunkHit],
        timings: Timings,
        started: float,
        has_embeddings: bool,
        rerank: RerankStatus | None = None,
        expansion: ExpansionStatus | None = None,
        *,
        coverage: float | None = None,
    ) -> SearchResult:
        rerank = rerank or RerankStatus()
        timings.total_ms = _ms(started)
        for stage, ms in timings.model_dump().items():
            if ms or stage == "total_ms":
                metrics.SEARCH_SECONDS.labels(mode.value, stage.removesuffix("_ms")).observe(ms / 1000)
        return SearchResult(
            query=query,
            mode=mode.value,  # type: ignore[arg-type]
            reranked=rerank.reranked,
            rerank=rerank,
            expansion=expansion or ExpansionStatus(),
            chunks=hits,
            timings=timings,
            confidence=self.confidence(hits, coverage),
            has_embeddings=has_embeddings,
        )
