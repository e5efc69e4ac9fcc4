"""Search latency per mode at 10k … 1M chunks, HNSW recall@10 against exact search, index builds, sizes, memory.

Corpus: the SciFact abstracts ingested once through the real pipeline (real embeddings) into a persistent
bench cluster (`bench/.data/`, gitignored), kept aside in a `bench_real_chunks` table. Each size gets a database
of its own in that cluster (`bench_<size>`, migrated by the runtime): the real chunks (the first `size` of them
when the corpus is bigger), then synthetic chunks up to `size` — each a neighbour of a random real vector
(gaussian noise, renormalised) with content made of recombined real sentences — generated and COPYed in
batches (memory bounded by `--batch`) with the search indexes dropped and autovacuum off, then the GIN index
and the space's partial HNSW index are built (timed, `--maintenance-work-mem`, `--parallel-workers`). A rerun
with the same parameters finds the build recorded in that database and skips the load (bench/search_build.py).

Per size and mode: SciFact queries after warm-up ones, latency of `Searcher.search()` (the runtime's searcher)
including the query embedding (the searcher's query cache is cleared before every call), a common-words keyword
query, HNSW recall@10 vs exact search (exact top-10s from one streamed pass), DB-only latencies for a few
`hnsw_ef_search` / `keyword_candidates` values, database/table/index sizes, the Postgres processes' RSS/PSS and
this process's RSS, and the load average around the build and the measurement (the machine is shared).
JSON to `--json`, a Markdown report beside it (`--markdown`); bench/search_pgvector.py's comparison with a
newer pgvector is appended when its JSON is there.

    python bench/search.py --sizes 100000,1000000 --json bench/results/search_1m.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import psycopg
from pgvector.psycopg import register_vector_async
from psycopg import sql
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb

from bench.common import (
    DATA,
    RESULTS,
    ROOT,
    bench_runtime,
    bench_settings,
    cpu_context,
    load_embedder,
    pct,
    postmaster_pid,
    read_jsonl,
    table,
    write_json,
)
from bench.search_build import (
    ChunkRow,
    Shape,
    build_size,
    copy_chunks,
    copy_documents,
    ensure_database,
    exact_top_ids,
    memory,
    size_db_uri,
    synthetic_batches,
)
from bench.search_report import markdown, pgvector_section
from bench.search_scale import (
    READER,
    db_structure,
    filtered,
    parent_similarities,
    reader_vs_owner,
    real_growth,
    real_structure,
    scale_markdown,
)
from ragchat.core.options import options_of
from ragchat.core.principal import Principal
from ragchat.db.pool import Conn
from ragchat.documents.chunking.sentences import content_hash, embedding_text
from ragchat.readscope.sql import ReadScope
from ragchat.retrieval import keyword as kw
from ragchat.retrieval.keyword import keyword_search
from ragchat.retrieval.search import HYBRID_ARM_DEPTH, Searcher
from ragchat.retrieval.vector import EfPolicy, vector_search
from ragchat.runtime import Overrides, Runtime, open_runtime
from ragchat.settings import Settings
from ragchat.vectors.store import Space, as_array

BENCH_OWNER = uuid.UUID("00000000-0000-0000-0000-0000000be9c4")
PRINCIPAL = Principal(BENCH_OWNER, name="bench")
SYNTH_NS = uuid.UUID("5b3f1c2e-8d4a-4e0b-9c71-2f6a1d0e9b33")
GIN_INDEX = "document_chunks_search_idx"
MODES = ("vector", "keyword", "hybrid")
TARGETS_P95 = {"vector": 15.0, "keyword": 20.0, "hybrid": 30.0, "keyword_common": 20.0}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


class Fp32QueryEmbedder:
    """The same model with queries embedded in float32, one at a time, as before the bf16 + batching path
    (through `embed_documents`): the comparison row for `QUERY_EMBED_PRECISION=fp32`. Same provider and
    model name, so the space registry of a runtime built over it picks it for the active space."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.model_name = inner.model_name
        self.max_tokens = inner.max_tokens

    async def dimension(self) -> int:
        return await self.inner.dimension()

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return await self.inner.embed_documents(texts)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.inner.embed_documents(texts)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    async def close(self) -> None:
        pass


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


async def admin(uri: str) -> Conn:
    conn = await psycopg.AsyncConnection[DictRow].connect(uri, autocommit=True, row_factory=dict_row)
    await register_vector_async(conn)
    return conn


async def fetch(conn: Conn, sql: Any, params: Any = None) -> list[dict[str, Any]]:
    return await (await conn.execute(sql, params)).fetchall()


# ------------------------------------------------------------------------------------------ the real corpus


async def meta_get(conn: Conn, key: str) -> Any:
    rows = await fetch(conn, "SELECT value FROM bench_meta WHERE key = %s", (key,))
    return rows[0]["value"] if rows else None


