"""Read replicas (DATABASE_READ_URL, issue 30) against a real primary and real physical-replication replicas:
PostgreSQL servers from the embedded package's binaries (initdb, `pg_basebackup -R`, pg_ctl), started here.

That a search ran on the replica is shown by what it sees: with the replica's replay paused, a document
written on the primary afterwards is not found by a search routed to the replica, and is found on the primary.
A replica that lags past DATABASE_READ_MAX_LAG, or is stopped, is skipped with one log line; searches answer
from the primary meanwhile, and the replica is used again once it is back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragchat.core.options import options_of
from ragchat.db.replicas import ReadRouter
from ragchat.documents.catalog.listing import ListQuery
from ragchat.documents.ingest.registration import register_bytes
from ragchat.runtime import Overrides, Runtime, open_runtime
from ragchat.settings import Settings
from tests.conftest import LiveServer, free_port, make_settings
from tests.support.replication import Cluster, Server
from tests.support.services import LOCAL, LOCAL_OWNER_ID, make_pipeline

pytestmark = pytest.mark.slow

BASE = {
    "volcano.txt": "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.",
    "bread.txt": "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.",
}
LATE = "Narwhals are arctic whales whose males grow a long spiral tusk from the upper jaw."


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path_factory.mktemp("replication") / "cluster")
    try:
        cluster.start_primary()
        cluster.add_replica()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def replica(cluster: Cluster) -> Iterator[Server]:
    """The replica, running and replaying (whatever a test did to it), caught up."""
    server = cluster.replicas[0]
    if not server.running():
        server.start()
    server.sql("SELECT pg_wal_replay_resume()")
    yield server
    if not server.running():
        server.start()
    server.sql("SELECT pg_wal_replay_resume()")


def settings_for(cluster: Cluster, tmp_path: Path, **overrides: Any) -> Settings:
    assert cluster.primary is not None
    values: dict[str, Any] = {
        "database_read_url": cluster.replicas[0].uri("ragchat-read"),
        "database_read_check_s": 0.2,
        "database_read_max_lag": 60.0,
        "db_watchdog_interval_s": 0,
    }
    return make_settings(cluster.primary.uri(), tmp_path, **{**values, **overrides})


@pytest.fixture
async def started(cluster: Cluster, replica: Server, tmp_path: Path, embedder: Any) -> AsyncIterator[Any]:
    """`started(**settings)`: a runtime over the cluster, the base documents ingested, the replica caught up."""
    stack: list[Any] = []

    async def start(**overrides: Any) -> Runtime:
        settings = settings_for(cluster, tmp_path, **overrides)
        context = open_runtime(settings, Overrides(embedder=embedder))
        rt = await context.__aenter__()
        stack.append(context)
        async with rt.pool.connection() as conn:
            await conn.execute("TRUNCATE documents CASCADE")
        await ingest(rt, BASE)
        await asyncio.to_thread(cluster.wait_caught_up, replica)
        return rt

    yield start
    for context in reversed(stack):
        await context.__aexit__(None, None, None)


async def ingest(rt: Runtime, docs: dict[str, str]) -> None:
    for name, text in docs.items():
        await register_bytes(rt.pool, LOCAL_OWNER_ID, name, text.encode(), rt.settings.ingestion)
    await make_pipeline(rt.pool, rt.embedder, rt.settings).run()


async def found(rt: Runtime, query: str, filename: str) -> bool:
    options = options_of(rt.settings.retrieval, mode="hybrid", limit=3)
    result = await rt.searcher.search(query, principal=LOCAL, options=options)
    return any(hit.filename == filename for hit in result.chunks)


async def listed(rt: Runtime) -> int:
    query = ListQuery(None, None, None, None, "created_at", "desc", 50, 0, None, None, None)
    _, total = await rt.documents.catalog.list_page(LOCAL, query)
    return total


async def until(condition: Any, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)


def router(rt: Runtime) -> ReadRouter:
    assert rt.reads is not None and rt.reads.replicas
    return rt.reads


def skipped_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "skipped" in r.getMessage() and "read replica" in r.getMessage()]


async def test_searches_and_listings_run_on_the_replica_and_a_writer_reads_the_primary(
    started: Any, replica: Server
) -> None:
    rt = await started()
    reads = router(rt)
    assert reads.replicas[0].healthy, reads.status()
    assert await found(rt, "what makes sourdough bread rise?", "bread.txt")
    assert await listed(rt) == 2

    replica.sql("SELECT pg_wal_replay_pause()")  # the replica stops at what it has: the two documents
    await ingest(rt, {"narwhal.txt": LATE})  # written on the primary, not seen by the replica
    before = reads.replicas[0].reads
    assert not await found(rt, "narwhal tusk", "narwhal.txt"), "the search was not answered by the replica"
    assert await listed(rt) == 2, "the listing was not answered by the replica"
    assert reads.replicas[0].reads == before + 2
    apps = replica.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ragchat-read'")[0][0]
    assert isinstance(apps, int) and apps >= 1  # the router's pool holds connections to the replica

    reads.note_write(LOCAL_OWNER_ID)  # as after the user's own upload: their reads go to the primary
    assert await found(rt, "narwhal tusk", "narwhal.txt")
    assert await listed(rt) == 3
    assert reads.replicas[0].reads == before + 2

    reads._writes.clear()  # the window over; the replica replays again and has the new document
    replica.sql("SELECT pg_wal_replay_resume()")
    await asyncio.to_thread(reads_caught_up, replica, rt)
    assert await found(rt, "narwhal tusk", "narwhal.txt")
    assert reads.replicas[0].reads == before + 3


def reads_caught_up(replica: Server, rt: Runtime) -> None:
    deadline = time.monotonic() + 30
    while replica.sql("SELECT count(*) FROM documents WHERE status = 'ready'")[0][0] != 3:
        if time.monotonic() > deadline:
            raise AssertionError("the replica did not catch up")
        time.sleep(0.05)


async def test_a_lagging_replica_is_skipped_once_and_used_again_when_it_catches_up(
    started: Any, replica: Server, caplog: pytest.LogCaptureFixture
) -> None:
    rt = await started(database_read_max_lag=1.0)
    reads = router(rt)
    await asyncio.sleep(1.5)  # an idle primary does not make a caught-up replica lag
    assert reads.replicas[0].healthy, reads.status()
    assert (reads.replicas[0].lag_s or 0) < 1.0

    caplog.set_level(logging.INFO, logger="ragchat.db.replicas")
    replica.sql("SELECT pg_wal_replay_pause()")
    await ingest(rt, {"narwhal.txt": LATE})
    await until(lambda: not reads.replicas[0].healthy, within=10)
    assert "lags" in (reads.replicas[0].reason or ""), reads.status()
    before = reads.replicas[0].reads
    for _ in range(5):  # answered correctly, from the primary
        assert await found(rt, "narwhal tusk", "narwhal.txt")
    assert reads.replicas[0].reads == before
    await asyncio.sleep(0.6)  # more checks: still one line
    assert len(skipped_lines(caplog)) == 1, skipped_lines(caplog)
    assert "lags" in skipped_lines(caplog)[0]

    replica.sql("SELECT pg_wal_replay_resume()")
    await until(lambda: reads.replicas[0].healthy, within=15)
    assert any("is back" in r.getMessage() for r in caplog.records)
    assert await found(rt, "narwhal tusk", "narwhal.txt")
    assert reads.replicas[0].reads == before + 1


async def test_a_stopped_replica_is_skipped_and_searches_answer_from_the_primary(
    started: Any, replica: Server, caplog: pytest.LogCaptureFixture
) -> None:
    rt = await started()
    reads = router(rt)
    assert await found(rt, "what makes sourdough bread rise?", "bread.txt")  # opens pool connections to it
    caplog.set_level(logging.INFO, logger="ragchat.db.replicas")
    await asyncio.to_thread(replica.stop)
    started_at = time.monotonic()
    for _ in range(8):  # the first one fails on the replica and runs again on the primary
        assert await found(rt, "what makes sourdough bread rise?", "bread.txt")
        assert await listed(rt) == 2
    assert time.monotonic() - started_at < 15  # bounded: no pool timeout per request
    assert not reads.replicas[0].healthy
    await asyncio.sleep(0.6)
    assert len(skipped_lines(caplog)) == 1, skipped_lines(caplog)

    await asyncio.to_thread(replica.start)
    await until(lambda: reads.replicas[0].healthy, within=15)
    before = reads.replicas[0].reads
    assert await found(rt, "what makes sourdough bread rise?", "bread.txt")
    assert reads.replicas[0].reads == before + 1
    assert len(skipped_lines(caplog)) == 1


async def test_a_replica_down_at_start_does_not_stop_the_server(
    started: Any, cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ragchat.db.replicas")
    nobody = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    rt = await started(database_read_url=nobody)
    assert await found(rt, "what makes sourdough bread rise?", "bread.txt")
    status = router(rt).status()[0]
    assert not status["healthy"] and "does not answer" in status["reason"]
    lines = skipped_lines(caplog)
    assert len(lines) == 1 and "does not answer" in lines[0] and "127.0.0.1" in lines[0]


async def test_a_url_to_another_server_is_not_used(started: Any, pg_uri: str, caplog: pytest.LogCaptureFixture) -> None:
    """DATABASE_READ_URL pointing at a server that is not a replica of DATABASE_URL (the test session's own)."""
    caplog.set_level(logging.INFO, logger="ragchat.db.replicas")
    rt = await started(database_read_url=pg_uri)
    status = router(rt).status()[0]
    assert not status["healthy"]
    assert "not a replica of DATABASE_URL" in status["reason"] or "not a standby" in status["reason"]
    assert await found(rt, "what makes sourdough bread rise?", "bread.txt")


async def test_over_http_readyz_and_read_your_writes(cluster: Cluster, replica: Server, started: Any) -> None:
    """Through the real app: /readyz shows the replica; an upload is listed at once for its uploader (primary)
    while the replica is paused, and not for a read that does not follow a write."""
    from ragchat.app import create_app

    rt = await started()
    app = create_app(rt.settings, rt)
    with LiveServer(app) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            ready = (await client.get("/readyz")).json()
            assert ready["replicas"][0]["healthy"] is True
            assert ready["replicas"][0]["replica"].startswith("127.0.0.1:")
            search = await client.get("/api/search", params={"q": "sourdough bread", "limit": 3})
            assert search.status_code == 200
            assert any(c["filename"] == "bread.txt" for c in search.json()["chunks"])

            replica.sql("SELECT pg_wal_replay_pause()")
            upload = await client.post("/api/documents", files=[("files", ("late.txt", LATE.encode(), "text/plain"))])
            assert upload.status_code == 201, upload.text
            listing = (await client.get("/api/documents")).json()
            assert listing["total"] == 3  # the uploader's listing comes from the primary
            router(rt)._writes.clear()  # someone else's view (another process): the replica's
            assert (await client.get("/api/documents")).json()["total"] == 2
            searched = await client.post("/api/search", json={"query": "narwhal tusk", "top_k": 3})
            assert searched.status_code == 200, searched.text  # a search by POST is a read: no window opens
            assert (await client.get("/api/documents")).json()["total"] == 2
            metrics = (await client.get("/metrics")).text
            assert "ragchat_db_replica_healthy" in metrics
