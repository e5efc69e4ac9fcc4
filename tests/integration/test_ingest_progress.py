"""Honest ingestion progress (issue 17 item 8): chunk counts after every embedded batch with an ETA, the
stage a document is in, and a backoff before a document that hit a passing fault is tried again."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from uuid import UUID

from ragchat.documents.api.schemas import Document
from ragchat.documents.catalog import repository as repo
from ragchat.documents.ingest import queue
from ragchat.settings import Settings
from tests.integration.test_ingest_leases import SlowEmbedder, long_text, one, quick
from tests.support.services import LOCAL_OWNER_ID, make_pipeline


async def document(pool: Any, doc_id: UUID) -> Document:
    async with pool.connection() as conn:
        row = await repo.get_document(conn, LOCAL_OWNER_ID, doc_id)
    assert row is not None
    return Document.of(row)


async def test_progress_is_reported_after_every_batch_with_an_eta(pool: Any, embedder: Any, settings: Settings) -> None:
    s = quick(settings, embed_batch_size=4, ingest_lease_s=30)
    doc_id = await one(pool, s, "glaciers.txt", long_text(40))
    slow = SlowEmbedder(embedder, delay_s=0.15)
    task = asyncio.create_task(make_pipeline(pool, slow, s).run())
    seen: list[Document] = []
    while not task.done():
        seen.append(await document(pool, doc_id))
        await asyncio.sleep(0.03)
    await task
    final = await document(pool, doc_id)
    assert final.stage == "ready" and final.status == "ready" and final.eta_s is None
    embedding = [d for d in seen if d.stage == "embedding"]
    total = final.chunks_total
    assert total is not None and total > 12
    assert all(d.chunks_total == total for d in embedding)  # the total is known as soon as it is parsed
    steps = sorted({d.chunks_done for d in embedding})
    assert len(steps) >= total // 4 - 2, steps  # one report per batch of 4, not one at the end
    assert steps == sorted(steps) and all(0 <= n <= total for n in steps)
    etas = [d.eta_s for d in embedding if d.chunks_done]
    assert etas and all(e is not None and e >= 0 for e in etas)
    # the ETA is the rate so far applied to what is left: at ~0.15 s a batch of 4 it is of that order
    first = next(d for d in embedding if d.chunks_done)
    assert first.eta_s is not None and first.eta_s < (total - first.chunks_done) / 4 * 0.15 * 20


async def test_a_document_queued_again_after_a_fault_waits_out_a_backoff(
    pool: Any, embedder: Any, settings: Settings
) -> None:
    s = quick(settings, ingest_max_attempts=3, ingest_retry_backoff_s=0.6)
    doc_id = await one(pool, s, "x.txt", b"Embedding this note fails while the model is away.")
    broken = SlowEmbedder(embedder, fail="connection refused")
    started = time.monotonic()
    task = asyncio.create_task(make_pipeline(pool, broken, s).run())
    waiting: Document | None = None
    while not task.done():
        d = await document(pool, doc_id)
        if d.stage == "waiting" and waiting is None:
            waiting = d
            async with pool.connection() as conn:  # not due yet: no worker may take it
                assert await queue.claim(conn, limit=5, worker_id="other", lease_s=5) == []
        await asyncio.sleep(0.02)
    progress = await task
    elapsed = time.monotonic() - started
    assert waiting is not None and waiting.status == "queued" and waiting.retry_at is not None
    assert waiting.error == "embedding failed: connection refused"  # the page can say why it waits
    assert broken.calls == 3 and progress.documents_failed == 1
    assert elapsed >= 0.6 + 1.2  # 0.6 s after the first failure, 1.2 s after the second
    final = await document(pool, doc_id)
    assert final.stage == "failed" and final.retry_at is None and final.attempts == 3


async def test_the_progress_object_gives_the_cli_an_eta(pool: Any, embedder: Any, settings: Settings) -> None:
    s = quick(settings, embed_batch_size=4, ingest_lease_s=30)
    ids = [await one(pool, s, f"g{i}.txt", long_text(6 + i)) for i in range(3)]
    reports: list[tuple[int, int, float | None]] = []
    started = time.perf_counter()

    def report(p: Any) -> None:
        reports.append((p.chunks_embedded + p.chunks_reused, p.chunks_total, p.eta_s(3, time.perf_counter() - started)))

    progress = await make_pipeline(pool, SlowEmbedder(embedder, delay_s=0.05), s, on_progress=report).run(ids)
    assert progress.documents_done == 3
    assert len(reports) > 6  # every batch, not only every document
    done = [r[0] for r in reports]
    assert done == sorted(done) and done[-1] == progress.chunks_done == progress.chunks_total
    assert reports[-1][2] == 0.0 and all(r[2] is None or r[2] >= 0 for r in reports)