async def ensure_corpus(conn: Conn, rt: Runtime, limit: int | None) -> dict[str, Any]:
    """Ingest SciFact through the runtime's document service once; later runs reuse `bench_real_chunks`.

    A bench database made before embedding spaces (vectors in `document_chunks.embedding`) is migrated by the
    runtime on open and reused as it is: `bench_real_chunks` keeps its own copy of the vectors."""
    await conn.execute("CREATE TABLE IF NOT EXISTS bench_meta (key text PRIMARY KEY, value jsonb NOT NULL)")
    corpus = await meta_get(conn, "corpus")
    have_real = (await fetch(conn, "SELECT to_regclass('bench_real_chunks') IS NOT NULL AS t"))[0]["t"]
    if corpus is not None and corpus.get("limit") == limit and have_real:
        log(f"reusing the ingested corpus: {corpus['documents']} documents, {corpus['chunks']} chunks")
        return corpus
    log("ingesting the SciFact corpus through the pipeline (once; several minutes) ...")
    await conn.execute(
        "TRUNCATE document_chunks, chunk_embeddings, document_blobs, documents, "
        "bm25_groups, bm25_document_groups, bm25_group_terms, "
        "bm25_group_stats RESTART IDENTITY CASCADE"
    )
    await conn.execute("DROP TABLE IF EXISTS bench_real_chunks")
    await conn.execute("INSERT INTO users (id, name) VALUES (%s, 'bench') ON CONFLICT (id) DO NOTHING", (BENCH_OWNER,))
    path = DATA / "corpus.jsonl"
    lines = [ln for ln in path.read_bytes().splitlines(keepends=True) if ln.strip()]
    data = b"".join(lines[:limit] if limit else lines)
    started = time.perf_counter()
    registered = await rt.documents.ingestion.register_bulk(PRINCIPAL, path.name, data)
    ids = [r.document_id for r in registered if r.document_id]
    last = [time.perf_counter()]

    def report(p: Any) -> None:
        if time.perf_counter() - last[0] > 30:
            last[0] = time.perf_counter()
            el = last[0] - started
            log(f"  {p.documents_done}/{len(ids)} documents, {p.chunks_done} chunks, {p.chunks_done / el:.1f}/s")

    progress = await rt.documents.ingestion.ingest(ids, on_progress=report)
    elapsed = time.perf_counter() - started
    space = (await rt.spaces.for_ingest()).space
    await conn.execute(
        """CREATE TABLE bench_real_chunks AS
           SELECT c.id AS src_id, c.document_id, c.chunk_index, c.title, c.content, c.page, c.section,
                  c.token_count, c.content_hash, e.embedding, %s::text AS embedding_model
           FROM document_chunks c JOIN chunk_embeddings e ON e.chunk_id = c.id AND e.space_id = %s
           ORDER BY c.id""",
        (space.model, space.id),
    )
    corpus = {
        "documents": progress.documents_done,
        "failed": progress.documents_failed,
        "chunks": progress.chunks_done,
        "ingest_s": round(elapsed, 1),
        "chunks_per_s": round(progress.chunks_done / elapsed, 2),
        "limit": limit,
    }
    await conn.execute(
        """INSERT INTO bench_meta (key, value) VALUES ('corpus', %s)
           ON CONFLICT (key) DO UPDATE SET value = excluded.value""",
        (Jsonb(corpus),),
    )
    log(f"ingested {corpus['chunks']} chunks in {elapsed:.0f}s ({corpus['chunks_per_s']} chunks/s)")
    return corpus


# ------------------------------------------------------------------------------------------ synthetic chunks


class Synthesizer:
    """Synthetic chunks: neighbours of real vectors, content recombined from real sentences, in batches."""

    def __init__(self, real: list[dict[str, Any]], noise: float, seed: int, kind: str = "shaped") -> None:
        self.titles = [r["title"] for r in real]
        self.vectors = np.stack([as_array(r["embedding"]) for r in real])
        self.lengths = [len(r["content"]) for r in real]
        self.sentences = [s.strip() for r in real for s in _SENTENCE_END.split(r["content"]) if len(s.strip()) > 20]
        self.noise = noise
        self.seed = seed
        self.kind = kind
        # shaped: the real vectors' covariance, parent similarities drawn from real top-1 neighbour similarities;
        # every document in a collection shared with READER (the reader-vs-owner rows at the same size)
        shaped = kind in ("shaped", "tree")
        self.shape = Shape(self.vectors, parent_similarities(self.vectors, 2000, seed)) if shaped else None
        self.reader = READER if shaped else None
        self.namespace = SYNTH_NS if kind == "isotropic" else uuid.uuid5(SYNTH_NS, kind)

    def batches(self, count: int, batch: int, skip: set[int] | None = None) -> Iterator[tuple[int, list[ChunkRow]]]:
        return synthetic_batches(
            self.vectors,
            self.titles,
            self.lengths,
            self.sentences,
            self.noise,
            self.seed,
            BENCH_OWNER,
            self.namespace,
            count,
            batch + batch % 2,  # even: a document's two chunks stay in one batch
            lambda title, content: content_hash(embedding_text(title, content)),
            skip,
            self.shape,
            tree=self.kind == "tree",
        )


async def live_insert_sample(conn: Conn, space: Space, synth: Synthesizer, n: int) -> dict[str, Any]:
    """COPY `n` more synthetic rows with the HNSW and GIN indexes live (the cost of not bulk-building), then
    delete them again."""
    live = Synthesizer.__new__(Synthesizer)
    live.__dict__.update(synth.__dict__, seed=synth.seed + 1, namespace=uuid.uuid5(SYNTH_NS, "live"))
    _, rows = next(live.batches(n, n))
    await drop_live_documents(conn, live.namespace, n)
    docs = sorted({r[0] for r in rows})
    await copy_documents(conn, BENCH_OWNER, [(d, f"live/{d}") for d in docs])
    start = time.perf_counter()
    await copy_chunks(conn, space, rows)
    seconds = time.perf_counter() - start
    await drop_live_documents(conn, live.namespace, n)
    return {"rows": n, "seconds": round(seconds, 2), "ms_per_row": round(1000 * seconds / n, 3)}


