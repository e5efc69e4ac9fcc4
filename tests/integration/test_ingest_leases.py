"""The documents queue's leases, heartbeats, attempts cap, retry and cancel (issue 17 item 2), on the real
Postgres with the real embedding model slowed down so a document outlives its lease."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from uuid import UUID

import httpx
import pytest

from ragchat.documents.ingest import queue
from ragchat.documents.ingest.registration import register_bytes
from ragchat.settings import Settings
from tests.support.services import LOCAL_OWNER_ID, make_pipeline


class SlowEmbedder:
    """The session's real embedder, `delay_s` slower per call; counts the texts it embeds (and can fail)."""

    def __init__(self, inner: Any, delay_s: float = 0.0, fail: str | None = None) -> None:
        self.inner = inner
        self.delay_s = delay_s
        self.fail = fail
        self.embedded: list[str] = []
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def embed_documents(self, texts: list[str]) -> Any:
        self.calls += 1
        await asyncio.sleep(self.delay_s)
        if self.fail:
            raise RuntimeError(self.fail)
        self.embedded += texts
        return await self.inner.embed_documents(texts)


def long_text(paragraphs: int) -> bytes:
    return "\n\n".join(
        f"Paragraph {i}: the survey of glacier {i} recorded meltwater channel number {i * 7} and moraine "
        f"ridge {i * 3}, measured twice in season {i % 5}." * 2
        for i in range(paragraphs)
    ).encode()


def quick(settings: Settings, **overrides: Any) -> Settings:
    """Small batches so a document takes several embedding calls; a short lease."""
    values: dict[str, Any] = {"embed_batch_size": 2, "chunk_tokens": 48, "chunk_overlap": 0, "ingest_lease_s": 1.5}
    return settings.model_copy(update={**values, **overrides})


async def one(pool: Any, settings: Settings, name: str, data: bytes) -> UUID:
    [registered] = await register_bytes(pool, LOCAL_OWNER_ID, name, data, settings.ingestion)
    assert registered.document_id is not None
    return registered.document_id


async def state(pool: Any, doc_id: UUID) -> dict[str, Any] | None:
    async with pool.connection() as conn:
        return await (
            await conn.execute(
                """SELECT status, error, attempts, worker_id, lease_until, chunks_done,
                          (SELECT count(*) FROM document_chunks c WHERE c.document_id = d.id) AS chunks
                   FROM documents d WHERE id = %s""",
                (doc_id,),
            )
        ).fetchone()


async def wait_for(predicate: Any, within_s: float = 30.0) -> None:
    deadline = time.monotonic() + within_s
    while not await predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.05)


@pytest.mark.slow  # 9-25 s: `make test-slow` (CI runs it); keeps `make test` under 15 minutes
async def test_a_live_workers_lease_is_renewed_so_a_slow_document_is_processed_once(
    pool: Any, embedder: Any, settings: Settings
) -> None:
    s = quick(settings)
    doc_id = await one(pool, s, "slow.txt", long_text(100))
    slow = SlowEmbedder(embedder, delay_s=0.4)
    first = asyncio.create_task(make_pipeline(pool, slow, s).run())
    started = time.monotonic()
    await wait_for(lambda: _embedding_started(slow))
    others = 0
    while not first.done():  # another worker keeps trying, well past the lease
        other = await make_pipeline(pool, embedder, s).run()
        others += other.documents_done + other.documents_failed
        await asyncio.sleep(0.2)
    progress = await first
    took = time.monotonic() - started
    row = await state(pool, doc_id)
    assert row is not None
    assert took > 2 * s.ingestion.ingest_lease_s, f"the document took {took:.1f}s: not longer than the lease"
    assert others == 0 and progress.documents_done == 1
    assert row["status"] == "ready" and row["attempts"] == 1 and row["worker_id"] is None
    assert len(slow.embedded) == row["chunks"] == len(set(slow.embedded))  # every chunk embedded exactly once


