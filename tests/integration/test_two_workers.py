"""The server plus two `ragchat worker` processes on one Postgres ingest 50 documents (issue 17 item 4).

`kill -9` of the worker holding the big document mid-way: the other takes it over once its lease runs out and
finishes it. Every document is embedded and stored exactly once (counted from the workers' own log lines),
and a search through the server during the whole run never returns a document that is not fully stored.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest

from ragchat.documents.ingest.registration import register_bytes
from ragchat.settings import Settings
from tests.integration.test_ingest import rows
from tests.integration.test_ingest_leases import long_text
from tests.support.services import LOCAL_OWNER_ID

pytestmark = pytest.mark.slow  # minutes: `make test-slow` (CI runs it)

ROOT = Path(__file__).resolve().parents[2]
LEASE_S = 3.0
STORED = re.compile(r"stored document ([0-9a-f-]{36}): (\d+) chunks \((\d+) embedded here")


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    out = log.open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "ragchat.cli", "worker", "--poll", "0.2"], cwd=ROOT, env=env, stdout=out, stderr=out
    )


class SearchWatcher(threading.Thread):
    """Searches through the server over and over; records every hit whose document was not fully stored."""

    def __init__(self, url: str, db: str) -> None:
        super().__init__(daemon=True)
        self.url, self.db = url, db
        self.stop = threading.Event()
        self.searches = 0
        self.documents_seen: set[str] = set()
        self.half_seen: list[dict[str, Any]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._watch()
        except BaseException as exc:  # the test asserts there was none
            self.error = exc

    def _watch(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            while not self.stop.is_set():
                for q in ("glacier meltwater moraine", "tide pools note"):
                    r = client.get("/api/search", params={"q": q, "mode": "keyword", "limit": 50})
                    r.raise_for_status()
                    ids = {h["document_id"] for h in r.json()["chunks"]}
                    self.searches += 1
                    self.documents_seen |= ids
                    if not ids:
                        continue
                    for d in rows(
                        self.db,
                        """SELECT id::text, status, chunks_total,
                                  (SELECT count(*) FROM document_chunks c WHERE c.document_id = d.id) AS stored
                           FROM documents d WHERE id = ANY(%s::uuid[])""",
                        (list(ids),),
                    ):  # chunks become visible in the transaction that makes the document ready, never before
                        if d["status"] != "ready" or d["stored"] != d["chunks_total"]:
                            self.half_seen.append(d)
                time.sleep(0.2)


def run_and_kill(env: dict[str, str], db: str, big: UUID, tmp_path: Path) -> tuple[set[UUID], float, float, str]:
    """Start two workers, kill -9 the one holding `big` mid-way; returns what it held, how long after the kill
    `big` was taken over by the other and was ready, and the workers' logs."""
    logs = [tmp_path / f"worker{n}.log" for n in (1, 2)]
    workers = [start_worker(env, log) for log in logs]
    try:
        deadline = time.monotonic() + 180
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
            assert time.monotonic() - killed_at < 180
            time.sleep(0.05)
        finished_s = time.monotonic() - killed_at
        while rows(db, "SELECT count(*) AS n FROM documents WHERE status <> 'ready'")[0]["n"]:
            assert time.monotonic() - killed_at < 240
            time.sleep(0.1)
    finally:
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
                w.wait(timeout=20)
    return held, taken_over_s, finished_s, "\n".join(log.read_text(errors="replace") for log in logs)


async def test_the_server_and_two_workers_ingest_50_documents_each_once_through_a_kill(
    pool: Any, settings: Settings, db: str, tmp_path: Path, live_app: Any
) -> None:
    big = (await register_bytes(pool, LOCAL_OWNER_ID, "big.txt", long_text(60), settings.ingestion))[0].document_id
    assert big is not None
    for i in range(49):
        note = f"Small note {i} about tide pools: anemone count {i * 13}, limpets {i * 7}, on transect {i}."
        await register_bytes(pool, LOCAL_OWNER_ID, f"n{i}.txt", note.encode(), settings.ingestion)
    server = live_app()  # serves search; its own ingestion worker is off (INGEST_WORKERS=0 in the tests)
    watcher = SearchWatcher(server.url, db)
    watcher.start()
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
    try:
        held, taken_over_s, finished_s, logs = await asyncio.to_thread(run_and_kill, env, db, big, tmp_path)
    finally:
        watcher.stop.set()
        watcher.join(timeout=30)
    print(
        f"after kill -9 of its worker the big document was taken over in {taken_over_s:.1f}s and ready in "
        f"{finished_s:.1f}s (lease {LEASE_S}s); {watcher.searches} searches during the run"
    )
    assert taken_over_s < LEASE_S + 5
    docs = rows(db, "SELECT id, attempts, chunks_total FROM documents")
    assert len(docs) == 50
    # claimed once each, twice only what the killed worker held
    assert {d["id"]: d["attempts"] for d in docs} == {d["id"]: 2 if d["id"] in held else 1 for d in docs}
    # stored once each, and every chunk embedded once: the workers' own counts (the killed one logged nothing
    # for what it held; what it had embedded was lost with it, and the survivor embedded those in full)
    stored = [(UUID(m[1]), int(m[2]), int(m[3])) for m in STORED.finditer(logs)]
    assert Counter(d for d, _, _ in stored) == Counter({d["id"]: 1 for d in docs})
    totals = {d["id"]: d["chunks_total"] for d in docs}
    assert all(n == totals[d] and embedded == n for d, n, embedded in stored)
    chunks = rows(
        db, "SELECT document_id, count(*) AS n, count(DISTINCT chunk_index) AS k FROM document_chunks GROUP BY 1"
    )
    assert all(c["n"] == c["k"] == totals[c["document_id"]] for c in chunks) and len(chunks) == 50
    embeddings = rows(db, "SELECT count(*) AS n, count(DISTINCT chunk_id) AS k FROM chunk_embeddings")[0]
    assert embeddings["n"] == embeddings["k"] == sum(totals.values())
    # search saw documents appear while they were ingested, and never one half-stored
    assert watcher.error is None
    assert watcher.searches > 10 and len(watcher.documents_seen) > 1
    assert watcher.half_seen == []
