"""Collecting both arms' candidate lists per query for `bench/fusion.py` (the slow, database half).

Each dev corpus is ingested once (through `ragchat eval`'s own `ensure_corpus`, into its eval owner) into a
persistent embedded database under the cache directory, so a rerun skips ingestion. For every query the
vector arm and the keyword arm run exactly as `Searcher` runs them (same functions, same settings) to
depth N, and the cosine similarity of every keyword candidate is read too (hydration computes it for every
fused hit). The lists are cached as JSON next to the database: fusion is then evaluated offline.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from psycopg import sql

from bench.common import bench_runtime, bench_settings, write_json
from ragchat.evaluation.beir import BeirDataset
from ragchat.evaluation.runner import ensure_corpus, eval_owner
from ragchat.readscope.sql import read_scope
from ragchat.retrieval.keyword import keyword_search
from ragchat.retrieval.vector import vector_search


def cache_path(cache: Path, dataset: BeirDataset, depth: int, candidates: int = 1000) -> Path:
    """The lists' JSON; a run with another KEYWORD_CANDIDATES (from the environment) has lists of its own."""
    variant = f"-kc{candidates}" if candidates != 1000 else ""
    return cache / f"lists-{dataset.path.name}-{depth}{variant}.json"


async def collect(cache: Path, datasets: list[BeirDataset], depth: int) -> dict[str, dict[str, Any]]:
    """{dataset name: {"queries": {qid: {"vector": [[chunk, sim]], "keyword": [[chunk, bm25]], "sim": {chunk:
    sim}}}, "source": {chunk: corpus id}}}, from the JSON cache when it is there."""
    out: dict[str, dict[str, Any]] = {}
    settings = bench_settings(cache / "data")
    kc = settings.retrieval.keyword_candidates
    missing = [d for d in datasets if not cache_path(cache, d, depth, kc).exists()]
    if missing:
        async with bench_runtime(settings) as rt:
            for dataset in missing:
                write_json(cache_path(cache, dataset, depth, kc), await _collect_one(rt, dataset, depth))
    for dataset in datasets:
        out[dataset.path.name] = json.loads(cache_path(cache, dataset, depth, kc).read_text(encoding="utf-8"))
    return out


async def _collect_one(rt: Any, dataset: BeirDataset, depth: int) -> dict[str, Any]:
    owner = eval_owner(dataset)
    start = time.perf_counter()
    done = await ensure_corpus(rt.accounts, rt.documents.ingestion, dataset, owner)
    print(f"{dataset.path.name}: ingested {done} documents in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    s = rt.settings
    active = await rt.spaces.active()
    assert active is not None, "no active embedding space after ingestion"
    async with rt.pool.connection() as conn:
        scope = await read_scope(conn, owner)
        rows = await (
            await conn.execute(
                "SELECT c.id, d.metadata->>'source_id' AS source FROM document_chunks c "
                "JOIN documents d ON d.id = c.document_id WHERE c.owner_id = %s",
                (owner,),
            )
        ).fetchall()
    source = {str(r["id"]): r["source"] for r in rows}
    queries: dict[str, Any] = {}
    start = time.perf_counter()
    for qid, text in dataset.queries.items():
        qvec = await rt.searcher.embed_query(active, text)
        async with rt.pool.connection() as conn:
            vec = await vector_search(
                conn,
                active.space,
                qvec,
                scope=scope,
                n=depth,
                ef_search=s.hnsw_ef_search,
                exact_max_rows=s.exact_scan_max_rows,
            )
            kw = await keyword_search(
                conn,
                text,
                scope=scope,
                n=depth,
                scorer=s.keyword_scorer,
                k1=s.bm25_k1,
                b=s.bm25_b,
                candidates=s.keyword_candidates,
            )
            in_vec = {i for i, _ in vec}
            ids = [i for i, _ in kw if i not in in_vec]
            sims: dict[str, float] = {}
            if ids:
                query = sql.SQL(
                    "SELECT e.chunk_id AS id, 1 - ({} <=> %(q)s) AS sim FROM chunk_embeddings e "
                    "WHERE e.space_id = %(space)s AND e.chunk_id = ANY(%(ids)s)"
                ).format(active.space.vector_expr("e"))
                params = {"q": qvec, "space": active.space.id, "ids": ids}
                for r in await (await conn.execute(query, params)).fetchall():
                    sims[str(r["id"])] = min(1.0, max(0.0, float(r["sim"])))
        queries[qid] = {"vector": [[i, round(v, 6)] for i, v in vec], "keyword": [[i, round(v, 6)] for i, v in kw]}
        queries[qid]["sim"] = sims
    print(f"{dataset.path.name}: {len(queries)} queries in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return {"depth": depth, "queries": queries, "source": source}
