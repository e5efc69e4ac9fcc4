"""Ingest throughput with one `ragchat worker` process versus two, on the same corpus and database.

For each worker count: a fresh embedded Postgres (its own temporary data dir), the corpus registered as
queued documents (a BEIR `corpus.jsonl`: one document per record), then N `python -m ragchat.cli worker`
processes started together; the clock runs from their start until every document is ready (or failed).
Reported: wall time, documents/s, chunks/s, the ratio against one worker, and the machine's load before the
run, its mean while it ran and at the end, and the core-seconds the machine was busy (at normal priority) during
the run: equal chunks per busy core-second for 1 and 2 workers mean the workers cost each other nothing and
the cores are what limits them. `--workers` lists runs as `N` (N processes, each embedding on every
core: on a 2-core machine they take turns on the same cores) or `NxT` (N processes with EMBED_THREADS=T each:
`1x1,2x1` measures how ingestion scales when each worker has a core of its own, i.e. what the pipeline and
the database's shared counters cost beyond the model).

    python bench/workers.py [--corpus ../shared/data/scifact-dev/corpus.jsonl] [--limit N] [--workers 1x1,2x1,1]
                            [--json bench/results/workers.json]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DATA, RESULTS, bench_settings, cpu_context, table, write_json
from ragchat.core.principal import LOCAL_OWNER_ID, Principal
from ragchat.db.pool import prepare_database
from ragchat.runtime import open_runtime

ROOT = Path(__file__).resolve().parent.parent


async def register(settings: Any, corpus: Path, data: bytes) -> int:
    async with open_runtime(settings) as rt:
        registered = await rt.documents.ingestion.register_bulk(Principal(LOCAL_OWNER_ID), corpus.name, data)
    return sum(1 for r in registered if r.status == "queued")


def count(uri: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(uri) as conn:
        row = conn.execute(
            """SELECT count(*) FILTER (WHERE status = 'ready') AS ready,
                      count(*) FILTER (WHERE status = 'failed') AS failed,
                      count(*) AS total,
                      (SELECT count(*) FROM document_chunks) AS chunks FROM documents"""
        ).fetchone()
    assert row is not None
    return {"ready": row[0], "failed": row[1], "total": row[2], "chunks": row[3]}


def busy_seconds() -> float:
    """Core-seconds the machine spent busy at normal priority so far (/proc/stat: user + system + irq + softirq;
    niced work such as a test run beside this one is left out, and so is idle time)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, _nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
    return (user + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def parse_run(spec: str) -> tuple[int, int]:
    """`2` -> (2 processes, every core); `2x1` -> (2 processes, EMBED_THREADS=1)."""
    n, _, t = spec.partition("x")
    return int(n), int(t or 0)


def run(spec: str, corpus: Path, limit: int | None) -> dict[str, Any]:
    workers, threads = parse_run(spec)
    tmp = Path(tempfile.mkdtemp(prefix=f"ragchat-workers{workers}-"))
    try:
        settings = bench_settings(tmp, ingest_workers=0)
        database = prepare_database(settings.database)  # the embedded server, started once and shared by every process
        try:
            settings = settings.model_copy(update={"database_url": database.uri})
            data = corpus.read_bytes()
            if limit:
                data = b"".join(data.splitlines(keepends=True)[:limit])
            queued = asyncio.run(register(settings, corpus, data))
            env = {**os.environ, "DATABASE_URL": database.uri, "RAGCHAT_DATA_DIR": str(tmp), "HF_HUB_OFFLINE": "1"}
            env["EMBED_THREADS"] = str(threads)
            load = os.getloadavg()[0]
            loads: list[float] = []
            busy_before = busy_seconds()
            started = time.perf_counter()
            procs = [
                subprocess.Popen(
                    [sys.executable, "-m", "ragchat.cli", "worker", "--poll", "0.5"],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for _ in range(workers)
            ]
            try:
                while True:
                    c = count(database.uri)
                    if c["ready"] + c["failed"] >= c["total"]:
                        break
                    time.sleep(1.0)
                    loads.append(os.getloadavg()[0])
                wall = time.perf_counter() - started
                busy = busy_seconds() - busy_before
            finally:
                for p in procs:
                    p.send_signal(signal.SIGTERM)
                for p in procs:
                    p.wait(timeout=60)
        finally:
            database.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "run": spec,
        "workers": workers,
        "embed_threads": threads or "all",
        "documents": queued,
        "failed": c["failed"],
        "chunks": c["chunks"],
        "wall_s": round(wall, 1),
        "docs_per_s": round(c["ready"] / wall, 2),
        "chunks_per_s": round(c["chunks"] / wall, 2),
        "busy_core_s": round(busy, 1),
        "chunks_per_busy_core_s": round(c["chunks"] / busy, 2) if busy else None,
        "load_before": round(load, 2),
        "load_mean": round(sum(loads) / len(loads), 2) if loads else None,
        "load_end": round(os.getloadavg()[0], 2),
    }


HEADERS = ["workers", "threads each", "documents", "failed", "chunks", "wall s", "docs/s", "chunks/s", "ratio"]
HEADERS += ["busy core-s", "chunks per busy core-s", "load before", "load mean", "load end"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DATA / "corpus.jsonl")
    ap.add_argument("--limit", type=int, default=None, help="only the first N records")
    ap.add_argument(
        "--workers", default="1x1,2x1,1", help="runs: N or NxT (T = EMBED_THREADS each); ratios vs the first"
    )
    ap.add_argument("--json", type=Path, default=RESULTS / "workers.json")
    args = ap.parse_args()
    results = [run(spec.strip(), args.corpus, args.limit) for spec in args.workers.split(",")]
    base = results[0]["chunks_per_s"]
    for r in results:
        r["ratio"] = round(r["chunks_per_s"] / base, 2) if base else None
    print(
        table(
            HEADERS,
            [
                [
                    r["workers"],
                    r["embed_threads"],
                    r["documents"],
                    r["failed"],
                    r["chunks"],
                    r["wall_s"],
                    r["docs_per_s"],
                    r["chunks_per_s"],
                    r["ratio"],
                    r["busy_core_s"],
                    r["chunks_per_busy_core_s"],
                    r["load_before"],
                    r["load_mean"],
                    r["load_end"],
                ]
                for r in results
            ],
            title=f"ingest throughput by worker processes: {args.corpus}"
            + (f" (first {args.limit})" if args.limit else ""),
        )
    )
    write_json(args.json, {"corpus": str(args.corpus), "limit": args.limit, "cpu": cpu_context(), "runs": results})


if __name__ == "__main__":
    main()
