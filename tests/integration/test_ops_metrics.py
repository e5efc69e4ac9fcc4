"""GET /metrics (issue 31): protected, and every family moves after real uploads, searches and chats against
the fake LLM server. Issue 44: the standard process and Python collectors and `ragchat_build_info`, no
`_created` series, and `ragchat worker`'s own series on METRICS_PORT, scraped by a real Prometheus (slow)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ragchat import __version__
from tests.conftest import free_port
from tests.fakes.script import Reply
from tests.support.accounts import setup_admin
from tests.support.chat import chat, names

TOKEN = "scrape-secret-0123456789"


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def total(values: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    want = set(labels.items())
    return sum(v for (n, ls), v in values.items() if n == name and want <= ls)


async def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        r = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain"), r.text
    return samples(r.text)


async def wait_settled(client: httpx.AsyncClient, ids: list[str]) -> None:
    for _ in range(300):
        docs = [(await client.get(f"/api/documents/{i}")).json() for i in ids]
        if all(d["status"] in ("ready", "failed") for d in docs):
            return
        await asyncio.sleep(0.1)
    raise AssertionError("documents not settled")


async def test_metrics_are_protected(live_app: Callable[..., Any]) -> None:
    server = live_app(auth="on", metrics_token=TOKEN)
    admin = await setup_admin(server.url)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as anon:
        assert (await anon.get("/metrics")).status_code == 401
        assert (await anon.get("/metrics", headers={"Authorization": "Bearer wrong"})).status_code == 401
        assert (await anon.get("/metrics", headers={"Authorization": "Basic " + "x" * 5000})).status_code == 401
        assert (await anon.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})).status_code == 200
        assert (await admin.get("/metrics")).status_code == 200  # an admin's session works too
    await admin.aclose()


async def test_every_family_moves_after_real_traffic(live_app: Callable[..., Any], fake_ollama: Any) -> None:
    server = live_app(
        auth="off", metrics_token=TOKEN, ingest_workers=1, ollama_host=fake_ollama.url, rate_search_per_min=6
    )
    before = await scrape(server.url)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        files = [
            ("files", ("glaciers.txt", b"Glaciers carve U-shaped valleys as they move downhill. " * 30, "text/plain")),
            ("files", ("broken.pdf", b"%PDF-1.7 this is not really a pdf", "application/pdf")),
        ]
        r = await client.post("/api/documents", files=files)
        assert r.status_code == 201, r.text
        ids = [x["document"]["id"] for x in r.json()["results"]]
        await wait_settled(client, ids)
        for mode in ("hybrid", "vector", "keyword"):
            assert (await client.get("/api/search", params={"q": "glacier valleys", "mode": mode})).status_code == 200
        codes = [(await client.get("/api/search", params={"q": "glacier"})).status_code for _ in range(4)]
        assert codes[-1] == 429, codes
    fake_ollama.enqueue(
        Reply.tool_call("search_documents", {"query": "glacier valleys"}),
        Reply.text("Glaciers carve U-shaped valleys [1]."),
    )
    events = await chat(server.url, {"message": "How do glaciers shape valleys?"})
    assert names(events)[-1] == "done", names(events)
    fake_ollama.enqueue(Reply.error(500, "scripted failure"))
    assert names(await chat(server.url, {"message": "And again?"}))[-1] == "error"
    after = await scrape(server.url)

    def moved(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert (
        moved("ragchat_http_requests_total", route="/api/search", status="200") == 6
    )  # 3 modes, 3 more within the limit
    assert moved("ragchat_http_requests_total", route="/api/search", status="429") == 1
    assert moved("ragchat_http_request_duration_seconds_count", route="/api/documents", method="POST") == 1
    for stage in ("embed", "vector", "keyword", "fuse", "total"):
        assert moved("ragchat_search_stage_duration_seconds_count", mode="hybrid", stage=stage) >= 1, stage
    assert moved("ragchat_search_stage_duration_seconds_count", mode="keyword", stage="keyword") >= 1
    assert moved("ragchat_chat_time_to_first_token_seconds_count") == 1
    assert moved("ragchat_chat_tokens_per_second_count") == 1
    assert moved("ragchat_chat_tool_rounds_sum") >= 1
    assert moved("ragchat_llm_errors_total") == 1
    assert total(after, "ragchat_ingest_documents", state="ready") == 1
    assert total(after, "ragchat_ingest_documents", state="failed") == 1
    assert moved("ragchat_ingest_chunks_embedded_total") >= 1
    assert moved("ragchat_ingest_documents_failed_total") == 1
    assert ("ragchat_ingest_lease_takeovers_total", frozenset()) in after
    assert total(after, "ragchat_db_pool_connections", state="size") >= 1
    assert total(after, "ragchat_db_pool_connections", state="max") == 10
    assert ("ragchat_db_pool_waiting", frozenset()) in after
    assert moved("ragchat_rate_limit_rejections_total", limit="search") >= 1
    assert total(after, "ragchat_sse_streams_active") == 0  # both streams ended


async def test_standard_collectors_build_info_and_no_created_series(live_app: Callable[..., Any]) -> None:
    server = live_app(auth="off", metrics_token=TOKEN)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    values = samples(r.text)
    assert values[("ragchat_build_info", frozenset({("version", __version__)}))] == 1
    assert total(values, "process_resident_memory_bytes") > 0 and total(values, "process_cpu_seconds_total") > 0
    assert any(name == "python_info" for name, _ in values)
    assert any(name.startswith("python_gc_") for name, _ in values)
    assert not [name for name, _ in values if name.endswith("_created")]  # no `_created` noise


@pytest.fixture
def worker(tmp_path: Path, db: str) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """`ragchat worker` on the test database with METRICS_PORT: its metrics URL, process and log."""
    port = free_port()
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DATABASE_URL": db,
        "DATA_DIR": str(tmp_path / "data"),
        "METRICS_PORT": str(port),
        "METRICS_HOST": "127.0.0.1",
        "HF_HUB_OFFLINE": "1",
        "OLLAMA_HOST": "http://127.0.0.1:9",
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragchat.cli", "worker", "--poll", "0.2"], env=env, stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 180
        while "waiting for queued documents" not in log.read_text():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}", process, log
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


async def ingest_through(server_url: str) -> None:
    """Upload one good and one broken file to a server that leaves ingestion to `ragchat worker`; wait."""
    async with httpx.AsyncClient(base_url=server_url, timeout=60) as client:
        files = [
            ("files", ("fjords.txt", b"Fjords are glacial valleys flooded by the sea. " * 30, "text/plain")),
            ("files", ("broken.pdf", b"%PDF-1.7 this is not really a pdf", "application/pdf")),
        ]
        r = await client.post("/api/documents", files=files)
        assert r.status_code == 201, r.text
        ids = [x["document"]["id"] for x in r.json()["results"]]
        for _ in range(1200):
            docs = [(await client.get(f"/api/documents/{i}")).json() for i in ids]
            if all(d["status"] in ("ready", "failed") for d in docs):
                return
            await asyncio.sleep(0.1)
    raise AssertionError("the worker did not ingest the documents")


async def test_the_worker_serves_its_metrics_and_probes_on_metrics_port(
    live_app: Callable[..., Any], worker: tuple[str, subprocess.Popen[bytes], Path]
) -> None:
    url, _, log = worker
    server = live_app(auth="off", ingest_workers=0)  # the worker ingests, as in the shipped compose file
    await ingest_through(server.url)
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        scraped = await client.get("/metrics")
        assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
        live, ready = await client.get("/livez"), await client.get("/readyz")
        assert live.status_code == 200 and live.json() == {"status": "ok"}
        assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
        assert (await client.get("/")).status_code == 404
    values = samples(scraped.text)
    assert total(values, "ragchat_ingest_chunks_embedded_total") >= 1, log.read_text()[-2000:]
    assert total(values, "ragchat_ingest_documents_failed_total") == 1
    assert ("ragchat_ingest_lease_takeovers_total", frozenset()) in values
    assert total(values, "ragchat_ingest_documents", state="ready") == 1  # the queue, read at scrape time
    assert total(values, "ragchat_db_pool_connections", state="size") >= 1
    assert values[("ragchat_build_info", frozenset({("version", __version__)}))] == 1
    assert total(values, "process_resident_memory_bytes") > 0


@pytest.fixture
def prometheus(worker: tuple[str, subprocess.Popen[bytes], Path], tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """Debian's Prometheus (`.ci/run` installs it) scraping the worker's METRICS_PORT every second: its query
    API's URL and its log."""
    binary = shutil.which("prometheus") or "/usr/bin/prometheus"
    if not Path(binary).exists():
        pytest.skip("Debian's prometheus is not installed (apt-get install prometheus)")
    target = worker[0].removeprefix("http://")
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"scrape_configs:\n  - job_name: ragchat-worker\n    static_configs:\n      - targets: ['{target}']\n"
    )
    port = free_port()
    log = tmp_path / "prometheus.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=out, stderr=out,
        )  # fmt: skip
    try:
        yield f"http://127.0.0.1:{port}/api/v1/query", log
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
async def test_a_real_prometheus_scrapes_the_worker(live_app: Callable[..., Any], prometheus: tuple[str, Path]) -> None:
    """A real Prometheus's query API has the worker's ingestion series, the process collectors and the build
    info, scraped from `ragchat worker`'s METRICS_PORT."""
    api, log = prometheus
    server = live_app(auth="off", ingest_workers=0)
    await ingest_through(server.url)
    wanted = {
        'up{job="ragchat-worker"}': 1.0,
        "ragchat_ingest_chunks_embedded_total": 1.0,
        "ragchat_ingest_documents_failed_total": 1.0,
        'ragchat_ingest_documents{state="ready"}': 1.0,
        "process_resident_memory_bytes": 1.0,
        "ragchat_build_info": 1.0,
    }
    found: dict[str, float] = {}
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient(timeout=10) as client:
        while time.monotonic() < deadline and len(found) < len(wanted):
            for query, least in wanted.items():
                try:
                    result = (await client.get(api, params={"query": query})).json()["data"]["result"]
                except (httpx.TransportError, KeyError, ValueError):
                    continue
                if result and float(result[0]["value"][1]) >= least:
                    found[query] = float(result[0]["value"][1])
            await asyncio.sleep(1)
    assert found.keys() == wanted.keys(), (found, log.read_text()[-2000:])
