"""What the BM25 statistics cost concurrent writers, without the embedding model: one connection versus two
storing SciFact's documents (one transaction per document: its row and its chunks, as a worker does), with
the per-owner counters of migration 0002 ("before": every writer updates the same rows of common words) and
with the per-group sharded counters of 0017 ("after").

Each variant is a database of its own in one private embedded Postgres (migrated to 0016 or to the latest);
the tables are emptied between runs; chunks are the abstracts cut at sentence ends into ~600-character
pieces. Reported: documents/s, the two-writer ratio, and how long writers waited on locks (pg_locks samples).

    python bench/bm25_writers.py [--limit 3000] [--json bench/results/bm25_writers.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg.conninfo import make_conninfo

from bench.common import DATA, RESULTS, bench_settings, cpu_context, table, write_json
from ragchat.db.migrate import migrate, migration_files
from ragchat.db.pool import ensure_vector_extension, prepare_database

OWNER = uuid.UUID("00000000-0000-0000-0000-0000000be9c4")
TABLES = "documents, document_chunks"


def chunks_of(text: str, size: int = 600) -> list[str]:
    out, cur = [], ""
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if cur and len(cur) + len(sentence) > size:
            out.append(cur)
            cur = ""
        cur = f"{cur} {sentence}".strip()
    return [*out, cur] if cur else out


def corpus(limit: int) -> list[tuple[str, list[str]]]:
    docs = []
    with (DATA / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            docs.append((rec.get("title", ""), chunks_of(rec.get("text", "")) or [rec.get("title", "") or "empty"]))
            if len(docs) >= limit:
                break
    return docs


async def writer(uri: str, docs: list[tuple[str, list[str]]]) -> None:
    async with await psycopg.AsyncConnection.connect(uri) as conn:
        for title, texts in docs:
            async with conn.transaction():
                row = await (
                    await conn.execute(
                        """INSERT INTO documents (owner_id, filename, title, content_type, byte_size, sha256, status)
                           VALUES (%s, %s, %s, 'text/plain', 1, %s, 'ready') RETURNING id""",
                        (OWNER, f"{uuid.uuid4()}.txt", title, uuid.uuid4().hex),
                    )
                ).fetchone()
                assert row is not None
                await conn.execute(
                    """INSERT INTO document_chunks (document_id, owner_id, chunk_index, title, content, token_count,
                                                    content_hash)
                       SELECT %s, %s, i - 1, %s, t, 1, md5(t) FROM unnest(%s::text[]) WITH ORDINALITY AS x(t, i)""",
                    (row[0], OWNER, title, texts),
                )


async def lock_sampler(uri: str, stop: asyncio.Event, samples: list[int]) -> None:
    """Every 20 ms: how many backends wait on a lock (a row or transaction lock: hot counter rows)."""
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
        while not stop.is_set():
            row = await (await conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")).fetchone()
            samples.append(int(row[0]) if row else 0)
            await asyncio.sleep(0.02)


async def run(uri: str, docs: list[tuple[str, list[str]]], writers: int) -> dict[str, Any]:
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
        bm25 = [
            r[0]
            for r in await (
                await conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'bm25%%' ORDER BY 1")
            ).fetchall()
        ]
        await conn.execute(f"TRUNCATE {TABLES}, {', '.join(bm25)} RESTART IDENTITY CASCADE")  # type: ignore[arg-type]
        await conn.execute("VACUUM ANALYZE")
    parts = [docs[i::writers] for i in range(writers)]
    stop, samples = asyncio.Event(), []
    sampler = asyncio.create_task(lock_sampler(uri, stop, samples))
    load = os.getloadavg()
    start = time.perf_counter()
    await asyncio.gather(*(writer(uri, p) for p in parts))
    wall = time.perf_counter() - start
    stop.set()
    await sampler
    return {
        "writers": writers,
        "documents": len(docs),
        "wall_s": round(wall, 2),
        "docs_per_s": round(len(docs) / wall, 1),
        "waiting_share": round(sum(1 for s in samples if s) / max(len(samples), 1), 3),
        "loadavg_before": [round(x, 2) for x in load],
    }


def prepare(base_uri: str, name: str, upto: str | None, tmp: Path) -> str:
    with psycopg.connect(base_uri, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    uri = make_conninfo(base_uri, dbname=name)
    ensure_vector_extension(uri)
    folder = None
    if upto is not None:
        folder = tmp / name
        folder.mkdir()
        for p in migration_files():
            if p.name < upto:
                shutil.copy(p, folder / p.name)
    migrate(uri, folder) if folder else migrate(uri)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("INSERT INTO users (id, name) VALUES (%s, 'bench') ON CONFLICT (id) DO NOTHING", (OWNER,))
    return uri


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=3000, help="SciFact documents per run")
    ap.add_argument("--repeats", type=int, default=2, help="1- and 2-writer runs alternate this many times")
    ap.add_argument("--json", type=Path, default=RESULTS / "bm25_writers.json")
    args = ap.parse_args()
    docs = corpus(args.limit)
    tmp = Path(tempfile.mkdtemp(prefix="ragchat-bm25-writers-"))
    out: dict[str, Any] = {"cpu_start": cpu_context(), "chunks": sum(len(t) for _, t in docs), "runs": []}
    try:
        database = prepare_database(bench_settings(tmp / "pg").database)
        try:
            variants = {
                "before (0002: per-owner rows)": prepare(database.uri, "writers_before", "0017", tmp),
                "after (0017: per-group, sharded)": prepare(database.uri, "writers_after", None, tmp),
            }
            for rep in range(args.repeats):
                for label, uri in variants.items():
                    for n in (1, 2) if rep % 2 == 0 else (2, 1):
                        r = asyncio.run(run(uri, docs, n))
                        out["runs"].append({"variant": label, "repeat": rep, **r})
                        print(label, r, file=sys.stderr, flush=True)
        finally:
            database.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out["cpu_end"] = cpu_context()
    rows = []
    for label in dict.fromkeys(r["variant"] for r in out["runs"]):
        mine = [r for r in out["runs"] if r["variant"] == label]
        one = max(r["docs_per_s"] for r in mine if r["writers"] == 1)
        two = max(r["docs_per_s"] for r in mine if r["writers"] == 2)
        wait2 = max(r["waiting_share"] for r in mine if r["writers"] == 2)
        out.setdefault("summary", {})[label] = {"one": one, "two": two, "ratio": round(two / one, 2), "wait": wait2}
        rows.append([label, one, two, round(two / one, 2), wait2])
    print(
        table(
            ["variant", "1 writer docs/s", "2 writers docs/s", "ratio", "2w: share of samples waiting on a lock"],
            rows,
            title=f"BM25 counters under concurrent writers: {len(docs)} SciFact documents, {out['chunks']} chunks "
            f"(best of {args.repeats}); load at start {out['cpu_start']['loadavg']}, end {out['cpu_end']['loadavg']}",
        )
    )
    write_json(args.json, out)


if __name__ == "__main__":
    main()
