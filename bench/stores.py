"""The vector store against what users would pick instead (issue 30): pgvector (0.6 and >= 0.8; float `vector`
and `halfvec` HNSW; exact scan) against LanceDB and sqlite-vec, on the same real-text vectors.

Vectors: titles, sentences, half abstracts and whole abstracts of the SciFact-dev and NFCorpus-dev corpora (real
text at the sizes chunking makes, not synthetic; 100k of them), embedded
with the bundled model (EMBED_BACKEND, as ingestion does) up to `--size`; queries: both sets' queries. Exact
top-10s by numpy are the truth for recall@10. Every store gets the same vectors and queries; each query is timed
alone, one at a time, from Python (what a server would see), after a warm-up pass.

Engines: `pgserver` (PostgreSQL 16 + pgvector 0.6, the engine of releases up to 0.4) when that package is
installed; `embedded` (ragchat's own embedded engine, db/embedded.py); any `--pg name=URI`. LanceDB: brute
force and an IVF_HNSW_SQ index; sqlite-vec: its `vec0` table (exact KNN; it has no ANN index).

    .venv/bin/pip install lancedb==0.40.0 sqlite-vec==0.1.9 apsw==3.54.1.0   # bench-only: not runtime dependencies
    .venv/bin/python bench/stores.py [--size 100000] [--queries 300] [--json bench/results/stores.json]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from bench.common import RESULTS, ROOT, bench_settings, load_embedder, read_jsonl, table, write_json

SETS = ("scifact-dev", "nfcorpus-dev")
CACHE = Path(os.environ.get("RAGCHAT_BENCH_CACHE", Path.home() / ".cache" / "ragchat" / "bench-stores"))
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
EF_SEARCH = (40, 100)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def texts_and_queries(size: int, n_queries: int) -> tuple[list[str], list[str]]:
    texts: list[str] = []
    queries: list[str] = []
    for name in SETS:
        base = ROOT.parent / "shared" / "data" / name
        for doc in read_jsonl(base / "corpus.jsonl"):
            if doc.get("title"):
                texts.append(doc["title"])
            parts = [s for s in _SPLIT.split(doc["text"]) if len(s) >= 20]
            texts.extend(parts)  # sentences, then passages of several sizes, as chunking makes them
            half = len(parts) // 2
            if half:
                texts += [" ".join(parts[:half]), " ".join(parts[half:])]
            texts.append(f"{doc.get('title', '')}\n{doc['text']}".strip())
        queries.extend(q["text"] for q in read_jsonl(base / "queries.jsonl"))
    texts = list(dict.fromkeys(texts))[:size]
    step = max(1, len(queries) // n_queries)
    return texts, queries[::step][:n_queries]


def embedded(size: int, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """(vectors, queries), unit length, cached by size."""
    path = CACHE / f"vectors_{size}_{n_queries}.npz"
    if path.exists():
        data = np.load(path)
        return data["vectors"], data["queries"]
    texts, queries = texts_and_queries(size, n_queries)
    settings = bench_settings(CACHE / "settings")
    embedder = load_embedder(settings)
    started = time.perf_counter()
    parts = []
    for i in range(0, len(texts), 2048):
        parts.append(np.asarray(embedder.embed_sync(texts[i : i + 2048]), dtype=np.float32))
        log(f"embedded {min(i + 2048, len(texts)):,}/{len(texts):,} ({time.perf_counter() - started:.0f} s)")
    vectors = np.vstack(parts)
    qv = np.asarray(embedder.embed_sync(queries), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, vectors=vectors, queries=qv)
    return vectors, qv


def truth(vectors: np.ndarray, queries: np.ndarray, k: int = 10) -> list[set[int]]:
    sims = queries @ vectors.T
    return [set(np.argpartition(-row, k)[:k].tolist()) for row in sims]


def timed(queries: np.ndarray, run: Callable[[np.ndarray], list[int]], gold: list[set[int]]) -> dict[str, Any]:
    for q in queries[:10]:  # warm-up
        run(q)
    times, hits = [], 0
    for q, g in zip(queries, gold, strict=True):
        started = time.perf_counter()
        ids = run(q)
        times.append((time.perf_counter() - started) * 1000)
        hits += len(g & set(ids[:10]))
    times.sort()
    return {
        "recall@10": round(hits / (10 * len(gold)), 4),
        "p50_ms": round(times[len(times) // 2], 2),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2),
    }


def dir_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6, 1)


# ---- Postgres -----------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def pg_engines(extra: list[str]) -> Iterator[list[tuple[str, str]]]:
    """(name, uri) of every Postgres to measure; servers this started are stopped on exit."""
    engines: list[tuple[str, str]] = []
    stops: list[Callable[[], None]] = []
    try:
        try:
            import pgserver  # the engine of releases up to 0.4: PostgreSQL 16, pgvector 0.6

            old = pgserver.get_server(CACHE / "pg-pgserver", cleanup_mode="stop")
            engines.append(("pgserver", old.get_uri()))
            stops.append(old.cleanup)
        except Exception as exc:  # not installed, or it failed to start: measured without it
            log(f"pgserver engine unavailable: {exc!r}")
        from ragchat.db.embedded import start_embedded

        new = start_embedded(CACHE / "pg-embedded")
        engines.append(("embedded", new.uri))
        stops.append(new.stop)
        for item in extra:
            name, _, uri = item.partition("=")
            engines.append((name, uri))
        yield engines
    finally:
        for stop in stops:
            with contextlib.suppress(Exception):
                stop()


def pg_versions(conn: psycopg.Connection[Any]) -> tuple[str, str]:
    server = conn.execute("SHOW server_version").fetchone()
    ext = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return (server[0] if server else "?"), (ext[0] if ext else "?")


def measure_pg(name: str, uri: str, vectors: np.ndarray, queries: np.ndarray, gold: list[set[int]]) -> list[dict]:
    rows: list[dict[str, Any]] = []
    dim = vectors.shape[1]
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        server, ext = pg_versions(conn)
        label = f"pgvector {ext} (PostgreSQL {server.split()[0]}, {name})"
        conn.execute("DROP TABLE IF EXISTS bench_store")
        conn.execute(f"CREATE TABLE bench_store (id int PRIMARY KEY, embedding vector({dim}))")
        started = time.perf_counter()
        with conn.cursor().copy("COPY bench_store (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "vector"])
            for i, v in enumerate(vectors):
                copy.write_row((i, v))
        load_s = time.perf_counter() - started
        conn.execute("VACUUM ANALYZE bench_store")
        table_mb = conn.execute("SELECT pg_total_relation_size('bench_store') / 1e6").fetchone()[0]  # type: ignore[index]

        def exact(q: np.ndarray) -> list[int]:
            conn.execute("SET enable_indexscan = off")
            return [r[0] for r in conn.execute("SELECT id FROM bench_store ORDER BY embedding <=> %s LIMIT 10", (q,))]

        res = timed(queries, exact, gold)
        rows.append(
            {"store": label, "index": "exact scan", "build_s": round(load_s, 1), "disk_mb": round(table_mb, 1), **res}
        )
        conn.execute("RESET enable_indexscan")
        kinds = [("vector", "embedding vector_cosine_ops", "embedding")]
        major, minor = (int(x) for x in ext.split(".")[:2])
        if (major, minor) >= (0, 7):
            kinds.append(("halfvec", f"(embedding::halfvec({dim})) halfvec_cosine_ops", f"embedding::halfvec({dim})"))
        for kind, expr, column in kinds:
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute("SET max_parallel_maintenance_workers = 1")
            started = time.perf_counter()
            using = f"({expr})"
            conn.execute(
                f"CREATE INDEX bench_store_hnsw ON bench_store USING hnsw {using} WITH (m = 16, ef_construction = 64)"
            )
            build_s = time.perf_counter() - started
            index_mb = conn.execute("SELECT pg_relation_size('bench_store_hnsw') / 1e6").fetchone()[0]  # type: ignore[index]
            cast = f"::halfvec({dim})" if kind == "halfvec" else ""
            for ef in EF_SEARCH:
                conn.execute(f"SET hnsw.ef_search = {ef}")

                def ann(q: np.ndarray, column: str = column, cast: str = cast) -> list[int]:
                    sql = f"SELECT id FROM bench_store ORDER BY {column} <=> %s{cast} LIMIT 10"
                    return [r[0] for r in conn.execute(sql, (q,))]  # type: ignore[arg-type]

                res = timed(queries, ann, gold)
                rows.append(
                    {
                        "store": label,
                        "index": f"HNSW {kind} m16 ef_search {ef}",
                        "build_s": round(build_s, 1),
                        "disk_mb": round(table_mb + index_mb, 1),
                        **res,
                    }
                )
            conn.execute("DROP INDEX bench_store_hnsw")
        conn.execute("DROP TABLE bench_store")
    return rows


# ---- LanceDB and sqlite-vec ---------------------------------------------------------------------------------------
def measure_lancedb(vectors: np.ndarray, queries: np.ndarray, gold: list[set[int]]) -> list[dict[str, Any]]:
    os.environ.setdefault("LANCE_LOG", "error")
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # create_index(metric=…): the old signature
    import lancedb
    import pyarrow as pa

    rows: list[dict[str, Any]] = []
    root = Path(tempfile.mkdtemp(prefix="lancedb-", dir=CACHE))
    try:
        db = lancedb.connect(str(root))
        dim = vectors.shape[1]
        started = time.perf_counter()
        data = pa.table(
            {
                "id": pa.array(np.arange(len(vectors), dtype=np.int32)),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim),
            }
        )
        tbl = db.create_table("v", data=data)
        load_s = time.perf_counter() - started
        label = f"LanceDB {lancedb.__version__}"

        def flat(q: np.ndarray) -> list[int]:
            return [r["id"] for r in tbl.search(q).distance_type("cosine").limit(10).select(["id"]).to_list()]

        rows.append(
            {
                "store": label,
                "index": "brute force",
                "build_s": round(load_s, 1),
                "disk_mb": dir_mb(root),
                **timed(queries, flat, gold),
            }
        )
        started = time.perf_counter()
        tbl.create_index(metric="cosine", index_type="IVF_HNSW_SQ", vector_column_name="vector")
        build_s = time.perf_counter() - started
        for nprobes in (10, 30):

            def ann(q: np.ndarray, nprobes: int = nprobes) -> list[int]:
                query = tbl.search(q).distance_type("cosine").nprobes(nprobes).limit(10).select(["id"])
                return [r["id"] for r in query.to_list()]

            rows.append(
                {
                    "store": label,
                    "index": f"IVF_HNSW_SQ nprobes {nprobes}",
                    "build_s": round(build_s, 1),
                    "disk_mb": dir_mb(root),
                    **timed(queries, ann, gold),
                }
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows


def measure_sqlite_vec(vectors: np.ndarray, queries: np.ndarray, gold: list[set[int]]) -> list[dict[str, Any]]:
    import apsw  # the stdlib sqlite3 of many Python builds cannot load extensions; apsw always can
    import sqlite_vec

    root = Path(tempfile.mkdtemp(prefix="sqlite-vec-", dir=CACHE))
    try:
        db = apsw.Connection(str(root / "v.db"))
        db.enable_load_extension(True)
        db.load_extension(sqlite_vec.loadable_path())
        db.enable_load_extension(False)
        (version,) = db.execute("SELECT vec_version()").fetchone()
        dim = vectors.shape[1]
        started = time.perf_counter()
        db.execute(
            f"CREATE VIRTUAL TABLE v USING vec0(id INTEGER PRIMARY KEY, embedding float[{dim}] distance_metric=cosine)"
        )
        with db:  # one transaction
            db.executemany(
                "INSERT INTO v (id, embedding) VALUES (?, ?)", ((i, v.tobytes()) for i, v in enumerate(vectors))
            )
        load_s = time.perf_counter() - started

        def knn(q: np.ndarray) -> list[int]:
            sql = "SELECT id FROM v WHERE embedding MATCH ? AND k = 10 ORDER BY distance"
            return [r[0] for r in db.execute(sql, (q.astype(np.float32).tobytes(),))]

        res = timed(queries, knn, gold)
        db.close()
        return [
            {
                "store": f"sqlite-vec {version}",
                "index": "vec0 (exact KNN)",
                "build_s": round(load_s, 1),
                "disk_mb": dir_mb(root),
                **res,
            }
        ]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000, help="vectors (sentences and titles of both corpora)")
    ap.add_argument("--queries", type=int, default=300, help="queries, spread over both sets")
    ap.add_argument("--pg", action="append", default=[], help="another Postgres to measure: name=URI")
    ap.add_argument("--json", type=Path, default=RESULTS / "stores.json", help="where the results go")
    args = ap.parse_args(argv)
    load_start = os.getloadavg()
    vectors, queries = embedded(args.size, args.queries)
    log(f"{len(vectors):,} vectors, {len(queries)} queries")
    gold = truth(vectors, queries)
    rows: list[dict[str, Any]] = []
    with pg_engines(args.pg) as engines:
        for name, uri in engines:
            log(f"measuring {name}")
            rows += measure_pg(name, uri, vectors, queries, gold)
    for measure in (measure_lancedb, measure_sqlite_vec):
        try:
            rows += measure(vectors, queries, gold)
        except ImportError as exc:
            log(f"{measure.__name__}: not installed ({exc}); see this file's docstring for the pip line")
    out = {
        "vectors": len(vectors),
        "dim": int(vectors.shape[1]),
        "queries": len(queries),
        "load_average": {"start": load_start, "end": os.getloadavg()},
        "rows": rows,
    }
    headers = ["store", "index", "recall@10", "p50 ms", "p95 ms", "build s", "disk MB"]
    keys = ["store", "index", "recall@10", "p50_ms", "p95_ms", "build_s", "disk_mb"]
    print(
        table(
            headers,
            [[r[k] for k in keys] for r in rows],
            title=f"{len(vectors):,} real-text vectors, {len(queries)} queries",
        )
    )
    print(f"load average: start {load_start}, end {out['load_average']['end']}")
    write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
