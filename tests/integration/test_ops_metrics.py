"""GET /metrics (issue 31): protected, and every family moves after real uploads, searches and chats against
the fake LLM server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

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
