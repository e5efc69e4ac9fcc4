"""Two `ragchat worker` processes on one Postgres; `kill -9` of the one holding a document mid-way: the other
takes it over once its lease runs out, and every document is claimed once (twice only for the killed one's)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from uuid import UUID

from server.documents.registration import register_bytes
from server.settings import Settings
from tests.integration.test_ingest import rows
from tests.integration.test_ingest_leases import long_text
from tests.support import LOCAL_OWNER_ID

ROOT = Path(__file__).resolve().parents[2]
LEASE_S = 3.0


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    out = log.open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "server.cli", "worker", "--poll", "0.2"], cwd=ROOT, env=env, stdout=out, stderr=out
    )


def run_and_kill(env: dict[str, str], db: str, big: UUID, tmp_path: Path) -> tuple[set[UUID], float, float]:
    """Start two workers, kill -9 the one holding `big` mid-way; returns what it held, and how long after the
    kill `big` was taken over by the other and was ready."""
    workers = [start_worker(env, tmp_path / f"worker{n}.log") for n in (1, 2)]
    try:
        deadline = time.monotonic() + 120
        while True:  # the big document is under way: some of its chunks embedded, not all
            [doc] = rows(db, "SELECT status, worker_id, chunks_done, chunks_total FROM documents WHERE id = %s", (big,))
            if doc["status"] == "processing" and doc["chunks_done"] and doc["chunks_done"] < doc["chunks_total"]:
                break
            assert doc["status"] != "ready", "the big document finished before it could be interrupted"
            assert time.monotonic() < deadline, doc
            time.sleep(0.02)
        holder = doc["worker_id"]
        victim = next(w for w in workers if w.pid == int(holder.split(":")[1]))
        held = {r["id"] for r in rows(db, "SELECT id FROM documents WHERE worker_id = %s", (holder,))}
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        killed_at = time.monotonic()
        while rows(db, "SELECT worker_id FROM documents WHERE id = %s", (big,))[0]["worker_id"] == holder:
            assert time.monotonic() - killed_at < 60, "the killed worker's document was not taken over"
            time.sleep(0.05)
        taken_over_s = time.monotonic() - killed_at
        while rows(db, "SELECT status FROM documents WHERE id = %s", (big,))[0]["status"] != "ready":
            assert time.monotonic() - killed_at < 120
            time.sleep(0.05)
        finished_s = time.monotonic() - killed_at
        while rows(db, "SELECT count(*) AS n FROM documents WHERE status <> 'ready'")[0]["n"]:
            assert time.monotonic() - killed_at < 180
            time.sleep(0.1)
    finally:
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
                w.wait(timeout=20)
    return held, taken_over_s, finished_s


async def test_a_killed_workers_document_is_finished_by_the_other_within_the_lease(
    pool: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    big = (await register_bytes(pool, LOCAL_OWNER_ID, "big.txt", long_text(150), settings))[0].document_id
    assert big is not None
    for i in range(30):
        await register_bytes(pool, LOCAL_OWNER_ID, f"n{i}.txt", f"Small note {i} about tide pools.".encode(), settings)
    env = {
        **os.environ,
        "DATABASE_URL": db,
        "RAGCHAT_DATA_DIR": str(tmp_path / "data"),
        "HF_HUB_OFFLINE": "1",
        "AUTH": "off",
        "EMBED_BATCH_SIZE": "4",
        "CHUNK_TOKENS": "48",
        "CHUNK_OVERLAP": "0",
        "INGEST_LEASE_S": str(LEASE_S),
    }
    held, taken_over_s, finished_s = await asyncio.to_thread(run_and_kill, env, db, big, tmp_path)
    print(
        f"after kill -9 of its worker the big document was taken over in {taken_over_s:.1f}s and ready in "
        f"{finished_s:.1f}s (lease {LEASE_S}s)"
    )
    assert taken_over_s < LEASE_S + 5
    docs = rows(db, "SELECT id, attempts, chunks_total FROM documents")
    assert len(docs) == 31
    assert {d["id"]: d["attempts"] for d in docs} == {d["id"]: 2 if d["id"] in held else 1 for d in docs}
    chunks = rows(
        db, "SELECT document_id, count(*) AS n, count(DISTINCT chunk_index) AS k FROM document_chunks GROUP BY 1"
    )
    totals = {d["id"]: d["chunks_total"] for d in docs}
    assert all(c["n"] == c["k"] == totals[c["document_id"]] for c in chunks) and len(chunks) == 31