async def test_an_expired_lease_is_taken_by_another_worker(pool: Any, embedder: Any, settings: Settings) -> None:
    s = quick(settings, ingest_lease_s=1.0)
    doc_id = await one(pool, s, "orphan.txt", b"A worker was killed while it held this note about basalt.")
    async with pool.connection() as conn:  # a worker claims it, then dies (no heartbeat)
        [claimed] = await queue.claim(conn, limit=1, worker_id="dead-worker", lease_s=s.ingestion.ingest_lease_s)
    assert claimed["id"] == doc_id
    killed_at = time.monotonic()
    early = await make_pipeline(pool, embedder, s).run()
    assert early.documents_done == 0  # the lease still runs
    for _ in range(100):
        if (await make_pipeline(pool, embedder, s).run()).documents_done:
            break
        await asyncio.sleep(0.1)
    reclaimed_after = time.monotonic() - killed_at
    print(f"reclaimed and ingested {reclaimed_after:.2f}s after the worker died (lease {s.ingestion.ingest_lease_s}s)")
    row = await state(pool, doc_id)
    assert row is not None and row["status"] == "ready" and row["attempts"] == 2 and row["chunks"] == 1
    assert s.ingestion.ingest_lease_s <= reclaimed_after < s.ingestion.ingest_lease_s + 2


async def test_a_document_whose_worker_dies_every_time_fails_after_the_attempts_cap(
    pool: Any, embedder: Any, settings: Settings
) -> None:
    s = quick(settings, ingest_max_attempts=3)
    doc_id = await one(pool, s, "crasher.txt", b"This file kills every worker that reads it.")
    for _ in range(3):
        async with pool.connection() as conn:
            assert [r["id"] for r in await queue.claim(conn, limit=1, worker_id="doomed", lease_s=0.05)] == [doc_id]
        await asyncio.sleep(0.1)
    progress = await make_pipeline(pool, embedder, s).run()
    row = await state(pool, doc_id)
    assert progress.documents_done == 0
    assert row is not None and row["status"] == "failed" and row["attempts"] == 3
    assert row["error"].startswith("gave up after 3 attempts: the worker processing it stopped")


async def test_a_failing_embedder_is_retried_up_to_the_cap_then_fails_with_the_last_error(
    pool: Any, embedder: Any, settings: Settings
) -> None:
    s = quick(settings, ingest_max_attempts=3)
    doc_id = await one(pool, s, "x.txt", b"Embedding this note always fails.")
    broken = SlowEmbedder(embedder, fail="model crashed")
    progress = await make_pipeline(pool, broken, s).run()
    row = await state(pool, doc_id)
    assert broken.calls == 3 and progress.documents_failed == 1
    assert row is not None and row["status"] == "failed" and row["attempts"] == 3
    assert row["error"] == "embedding failed: model crashed"
    async with pool.connection() as conn:
        assert await queue.retry(conn, LOCAL_OWNER_ID, doc_id)
    assert (await make_pipeline(pool, embedder, s).run()).documents_done == 1
    row = await state(pool, doc_id)
    assert row is not None and row["status"] == "ready" and row["attempts"] == 1


async def test_cancelling_a_processing_document_stops_it_between_batches(
    pool: Any, embedder: Any, settings: Settings
) -> None:
    s = quick(settings)
    doc_id = await one(pool, s, "long.txt", long_text(60))
    slow = SlowEmbedder(embedder, delay_s=0.3)
    run = asyncio.create_task(make_pipeline(pool, slow, s).run())
    await wait_for(lambda: _embedding_started(slow))
    async with pool.connection() as conn:
        assert await queue.cancel(conn, LOCAL_OWNER_ID, doc_id)
    calls_at_cancel = slow.calls
    progress = await asyncio.wait_for(run, 10)
    row = await state(pool, doc_id)
    assert row is not None and row["status"] == "failed" and row["error"] == "cancelled" and row["chunks"] == 0
    assert progress.documents_done == 0 and progress.documents_failed == 0
    assert slow.calls <= calls_at_cancel + 1  # the batch under way, then it stops
    assert row["chunks_done"] < 60


