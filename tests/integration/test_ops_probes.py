"""Liveness, readiness and /api/health's cached LLM status (issue 31); probes by a pod's IP and /livez from the
first second of `ragchat serve` (issue 44)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.conftest import free_port


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


async def test_probes_answer_a_pod_ip_host_and_every_other_path_refuses_it(live_app: Callable[..., Any]) -> None:
    """Issue 44: a Kubernetes probe or a scrape names the pod's IP, which is not in ALLOWED_HOSTS: the probe paths
    answer it (GET/HEAD only; /metrics still wants its token), every other path keeps the 400."""
    server = live_app(auth="on", allowed_hosts=["chat.example.org"], metrics_token="scrape-secret-0123456789")
    pod = {"Host": "10.42.0.17:8000"}
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        assert (await client.get("/livez", headers=pod)).status_code == 200
        ready = await client.get("/readyz", headers=pod)
        assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
        scrape = await client.get("/metrics", headers={**pod, "Authorization": "Bearer scrape-secret-0123456789"})
        assert scrape.status_code == 200 and "ragchat_build_info" in scrape.text
        assert (await client.get("/metrics", headers=pod)).status_code == 401  # exempt from the Host check only
        for method, path in [("GET", "/api/health"), ("GET", "/"), ("GET", "/api/documents"),
                             ("GET", "/readyz/../api/health"), ("GET", "/schema")]:  # fmt: skip
            refused = await client.request(method, path, headers=pod)
            assert refused.status_code == 400 and refused.json()["code"] == "bad_host", (method, path, refused.text)
        # a Host that does not parse is refused on the probe paths too
        for bad in ("user@10.42.0.17", "10.42.0.17:99999", "x" * 400):
            assert (await client.get("/livez", headers={"Host": bad})).status_code == 400, bad
        assert (await client.get("/api/health", headers={"Host": "chat.example.org"})).status_code == 200


def _serve(tmp_path: Path, db: str, port: int, **env: str) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "serve.log"
    environment = {
        **os.environ,
        "DATABASE_URL": db,
        "DATA_DIR": str(tmp_path / "data"),
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "AUTH": "off",
        "INGEST_WORKERS": "0",
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "HF_HUB_OFFLINE": "1",
        **env,
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragchat.cli", "serve"], cwd=tmp_path, env=environment, stdout=out, stderr=out
        )
    return process, log


def test_livez_answers_from_the_first_second_of_serve_and_the_log_is_json(tmp_path: Path, db: str) -> None:
    """`ragchat serve` binds its port at once: /livez is 200 and other routes 503 `starting` while the database,
    migrations and the embedding model load; then the app answers. With LOG_FORMAT=json every line it writes
    (uvicorn's, warnings, the banner) is one JSON object."""
    port = free_port()
    began = time.monotonic()
    serve, log = _serve(tmp_path, db, port, LOG_FORMAT="json", LOG_LEVEL="info")
    url = f"http://127.0.0.1:{port}"
    first_live: float | None = None
    starting: list[httpx.Response] = []
    try:
        while "ready at" not in log.read_text():
            assert serve.poll() is None and time.monotonic() - began < 180, log.read_text()
            try:
                live = httpx.get(f"{url}/livez", timeout=2)
                if live.status_code == 200 and first_live is None:
                    first_live = time.monotonic() - began
                if not starting:
                    starting.append(httpx.get(f"{url}/api/health", timeout=2))
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        ready_at = time.monotonic() - began
        assert first_live is not None, log.read_text()
        assert starting and starting[0].status_code == 503, [r.text for r in starting]
        assert starting[0].json()["code"] == "starting" and starting[0].headers["retry-after"]
        assert httpx.get(f"{url}/api/health", timeout=10).status_code == 200
        assert httpx.get(f"{url}/livez", timeout=10).status_code == 200
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
    # python's own start (imports) before the port is bound is a few seconds on these cores; the app's start
    # (the embedding model) comes after it
    assert first_live < ready_at, (first_live, ready_at)
    lines = log.read_text().splitlines()
    events = [json.loads(line) for line in lines]  # every line is JSON
    assert [e["event"] for e in events if e.get("event")][:2] == ["starting", "ready"], events
    assert serve.returncode in (0, -signal.SIGTERM), lines[-5:]  # uvicorn re-raises the signal it handled


def test_a_start_that_fails_ends_the_process(tmp_path: Path, db: str) -> None:
    """/livez answers while the app starts, so a start that fails must end the process (a supervisor restarts
    it), saying why: here the embedding model cannot be loaded."""
    port = free_port()
    serve, log = _serve(tmp_path, db, port, EMBED_MODEL="no-such-org/no-such-embedding-model")
    try:
        serve.wait(timeout=180)
    finally:
        serve.kill()
    text = log.read_text()
    assert serve.returncode == 1, text[-3000:]
    assert "ragchat could not start" in text and "ready at" not in text, text[-3000:]
