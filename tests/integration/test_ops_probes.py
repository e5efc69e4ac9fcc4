"""Liveness, readiness and /api/health's cached LLM status (issue 31)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psycopg
import pytest


@pytest.fixture
def silent_llm_url() -> Iterator[str]:
    """An address that accepts connections and never answers: an LLM server hung mid-outage."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


async def test_livez_and_readyz(live_app: Callable[..., Any], closed_ollama_url: str, db: str) -> None:
    server = live_app(ollama_host=closed_ollama_url)  # the LLM is down: still live and ready
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        live = await client.get("/livez")
        assert live.status_code == 200 and live.json() == {"status": "ok"}
        ready = await client.get("/readyz")
        assert ready.status_code == 200, ready.text
        body = ready.json()
        assert body["status"] == "ready" and body["database"] and body["problems"] == []
        assert body["schema_version"] == body["code_schema_version"] and len(body["schema_version"]) == 4
        assert body["embedder"].startswith("all-MiniLM-L6-v2")

        # a newer release migrated this database: not ready, naming both versions
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("INSERT INTO schema_migrations (version, name) VALUES ('9998', '9998_future.sql')")
        try:
            ahead = await client.get("/readyz")
        finally:
            with psycopg.connect(db, autocommit=True) as conn:
                conn.execute("DELETE FROM schema_migrations WHERE version = '9998'")
        assert ahead.status_code == 503 and ahead.json()["status"] == "not_ready"
        assert "9998" in ahead.json()["problems"][0] and body["code_schema_version"] in ahead.json()["problems"][0]
        assert (await client.get("/readyz")).status_code == 200


async def test_health_answers_from_the_cached_llm_status_during_an_outage(
    live_app: Callable[..., Any], silent_llm_url: str
) -> None:
    # every call finds the status stale and starts a new probe, which hangs (3 s) in the background
    server = live_app(ollama_host=silent_llm_url, llm_status_refresh_s=0.01)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        first = await client.get("/api/health")  # at most the first call waits for the start's probe
        assert first.status_code == 200 and not first.json()["llm"]["reachable"]
        took = []
        for _ in range(5):
            began = time.monotonic()
            r = await client.get("/api/health")
            took.append(time.monotonic() - began)
            assert r.status_code == 200 and not r.json()["llm"]["reachable"]
            assert "ollama serve" in r.json()["llm"]["message"]
        assert max(took) < 0.5, took
        assert (await client.get("/livez")).status_code == 200