async def test_deleting_a_processing_document_is_safe(
    pool: Any, embedder: Any, settings: Settings, live_app: Any
) -> None:
    s = quick(settings)
    doc_id = await one(pool, s, "doomed.txt", long_text(40))
    slow = SlowEmbedder(embedder, delay_s=0.3)
    run = asyncio.create_task(make_pipeline(pool, slow, s).run())
    await wait_for(lambda: _embedding_started(slow))
    server = live_app()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        assert (await client.delete(f"/api/documents/{doc_id}")).status_code == 204
    progress = await asyncio.wait_for(run, 10)
    assert progress.documents_done == 0 and progress.documents_failed == 0
    assert await state(pool, doc_id) is None
    async with pool.connection() as conn:
        left = await (await conn.execute("SELECT count(*) AS n FROM document_chunks")).fetchone()
    assert left is not None and left["n"] == 0


async def _embedding_started(slow: SlowEmbedder) -> bool:
    return slow.calls >= 2


async def test_retry_and_cancel_through_the_api(pool: Any, settings: Settings, live_app: Any) -> None:
    server = live_app()  # no in-process worker: the document stays queued
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        files = [("files", ("note.txt", b"A note about the tides of the Wadden Sea.", "text/plain"))]
        doc = (await client.post("/api/documents", files=files)).json()["results"][0]["document"]
        url = f"/api/documents/{doc['id']}"
        retried_early = await client.post(f"{url}/retry")
        assert retried_early.status_code == 409 and retried_early.json()["code"] == "conflict"
        cancelled = await client.post(f"{url}/cancel")
        assert cancelled.status_code == 200
        assert cancelled.json()["status"] == "failed" and cancelled.json()["error"] == "cancelled"
        assert (await client.post(f"{url}/cancel")).status_code == 409
        retried = await client.post(f"{url}/retry")
        assert retried.status_code == 200 and retried.json()["status"] == "queued" and retried.json()["error"] is None
        missing = "00000000-0000-0000-0000-00000000abcd"
        assert (await client.post(f"/api/documents/{missing}/retry")).status_code == 404
        assert (await client.post(f"/api/documents/{missing}/cancel")).status_code == 404
        # a stuck document (processing, its worker's lease run out) can be retried too
        async with pool.connection() as conn:
            await conn.execute(
                "UPDATE documents SET status = 'processing', worker_id = 'gone', attempts = 3, "
                "lease_until = now() - interval '1 second' WHERE id = %s",
                (doc["id"],),
            )
        stuck = await client.post(f"{url}/retry")
        assert stuck.status_code == 200 and stuck.json()["status"] == "queued"
        row = await state(pool, UUID(doc["id"]))
        assert row is not None and row["attempts"] == 0 and row["worker_id"] is None
        # a cancelled file uploaded again is queued again
        await client.post(f"{url}/cancel")
        again = (await client.post("/api/documents", files=files)).json()["results"][0]
        assert again["status"] == "requeued"


@pytest.mark.parametrize("through_server", [False, True])
async def test_cli_retry(
    pool: Any, settings: Settings, live_app: Any, monkeypatch: pytest.MonkeyPatch, through_server: bool
) -> None:
    from ragchat.cli import main

    a = await one(pool, settings, "a.txt", b"First failed note about lichens.")
    b = await one(pool, settings, "b.txt", b"Second failed note about mosses.")
    c = await one(pool, settings, "c.txt", b"A queued note about ferns.")
    async with pool.connection() as conn:
        await conn.execute("UPDATE documents SET status = 'failed', error = 'boom', attempts = 3 WHERE id <> %s", (c,))
    monkeypatch.setenv("DATABASE_URL", settings.database.database_url or "")
    monkeypatch.setenv("RAGCHAT_DATA_DIR", str(settings.database.data_dir))
    monkeypatch.setenv("AUTH", "off")
    monkeypatch.setenv("INGEST_WORKERS", "0")
    monkeypatch.delenv("RAGCHAT_SERVER", raising=False)
    extra = ["--server", live_app().url] if through_server else ["--local"]
    assert await asyncio.to_thread(main, ["retry", str(a), *extra]) == 0
    assert (await state(pool, a) or {})["status"] == "queued"
    assert (await state(pool, b) or {})["status"] == "failed"
    assert await asyncio.to_thread(main, ["retry", str(c), *extra]) == 1  # queued: nothing to retry
    assert await asyncio.to_thread(main, ["retry", "--all-failed", *extra]) == 0
    row = await state(pool, b)
    assert row is not None and row["status"] == "queued" and row["attempts"] == 0 and row["error"] is None
