"""What a newer pgvector changes at the bench's size: the same vectors in another Postgres (an external server
with pgvector ≥ 0.7), indexed as float32 `vector` and as `halfvec`, with and without iterative index scans.

Source: the vectors of a size built by bench/search.py (`bench_<size>` in the bench's embedded cluster, which
this starts or attaches to). Target: `--target-uri`, any PostgreSQL with pgvector ≥ 0.7 (halfvec) — ≥ 0.8
for `hnsw.iterative_scan`. The vectors are streamed over binary COPY into `bench_vectors (id, tag10, tag100,
embedding vector(dim))`; `tag10` / `tag100` give filters that keep 10 % / 1 % of the rows. Exact top-10s
(unfiltered and filtered) are computed in numpy while streaming, so recall needs no exact scan in SQL.

Per index (vector, halfvec): build time, size, and per ef_search the DB-only p50/p95 and recall@10; for the
filtered queries the same with `hnsw.iterative_scan` off (0.6 behaviour: fewer than 10 rows come back) and
`relaxed_order`.

    python bench/search_pgvector.py --target-uri postgresql://postgres@/postgres?host=/tmp/sock&port=5499 \
        [--size 1000000] [--json bench/results/search_pgvector.json]
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import psycopg
from pgvector.psycopg import register_vector, register_vector_async
from psycopg import sql
from psycopg.rows import DictRow, dict_row

from bench.common import DATA, RESULTS, ROOT, bench_settings, load_embedder, pct, read_jsonl, table, write_json
from bench.search_build import pretty, size_db_uri
from bench.search_report import index_rows
from ragchat.db.embedded import start_embedded

FILTERS = {"none": None, "10%": "tag10 = 3", "1%": "tag100 = 7"}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class TopK:
    """Running exact top-k (cosine distance) per query and per filter, fed batch by batch."""

    def __init__(self, queries: np.ndarray, k: int = 10) -> None:
        self.q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        self.k = k
        self.best: dict[str, list[list[tuple[float, int]]]] = {f: [[] for _ in self.q] for f in FILTERS}

    def feed(self, ids: np.ndarray, vecs: np.ndarray) -> None:
        vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        sims = self.q @ vecs.T  # (queries, batch)
        masks = {"none": np.ones(len(ids), bool), "10%": ids % 10 == 3, "1%": ids % 100 == 7}
        for name, mask in masks.items():
            if not mask.any():
                continue
            s, sub = sims[:, mask], ids[mask]
            top = np.argsort(-s, axis=1)[:, : self.k]
            for qi in range(len(self.q)):
                heap = self.best[name][qi]
                for j in top[qi]:
                    item = (float(s[qi, j]), int(sub[j]))
                    if len(heap) < self.k:
                        heapq.heappush(heap, item)
                    elif item > heap[0]:
                        heapq.heapreplace(heap, item)

    def truth(self, name: str) -> list[set[int]]:
        return [{i for _, i in h} for h in self.best[name]]


def copy_vectors(src_uri: str, dst_uri: str, topk: TopK, dim: int, batch: int) -> dict[str, Any]:
    """Stream (chunk id, vector) from the source database into `bench_vectors` on the target, feeding `topk`."""
    started = time.perf_counter()
    n = 0
    with psycopg.connect(src_uri) as src, psycopg.connect(dst_uri, autocommit=True) as dst:
        register_vector(src)
        dst.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(dst)
        dst.execute("DROP TABLE IF EXISTS bench_vectors")
        dst.execute(
            sql.SQL(
                "CREATE TABLE bench_vectors (id bigint PRIMARY KEY, tag10 int NOT NULL, tag100 int NOT NULL, "
                "embedding vector({}) NOT NULL)"
            ).format(sql.Literal(dim))
        )
        with src.cursor(name="vecs") as cur:
            cur.itersize = batch
            cur.execute("SELECT chunk_id, embedding FROM chunk_embeddings ORDER BY chunk_id")
            while rows := cur.fetchmany(batch):
                ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                vecs = np.stack([np.asarray(r[1].to_numpy(), dtype=np.float32) for r in rows])
                topk.feed(ids, vecs)
                with dst.cursor().copy("COPY bench_vectors (id, tag10, tag100, embedding) FROM STDIN") as copy:
                    for i, v in zip(ids.tolist(), vecs, strict=True):
                        copy.write_row((i, i % 10, i % 100, v))
                n += len(rows)
                if n % (batch * 10) == 0:
                    log(f"  {n} vectors copied")
        dst.execute("VACUUM ANALYZE bench_vectors")
    return {"rows": n, "copy_s": round(time.perf_counter() - started, 1)}


async def measure(
    uri: str, expr: str, qvecs: np.ndarray, truths: dict[str, list[set[int]]], ef_values: list[int], iterative: bool
) -> dict[str, Any]:
    """Per filter and ef_search: recall@10, short answers, DB-only p50/p95 (iterative scan off / relaxed)."""
    out: dict[str, Any] = {}
    conn = await psycopg.AsyncConnection[DictRow].connect(uri, autocommit=True, row_factory=dict_row)
    await register_vector_async(conn)
    try:
        modes = ["off", "relaxed_order"] if iterative else ["off"]
        for fname, where in FILTERS.items():
            for mode in modes if where else ["off"]:
                for ef in ef_values:
                    hits = short = 0
                    lat: list[float] = []
                    cond = f"WHERE {where}" if where else ""
                    q = f"SELECT id FROM bench_vectors {cond} ORDER BY {expr} LIMIT 10"
                    async with conn.transaction():
                        await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
                        if iterative:
                            await conn.execute("SELECT set_config('hnsw.iterative_scan', %s, true)", (mode,))
                        for qv, t in zip(qvecs, truths[fname], strict=True):
                            start = time.perf_counter()
                            rows = await (await conn.execute(q, {"q": qv})).fetchall()  # type: ignore[arg-type]
                            lat.append((time.perf_counter() - start) * 1000)
                            got = {r["id"] for r in rows}
                            hits += len(got & t)
                            short += len(rows) < 10
                    out[f"{fname}|{mode}|{ef}"] = {
                        "filter": fname,
                        "iterative_scan": mode,
                        "ef_search": ef,
                        "recall_at_10": round(hits / (10 * len(qvecs)), 4),
                        "short_answers": short,
                        **pct(lat),
                    }
    finally:
        await conn.close()
    return out


async def build_index(uri: str, ddl: str, name: str, mwm: str, workers: int) -> dict[str, Any]:
    conn = await psycopg.AsyncConnection[DictRow].connect(uri, autocommit=True, row_factory=dict_row)
    try:
        await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))
        await conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (mwm,))
        await conn.execute("SELECT set_config('max_parallel_maintenance_workers', %s, false)", (str(workers),))
        start = time.perf_counter()
        await conn.execute(ddl)  # type: ignore[arg-type]  # our own statement
        seconds = time.perf_counter() - start
        size = (await (await conn.execute("SELECT pg_relation_size(%s::regclass) AS b", (name,))).fetchone()) or {}
        return {"create_s": round(seconds, 1), "bytes": int(size["b"]), "size": pretty(int(size["b"]))}
    finally:
        await conn.close()


async def drop_index(uri: str, name: str) -> None:
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
        await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    settings = bench_settings(args.data_dir)
    embedded = start_embedded(args.data_dir)
    try:
        src_uri, _ = size_db_uri(embedded.uri, args.size)
        records = read_jsonl(DATA / "queries.jsonl")
        texts = [r["text"] for r in records][: args.queries]
        embedder = await asyncio.to_thread(load_embedder, settings)
        try:
            qvecs = np.asarray(await embedder.embed_queries(texts), dtype=np.float32)
        finally:
            await embedder.close()
        topk = TopK(qvecs)
        log(f"copying the vectors of bench_{args.size} to the target ...")
        copied = await asyncio.to_thread(copy_vectors, src_uri, args.target_uri, topk, qvecs.shape[1], args.batch)
    finally:
        embedded.stop()
    truths = {f: topk.truth(f) for f in FILTERS}
    dim = qvecs.shape[1]
    with psycopg.connect(args.target_uri) as c:
        row = c.execute("SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector')").fetchone()
        assert row is not None
        version, extversion = row
    iterative = tuple(int(x) for x in extversion.split(".")[:2]) >= (0, 8)
    out: dict[str, Any] = {
        "target": {"server_version": version, "pgvector": extversion},
        "size": args.size,
        "copy": copied,
        "queries": len(texts),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "indexes": {},
    }
    kinds = {
        "vector": (f"embedding <=> %(q)s::vector({dim})", "embedding vector_cosine_ops"),
        "halfvec": (
            f"embedding::halfvec({dim}) <=> %(q)s::halfvec({dim})",
            f"(embedding::halfvec({dim})) halfvec_cosine_ops",
        ),
    }
    for kind in args.kinds:
        expr, opclass = kinds[kind]
        name = f"bench_vectors_{kind}_hnsw"
        ddl = f"CREATE INDEX {name} ON bench_vectors USING hnsw ({opclass}) WITH (m = 16, ef_construction = 64)"
        log(f"building {kind} HNSW ...")
        built = await build_index(args.target_uri, ddl, name, args.maintenance_work_mem, args.parallel_workers)
        log(f"  {built}")
        built["runs"] = await measure(args.target_uri, expr, qvecs, truths, args.ef, iterative)
        out["indexes"][kind] = built
        if not args.keep_indexes:
            await drop_index(args.target_uri, name)
    out["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    return out


def report(out: dict[str, Any]) -> str:
    lines = [
        f"pgvector {out['target']['pgvector']} on {out['target']['server_version'].split(' on ')[0]}, "
        f"{out['copy']['rows']:,} vectors, {out['queries']} queries; load average "
        f"{out['loadavg_start']} → {out['loadavg_end']}"
    ]
    rows = index_rows(out["indexes"])
    lines.append(
        table(
            ["index", "size", "build s", "filter", "iterative", "ef", "recall@10", "short", "p50 ms", "p95 ms"],
            rows,
        )
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target-uri", required=True, help="a PostgreSQL with pgvector >= 0.7 (its own database)")
    p.add_argument("--size", type=int, default=1_000_000, help="which bench_<size> database to copy from")
    p.add_argument("--data-dir", type=Path, default=ROOT / "bench" / ".data")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--ef", default="40,100,200", help="ef_search values")
    p.add_argument("--kinds", default="vector,halfvec")
    p.add_argument("--batch", type=int, default=20000)
    p.add_argument("--maintenance-work-mem", default="4GB")
    p.add_argument("--parallel-workers", type=int, default=1)
    p.add_argument("--keep-indexes", action="store_true")
    p.add_argument("--json", type=Path, default=RESULTS / "search_pgvector.json")
    args = p.parse_args(argv)
    args.ef = [int(x) for x in args.ef.split(",") if x.strip()]
    args.kinds = [k for k in args.kinds.split(",") if k.strip()]
    out = asyncio.run(main_async(args))
    text = report(out)
    print(text)
    write_json(args.json, out)
    args.json.with_suffix(".txt").write_text(text + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