async def drop_live_documents(conn: Conn, namespace: uuid.UUID, n: int) -> None:
    ids = [uuid.uuid5(namespace, f"doc-{j}") for j in range((n + 1) // 2)]
    await conn.execute("DELETE FROM documents WHERE owner_id = %s AND id = ANY(%s)", (BENCH_OWNER, ids))


# ------------------------------------------------------------------------------------------ measurements


async def time_searcher(
    searcher: Searcher, queries: list[str], warmup: list[str], mode: str, limit: int = 10
) -> tuple[list[float], dict[str, dict[str, float]]]:
    for q in warmup:
        searcher._vectors.clear()
        await searcher.search(q, principal=PRINCIPAL, options=options_of(searcher.settings, limit=limit, mode=mode))
    lat: list[float] = []
    parts: dict[str, list[float]] = {"embed_ms": [], "vector_ms": [], "keyword_ms": [], "fuse_ms": []}
    for q in queries:
        searcher._vectors.clear()  # the query embedding is part of what we measure
        start = time.perf_counter()
        result = await searcher.search(
            q, principal=PRINCIPAL, options=options_of(searcher.settings, limit=limit, mode=mode)
        )
        lat.append((time.perf_counter() - start) * 1000)
        for k in parts:
            parts[k].append(getattr(result.timings, k))
    return lat, {k: pct(v) for k, v in parts.items() if any(v)}


async def exact_ids(conn: Conn, space: Space, qvec: np.ndarray, n: int) -> list[int]:
    query = sql.SQL(
        """SELECT e.chunk_id AS id FROM chunk_embeddings e WHERE e.space_id = {} AND e.owner_id = %s
           ORDER BY ({} <=> %s) + 0 LIMIT %s"""
    ).format(sql.Literal(space.id), space.vector_expr("e"))
    rows = await fetch(conn, query, (BENCH_OWNER, qvec, n))  # type: ignore[arg-type]
    return [r["id"] for r in rows]


async def recall_and_latency(
    rt: Runtime, conn: Conn, space: Space, qvecs: list[np.ndarray], ef_values: list[int], exact_timing: int = 30
) -> dict[str, Any]:
    """recall@10 of `vector_search` vs exact, and its DB-only latency (n=10 and n=50), per ef_search."""
    truth = await exact_top_ids(conn, space, BENCH_OWNER, qvecs, 10)
    exact_lat = []
    for q in qvecs[:exact_timing]:
        start = time.perf_counter()
        await exact_ids(conn, space, q, 10)
        exact_lat.append((time.perf_counter() - start) * 1000)
    out: dict[str, Any] = {"exact_scan_db": pct(exact_lat)}
    async with rt.pool.connection() as pc:
        for ef in ef_values:
            hits, lat10, lat50, short = 0, [], [], 0
            for q, t in zip(qvecs, truth, strict=True):
                start = time.perf_counter()
                got = await vector_search(pc, space, q, scope=ReadScope(BENCH_OWNER), n=10, ef_search=ef)
                lat10.append((time.perf_counter() - start) * 1000)
                hits += len({i for i, _ in got} & set(t))
                start = time.perf_counter()
                got50 = await vector_search(
                    pc, space, q, scope=ReadScope(BENCH_OWNER), n=HYBRID_ARM_DEPTH, ef_search=ef
                )
                lat50.append((time.perf_counter() - start) * 1000)
                short += len(got50) < HYBRID_ARM_DEPTH
            out[str(ef)] = {
                "recall_at_10": round(hits / (10 * len(qvecs)), 4),
                "db_n10": pct(lat10),
                "db_n50": pct(lat50),
            }
    return out


async def keyword_db(
    rt: Runtime, queries: list[str], settings: Settings, candidates: int, n: int = HYBRID_ARM_DEPTH
) -> dict[str, float]:
    lat = []
    async with rt.pool.connection() as conn:
        for q in queries:
            start = time.perf_counter()
            await keyword_search(
                conn,
                q,
                scope=ReadScope(BENCH_OWNER),
                n=n,
                scorer=settings.retrieval.keyword_scorer,
                k1=settings.retrieval.bm25_k1,
                b=settings.retrieval.bm25_b,
                candidates=candidates,
            )
            lat.append((time.perf_counter() - start) * 1000)
    return pct(lat)


async def explore_searcher(
    rt: Runtime,
    settings: Settings,
    queries: list[str],
    warmup: list[str],
    common: str,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """End-to-end Searcher latency with other KEYWORD_CANDIDATES values: the real code, other settings, built by
    the composition root over the bench runtime's pool, embedder and LLM."""
    out: dict[str, Any] = {}
    for cands in args.explore_searcher_candidates:
        other = settings.model_copy(update={"keyword_candidates": cands})
        async with open_runtime(other, Overrides(pool=rt.pool, embedder=rt.embedder, llm=rt.llm)) as ort:
            res: dict[str, Any] = {}
            for mode in ("keyword", "hybrid"):
                lat, _ = await time_searcher(ort.searcher, queries, warmup, mode)
                res[mode] = pct(lat)
            lat, _ = await time_searcher(ort.searcher, [common] * args.common_reps, [common] * 3, "keyword")
            res["keyword_common"] = pct(lat)
        out[f"candidates {cands}"] = res
    return out


async def common_words(conn: Conn, k: int) -> tuple[str, list[dict[str, Any]]]:
    """A query made of the corpus's k highest-df lexemes that survive `to_tsvector` unchanged."""
    rows = await fetch(
        conn,
        """SELECT t.term, sum(t.df) AS df FROM bm25_group_terms t JOIN bm25_groups g ON g.id = t.group_id
           WHERE g.owner_id = %s GROUP BY t.term ORDER BY df DESC, t.term LIMIT 50""",
        (BENCH_OWNER,),
    )
    chosen = []
    for r in rows:
        back = await fetch(conn, "SELECT array_agg(lexeme) AS l FROM unnest(to_tsvector('english', %s))", (r["term"],))
        if back[0]["l"] == [r["term"]]:
            chosen.append(r)
        if len(chosen) == k:
            break
    return " ".join(r["term"] for r in chosen), chosen


async def explain_keyword(conn: Conn, query: str, settings: Settings, n: int) -> list[str]:
    """EXPLAIN ANALYZE of the keyword arm's main BM25 statement, rebuilt the way `keyword_search` builds it."""
    try:
        terms, _n, avgdl = await kw.query_terms(conn, query, ReadScope(BENCH_OWNER))
        chosen = kw.candidate_terms(terms, settings.retrieval.keyword_candidates)
        plans = []
        tsqs = []
        if len(chosen) == 1 and chosen[0].df > settings.retrieval.keyword_candidates and len(terms) > 1:
            tsqs.append(("and-of-rarest", kw.and_query([t.term for t in terms[:4]])))
        tsqs.append(("or-of-chosen", kw.or_query([t.term for t in chosen])))
        for label, tsq in tsqs:
            owned = sql.SQL("c.owner_id = %(owner)s")
            statement = sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + kw._BM25_SQL.format(where=owned)
            params = {
                "owner": BENCH_OWNER,
                "tsq": tsq,
                "n": n,
                "cap": max(settings.retrieval.keyword_candidates, n),
                "k1": settings.retrieval.bm25_k1,
                "b": settings.retrieval.bm25_b,
                "avgdl": avgdl,
                "terms": [t.term for t in terms],
                "idfs": [t.idf for t in terms],
            }
            rows = await fetch(conn, statement, params)
            plans.append(f"-- {label}: {tsq[:120]} (terms df: {[t.df for t in terms]})")
            plans.extend(r["QUERY PLAN"] for r in rows)
        return plans
    except Exception as exc:  # the keyword module's internals changed: the latency numbers still stand
        return [f"could not rebuild the keyword SQL: {type(exc).__name__}: {exc}"]


def _short_vectors(plan: list[dict[str, Any]]) -> list[str]:
    # a query vector literal is 5 kB of digits: keep the plan readable
    return [re.sub(r"'\[[-0-9.e,]{40,}\]'", "'[…]'", r["QUERY PLAN"]) for r in plan]


async def explain_vector(conn: Conn, space: Space, qvec: np.ndarray, ef: int, n: int) -> list[str]:
    """EXPLAIN ANALYZE of the vector arm's statement, as `vector_search` builds it (no filters)."""
    distance = sql.SQL("{} <=> %(q)s").format(space.vector_expr("e"))
    indexed = sql.SQL("{} <=> {}").format(space.index_expr("e"), space.query_expr("q"))
    query = sql.SQL(
        "EXPLAIN (ANALYZE, BUFFERS) SELECT e.chunk_id AS id, {} AS distance FROM chunk_embeddings e "
        "WHERE e.space_id = {} AND e.owner_id = %(owner)s ORDER BY {} LIMIT %(n)s"
    ).format(distance, sql.Literal(space.id), indexed)
    async with conn.transaction():
        await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
        rows = await fetch(conn, query, {"q": qvec, "owner": BENCH_OWNER, "n": n})  # type: ignore[arg-type]
    return _short_vectors(rows)


async def explain_hydrate(conn: Conn, space: Space, qvec: np.ndarray, ids: list[int]) -> list[str]:
    """EXPLAIN ANALYZE of the hydration statement as `Searcher._hydrate` builds it (chunks + documents + the
    similarity from the space's vectors)."""
    query = sql.SQL(
        """EXPLAIN (ANALYZE, BUFFERS)
           SELECT c.id, c.document_id, c.chunk_index, c.content, c.page, c.section, c.content_hash,
                  d.filename, d.title, d.metadata, 1 - ({} <=> %(q)s) AS similarity
           FROM document_chunks c JOIN documents d ON d.id = c.document_id
           LEFT JOIN chunk_embeddings e ON e.space_id = {} AND e.chunk_id = c.id
           WHERE c.id = ANY(%(ids)s)"""
    ).format(space.vector_expr("e"), sql.Literal(space.id))
    return _short_vectors(await fetch(conn, query, {"q": qvec, "ids": ids}))  # type: ignore[arg-type]


async def prewarm(conn: Conn, space: Space) -> dict[str, Any]:
    """Read the search's relations into shared_buffers (pg_prewarm), as a server that has been answering for a
    while has them: the vectors' table, the chunk table's TOAST and heap, then the GIN and HNSW indexes (read
    last, so they stay when shared_buffers cannot hold everything). Returns the blocks read per relation and
    the buffers' size."""
    await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    toast = await fetch(
        conn, "SELECT reltoastrelid::regclass::text AS t FROM pg_class WHERE relname = 'document_chunks'"
    )
    rels = ["chunk_embeddings", *([toast[0]["t"]] if toast and toast[0]["t"] != "-" else [])]
    rels += ["document_chunks", GIN_INDEX, space.index_relname]  # the most used last: evicted last
    out: dict[str, Any] = {"shared_buffers": (await fetch(conn, "SHOW shared_buffers"))[0]["shared_buffers"]}
    for rel in rels:
        row = await fetch(conn, "SELECT pg_prewarm(%s::regclass) AS blocks", (rel,))
        out[rel] = row[0]["blocks"]
    return out


async def measure_size(
    size: int,
    rt: Runtime,
    conn: Conn,
    space: Space,
    queries: list[str],
    warmup: list[str],
    args: argparse.Namespace,
) -> tuple[dict[str, Any], dict[str, Any]]:
    summary: dict[str, Any] = {}
    detail: dict[str, Any] = {}
    settings, embedder, searcher = rt.settings, rt.embedder, rt.searcher
    if args.prewarm:
        detail["prewarm"] = await prewarm(conn, space)
        log(f"  prewarmed: {detail['prewarm']}")
    for mode in MODES:
        log(f"  {size}: {mode} x{len(queries)}")
        lat, parts = await time_searcher(searcher, queries, warmup, mode)
        summary[mode] = pct(lat)
        detail[f"{mode}_timings"] = parts

    common, terms = await common_words(conn, args.common_terms)
    detail["common_query"] = {"query": common, "terms": terms}
    reps = [common] * args.common_reps
    lat, parts = await time_searcher(searcher, reps, [common] * 3, "keyword")
    summary["keyword_common"] = pct(lat)
    detail["keyword_common_timings"] = parts
    lat, parts = await time_searcher(searcher, reps, [common] * 3, "hybrid")
    detail["hybrid_common"] = pct(lat)
    detail["hybrid_common_timings"] = parts

    # embedding alone (the floor under every mode: Searcher embeds the query in all three), as the
    # Searcher runs it (embed_queries: bf16 where native) and in float32 (QUERY_EMBED_PRECISION=fp32)
    fp32 = Fp32QueryEmbedder(embedder)
    for label, emb_impl in (("embed_only", embedder), ("embed_only_fp32", fp32)):
        emb = []
        for q in queries[:100]:
            start = time.perf_counter()
            await emb_impl.embed_queries([q])
            emb.append((time.perf_counter() - start) * 1000)
        detail[label] = pct(emb)
    detail["query_precision"] = getattr(embedder, "query_precision", "fp32")
    detail["explore_fp32_query_embedding"] = {}
    async with open_runtime(settings, Overrides(pool=rt.pool, embedder=fp32, llm=rt.llm)) as one:
        for mode in MODES if args.fp32_explore else ():
            lat, _parts = await time_searcher(one.searcher, queries, warmup, mode)
            detail["explore_fp32_query_embedding"][mode] = pct(lat)

    qvecs = list(await embedder.embed_documents(queries[: args.recall_queries]))
    # the ef_search the searcher uses at this size (HNSW_EF_SEARCH grown by HNSW_EF_GROWTH, vector.EfPolicy)
    indexed = await fetch(
        conn, "SELECT reltuples FROM pg_class WHERE oid = to_regclass(quote_ident(%s))", (space.index_relname,)
    )
    policy = EfPolicy(settings.retrieval.hnsw_ef_search, settings.retrieval.hnsw_ef_growth)
    ef_now = policy.at(float(indexed[0]["reltuples"]) if indexed else 1.0)
    ef_values = sorted({settings.retrieval.hnsw_ef_search, ef_now, *args.explore_ef})
    rl = await recall_and_latency(rt, conn, space, qvecs, ef_values, args.exact_timing)
    detail["vector_db"] = rl
    detail["ef_search_effective"] = ef_now
    detail["recall_at_10"] = rl[str(ef_now)]["recall_at_10"]

    kwd: dict[str, Any] = {}
    for cands in sorted({settings.retrieval.keyword_candidates, *args.explore_candidates}):
        kwd[str(cands)] = {
            "queries_db_n50": await keyword_db(rt, queries, settings, cands),
            "common_db_n50": await keyword_db(rt, [common] * 20, settings, cands),
        }
    detail["keyword_db"] = kwd
    detail["explore_searcher"] = await explore_searcher(rt, settings, queries, warmup, common, args)
    if args.synthetic in ("shaped", "tree"):
        log(f"  {size}: neighbour structure, filtered searches, reader vs owner")
        detail["structure"] = await db_structure(
            conn, space, BENCH_OWNER, np.stack(qvecs), args.structure_sample, args.seed
        )
        shares = [int(x) for x in args.filter_shares.split(",") if x]
        detail["filtered"] = await filtered(conn, searcher, PRINCIPAL, space, queries, qvecs, shares)
        reader = Principal(READER, name="bench-reader")
        detail["reader_vs_owner"] = await reader_vs_owner(searcher, PRINCIPAL, reader, queries, warmup)
    top = [i for i, _ in await vector_search(conn, space, qvecs[0], scope=ReadScope(BENCH_OWNER), n=10)]
    detail["explain"] = {
        "keyword_common": await explain_keyword(conn, common, settings, HYBRID_ARM_DEPTH),
        "keyword_typical": await explain_keyword(conn, queries[0], settings, HYBRID_ARM_DEPTH),
        "vector_n50": await explain_vector(conn, space, qvecs[0], settings.retrieval.hnsw_ef_search, HYBRID_ARM_DEPTH),
        "hydrate_10": await explain_hydrate(conn, space, qvecs[0], top),
    }
    return summary, detail


async def pg_settings(conn: Conn) -> dict[str, str]:
    names = [
        "server_version",
        "shared_buffers",
        "work_mem",
        "effective_cache_size",
        "jit",
        "max_parallel_workers_per_gather",
        "max_parallel_maintenance_workers",
        "random_page_cost",
    ]
    rows = await fetch(conn, "SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s)", (names,))
    out = {r["name"]: f"{r['setting']}{(' ' + r['unit']) if r['unit'] else ''}" for r in rows}
    ext = await fetch(conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    out["pgvector"] = ext[0]["extversion"] if ext else "?"
    out["jit_available"] = str((await fetch(conn, "SELECT pg_jit_available() AS j"))[0]["j"])
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    settings = bench_settings(args.data_dir, db_pool_min=4)
    if args.ef_search is not None:
        settings = settings.model_copy(update={"hnsw_ef_search": args.ef_search})
    if args.keyword_candidates is not None:
        settings = settings.model_copy(update={"keyword_candidates": args.keyword_candidates})
    log(f"bench data dir: {args.data_dir}")
    records = read_jsonl(DATA / "queries.jsonl")
    texts = [r["text"] for r in records]
    random.Random(7).shuffle(texts)
    warmup, queries = texts[: args.warmup], texts[args.warmup : args.warmup + args.queries]
    out: dict[str, Any] = {"cpu_context_start": cpu_context()}
    details: dict[str, Any] = {}
    builds: dict[str, Any] = {}
    memory_by_size: dict[str, Any] = {}
    embedder = await asyncio.to_thread(load_embedder, settings)  # build_embedder(settings), warmed up
    try:
        async with bench_runtime(settings, embedder=embedder) as rt:
            assert rt.database is not None
            pm_pid = postmaster_pid(rt)
            conn = await admin(rt.database.uri)
            try:
                corpus = await ensure_corpus(conn, rt, args.corpus_limit)
                if args.prepare_only:
                    return {"corpus": corpus}
                real = await fetch(conn, "SELECT * FROM bench_real_chunks ORDER BY src_id")
                out["postgres"] = await pg_settings(conn)
            finally:
                await conn.close()
            synth = Synthesizer(real, args.noise, args.seed, args.synthetic)
            qv = np.stack(list(await embedder.embed_documents(queries[: args.recall_queries])))
            out["real_structure"] = real_structure(synth.vectors, qv, args.structure_sample, args.seed)
            out["real_growth"] = real_growth(synth.vectors, args.seed)
            for i, size in enumerate(sorted(args.sizes)):
                uri, dbname = size_db_uri(rt.database.uri, size, args.synthetic)
                await ensure_database(rt.database.uri, dbname)
                log(f"{size} chunks in database {dbname} ...")
                # the size's own database, migrated and served by the same runtime code (no second embedded
                # server: the URI points at the bench cluster); the embedder and the LLM are shared
                sized = settings.model_copy(update={"database_url": uri, "db_watchdog_interval_s": 0})
                async with open_runtime(sized, Overrides(embedder=rt.embedder, llm=rt.llm)) as srt:
                    space = (await srt.spaces.for_ingest()).space
                    sconn = await admin(uri)
                    try:
                        builds[str(size)] = b = await build_size(
                            sconn,
                            space,
                            size,
                            BENCH_OWNER,
                            real,
                            synth,
                            maintenance_work_mem=args.maintenance_work_mem,
                            parallel_workers=args.parallel_workers,
                            batch=args.batch,
                            connect=lambda uri=uri: admin(uri),
                            loaders=args.loaders,
                        )
                        log(f"  {b}")
                        if args.build_only:
                            continue
                        mem: dict[str, Any] = {"after_build": memory(pm_pid)}
                        load_before = [round(x, 2) for x in os.getloadavg()]
                        summary, detail = await measure_size(size, srt, sconn, space, queries, warmup, args)
                        detail["loadavg_measure_start"] = load_before
                        detail["loadavg_measure_end"] = [round(x, 2) for x in os.getloadavg()]
                        mem["after_measure"] = memory(pm_pid)
                        memory_by_size[str(size)] = mem
                        out[str(size)] = summary
                        details[str(size)] = detail
                        if i == 0 and args.live_sample:
                            log(f"  live-index insert sample: {args.live_sample} rows into the {size}-chunk table")
                            b["live_index_insert"] = await live_insert_sample(sconn, space, synth, args.live_sample)
                            # the deleted rows leave dead tuples in both indexes: the next run rebuilds this size
                            await sconn.execute("DELETE FROM bench_meta WHERE key = 'built'")
                        out["embedding_space"] = {"id": space.id, "label": space.label}
                    finally:
                        await sconn.close()
            if args.build_only:
                return {"build_only": True}
            largest = str(max(args.sizes))
            out["hnsw_recall_at_10"] = details[largest]["recall_at_10"]
            out["hnsw_ef_search"] = settings.retrieval.hnsw_ef_search
            out["hnsw_ef_growth"] = settings.retrieval.hnsw_ef_growth
            out["hnsw_filtered_ef_factor"] = settings.retrieval.hnsw_filtered_ef_factor
            out["ef_search_by_size"] = {s: d.get("ef_search_effective") for s, d in details.items()}
            out["keyword_candidates"] = settings.retrieval.keyword_candidates
            out["recall_at_10_by_size"] = {s: d["recall_at_10"] for s, d in details.items()}
            out["build"] = builds
            out["memory"] = memory_by_size
            out["corpus"] = {k: v for k, v in corpus.items() if k != "indexdefs"}
    finally:
        await embedder.close()
    out["details"] = details
    out["queries"] = {"measured": len(queries), "warmup": len(warmup), "recall": args.recall_queries}
    out["synthetic"] = {"kind": args.synthetic, "noise_sigma": args.noise, "seed": args.seed}
    return out


def report(out: dict[str, Any], sizes: list[int]) -> None:
    for size in sizes:
        s, d = out[str(size)], out["details"][str(size)]
        b = out["build"][str(size)]
        rows = []
        for mode in (*MODES, "keyword_common"):
            m = s[mode]
            parts = d.get(f"{mode}_timings", {})
            tgt = TARGETS_P95.get(mode)
            rows.append(
                [
                    mode,
                    m["p50_ms"],
                    m["p95_ms"],
                    m["p99_ms"],
                    parts.get("embed_ms", {}).get("p50_ms", "-"),
                    parts.get("vector_ms", {}).get("p50_ms", "-"),
                    parts.get("keyword_ms", {}).get("p50_ms", "-"),
                    parts.get("fuse_ms", {}).get("p50_ms", "-"),
                    f"≤{tgt:g}" + (" ok" if m["p95_ms"] <= tgt else " MISS"),
                ]
            )
        print()
        print(
            table(
                ["mode", "p50", "p95", "p99", "embed p50", "vector p50", "keyword p50", "hydrate p50", "p95 target"],
                rows,
                title=f"{size:,} chunks ({b['real_chunks']} real + {b['synthetic_chunks']} synthetic) — "
                f"Searcher.search() ms, embedding included; recall@10 = {d['recall_at_10']} "
                f"(ef_search {d.get('ef_search_effective', out['hnsw_ef_search'])}); embed alone p50/p95 "
                f"{d['embed_only']['p50_ms']}/{d['embed_only']['p95_ms']}",
            )
        )
        print(f"common-word query: {d['common_query']['query']!r}")
        one = d["explore_fp32_query_embedding"]
        print(
            f"query embedding in {d['query_precision']}; the same searches with float32 query embeddings: "
            + ", ".join(f"{m} p50/p95 {one[m]['p50_ms']}/{one[m]['p95_ms']}" for m in MODES if m in one)
            + f"; embed alone p50/p95 {d['embed_only_fp32']['p50_ms']}/{d['embed_only_fp32']['p95_ms']}"
        )
        vd = d["vector_db"]
        print(
            table(
                ["ef_search", "recall@10", "db p50 n=10", "db p95 n=10", "db p50 n=50", "db p95 n=50"],
                [
                    [
                        ef,
                        v["recall_at_10"],
                        v["db_n10"]["p50_ms"],
                        v["db_n10"]["p95_ms"],
                        v["db_n50"]["p50_ms"],
                        v["db_n50"]["p95_ms"],
                    ]
                    for ef, v in vd.items()
                    if ef != "exact_scan_db"
                ]
                + [["exact scan", 1.0, vd["exact_scan_db"]["p50_ms"], vd["exact_scan_db"]["p95_ms"], "-", "-"]],
                title="vector arm, DB only (vector_search)",
            )
        )
        print(
            table(
                ["keyword_candidates", "queries p50", "queries p95", "common p50", "common p95"],
                [
                    [
                        c,
                        v["queries_db_n50"]["p50_ms"],
                        v["queries_db_n50"]["p95_ms"],
                        v["common_db_n50"]["p50_ms"],
                        v["common_db_n50"]["p95_ms"],
                    ]
                    for c, v in d["keyword_db"].items()
                ],
                title="keyword arm, DB only (keyword_search, n=50)",
            )
        )
        ex = d.get("explore_searcher", {})
        if ex and "error" not in ex:
            print(
                table(
                    ["Searcher.search() with", "keyword p50", "keyword p95", "hybrid p50", "hybrid p95", "common p95"],
                    [
                        [
                            label,
                            v["keyword"]["p50_ms"],
                            v["keyword"]["p95_ms"],
                            v["hybrid"]["p50_ms"],
                            v["hybrid"]["p95_ms"],
                            v["keyword_common"]["p95_ms"],
                        ]
                        for label, v in [
                            ("current (as above)", {**s, "keyword_common": s["keyword_common"]}),
                            *ex.items(),
                        ]
                    ],
                    title="end-to-end exploration (BM25 SQL patched in this process only)",
                )
            )
        build_keys = [
            "load_real_s",
            "generate_synthetic_s",
            "copy_synthetic_s",
            "create_gin_s",
            "create_hnsw_s",
            "vacuum_analyze_s",
        ]
        print(
            "build: "
            + ", ".join(f"{k}={b[k]}" for k in build_keys if k in b)
            + f", hnsw {b['hnsw']}, gin {b['gin']}, table {b['table_total']}"
            + (f", vectors table {b['vectors_total']}" if "vectors_total" in b else "")
        )
        if "live_index_insert" in b:
            li = b["live_index_insert"]
            print(f"live-index insert: {li['rows']} rows in {li['seconds']} s = {li['ms_per_row']} ms/row")
    big = out["details"][str(max(sizes))]["explain"]
    for name, plan in big.items():
        print(f"\nEXPLAIN ANALYZE at {max(sizes):,} chunks — {name}:")
        print("\n".join("  " + line for line in plan))
    if len(sizes) >= 2:
        lo, hi = str(min(sizes)), str(max(sizes))
        rows = []
        for mode in (*MODES, "keyword_common"):
            a, b = out[lo][mode], out[hi][mode]
            rows.append(
                [
                    mode,
                    a["p50_ms"],
                    b["p50_ms"],
                    round(b["p50_ms"] / a["p50_ms"], 2),
                    a["p95_ms"],
                    b["p95_ms"],
                    round(b["p95_ms"] / a["p95_ms"], 2),
                ]
            )
        print()
        print(
            table(
                ["mode", f"p50 {lo}", f"p50 {hi}", "×", f"p95 {lo}", f"p95 {hi}", "×"],
                rows,
                title=f"slope {lo} → {hi} chunks",
            )
        )
        bl, bh = out["build"][lo], out["build"][hi]
        li = bl.get("live_index_insert")
        if li:
            n = bh["synthetic_chunks"]
            print(
                f"HNSW for {hi}: bulk COPY {bh.get('copy_synthetic_s', 0)} s + CREATE INDEX {bh['create_hnsw_s']} s "
                f"(+ GIN {bh['create_gin_s']} s) vs live-index inserts ≈ {li['ms_per_row']} ms/row × {n} rows "
                f"≈ {li['ms_per_row'] * n / 1000:.0f} s (measured on a {lo}-row graph: a lower bound)"
            )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts (default 10000,100000)")
    p.add_argument("--json", type=Path, default=RESULTS / "search.json", help="where to write the results")
    p.add_argument("--markdown", type=Path, default=None, help="the Markdown report (default: --json with .md)")
    p.add_argument("--data-dir", type=Path, default=ROOT / "bench" / ".data", help="persistent bench data dir")
    p.add_argument("--queries", type=int, default=200, help="measured queries per mode (default 200)")
    p.add_argument("--warmup", type=int, default=20, help="warm-up queries per mode (default 20)")
    p.add_argument("--recall-queries", type=int, default=100, help="queries for recall@10 (default 100)")
    p.add_argument("--common-terms", type=int, default=5, help="top-df terms in the common-word query")
    p.add_argument("--common-reps", type=int, default=50, help="timed repetitions of the common-word query")
    p.add_argument("--ef-search", type=int, default=None, help="override HNSW_EF_SEARCH for the Searcher")
    p.add_argument("--keyword-candidates", type=int, default=None, help="override KEYWORD_CANDIDATES")
    p.add_argument("--explore-ef", default="40,64,200,400", help="extra ef_search values for the DB-only vector table")
    p.add_argument(
        "--explore-candidates", default="250,500,4000", help="extra keyword_candidates for the DB-only table"
    )
    p.add_argument(
        "--explore-searcher-candidates", default="500", help="keyword_candidates for the end-to-end exploration"
    )
    p.add_argument("--noise", type=float, default=0.03, help="per-dimension sigma of the synthetic vectors' noise")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument(
        "--synthetic",
        choices=("tree", "shaped", "isotropic"),
        default="tree",
        help="tree: each row a shaped neighbour of any earlier row, real or synthetic (default); shaped: of a "
        "real row only (its ~86 children crowd it); both shared with a reader; isotropic: --noise",
    )
    p.add_argument("--filter-shares", default="1,10", help="filtered searches over these %% of the documents")
    p.add_argument("--structure-sample", type=int, default=300, help="chunks sampled for the neighbour structure")
    p.add_argument("--exact-timing", type=int, default=30, help="exact scans timed (of the recall queries)")
    p.add_argument("--no-fp32-explore", dest="fp32_explore", action="store_false", help="skip the fp32 query rows")
    p.add_argument("--build-only", action="store_true", help="build (or resume) the sizes, measure nothing")
    p.add_argument(
        "--no-prewarm", dest="prewarm", action="store_false", help="measure from a cold shared_buffers (pg_prewarm off)"
    )
    p.add_argument("--prepare-only", action="store_true", help="only ingest the corpus into the bench data dir")
    p.add_argument("--corpus-limit", type=int, default=None, help="ingest only N records (smoke tests; re-ingests)")
    p.add_argument("--maintenance-work-mem", default="4GB", help="for CREATE INDEX (default 4GB: a 1M graph fits)")
    p.add_argument("--parallel-workers", type=int, default=1, help="max_parallel_maintenance_workers (default 1)")
    p.add_argument("--loaders", type=int, default=2, help="connections COPYing batches at once (default 2)")
    p.add_argument("--batch", type=int, default=20000, help="synthetic rows generated and COPYed per batch")
    p.add_argument("--live-sample", type=int, default=3000, help="rows COPYed with live indexes (0 = skip)")
    args = p.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    args.explore_ef = [int(s) for s in args.explore_ef.split(",") if s.strip()]
    args.explore_candidates = [int(s) for s in args.explore_candidates.split(",") if s.strip()]
    args.explore_searcher_candidates = [int(s) for s in args.explore_searcher_candidates.split(",") if s.strip()]
    if args.warmup + args.queries > 809:
        p.error("SciFact has 809 queries: warmup + queries must not exceed that")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    out = asyncio.run(main_async(args))
    if args.prepare_only or args.build_only:
        print(out)
        return 0
    out["cpu_context_end"] = cpu_context()
    out["bench_wall_s"] = round(time.perf_counter() - started, 1)
    report(out, sorted(args.sizes))
    write_json(args.json, out)
    md = args.markdown or args.json.with_suffix(".md")
    text = markdown(out, sorted(args.sizes)) + "\n" + scale_markdown(out, sorted(args.sizes))
    pv_path = args.json.parent / "search_pgvector.json"
    if pv_path.exists():  # bench/search_pgvector.py's run on these vectors: what a newer pgvector changes
        text += "\n" + pgvector_section(json.loads(pv_path.read_text(encoding="utf-8")), out, sorted(args.sizes))
    md.write_text(text, encoding="utf-8")
    print(f"\nwrote {args.json} and {md}  (bench wall {out['bench_wall_s']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
