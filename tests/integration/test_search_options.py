"""A search's options are resolved once, the same way, whatever the entry point: the request's, else the user's
preferences, else the environment's (server/ragchat/core/options.py). One live server, a fake LLM that scores
rerank passages (and records each call); the same question through the chat page route, /api/search,
/api/rag, /v1, MCP (streamable HTTP) and the CLI."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from ragchat.cli.search import search as cli_search
from ragchat.settings import Settings
from tests.fakes.ollama_server import FakeOllama
from tests.fakes.script import Reply
from tests.support.accounts import upload, wait_ready
from tests.support.chat import all_of, chat

DOCS = {
    "tides.txt": "Ocean tides are caused mainly by the gravity of the moon, and partly by the sun.",
    "bread.txt": "Sourdough bread rises because wild yeast ferments the dough overnight.",
    "moon.txt": "The moon orbits the earth every 27 days; its gravity pulls the oceans into tides.",
    "python.md": "# Python\n\nPython lists are mutable sequences; tuples are immutable.",
}
QUERY = "what causes the ocean tides"
LIMIT = 3
_PASSAGE = re.compile(r'Passage:\n"""\n(.*)\n"""', re.S)
#: the environment says keyword, relative fusion's opposite and no rerank; the user's preferences say hybrid and
#: rerank; FUSION=rrf has no preference, so the environment's holds
ENV = {"search_mode": "keyword", "fusion": "rrf", "rerank_enabled": False, "ingest_workers": 1}
PREFERENCES = {"search_mode": "hybrid", "rerank": True}


def is_rerank(body: dict[str, Any]) -> bool:
    return bool(_PASSAGE.search(str(body["messages"][-1].get("content") or "")))


def responder(body: dict[str, Any]) -> Reply:
    """Rerank prompts get a score by content; a chat call with tools searches; anything else is an answer."""
    if is_rerank(body):
        passage = _PASSAGE.search(body["messages"][-1]["content"]).group(1)  # type: ignore[union-attr]
        return Reply.json(json.dumps({"score": 0.9 if "moon" in passage else 0.2}))
    if body.get("tools") and body["messages"][-1]["role"] == "user":
        return Reply.tool_call("search_documents", {"query": body["messages"][-1]["content"]})
    return Reply.text("The moon's gravity [1].")


def rrf_fused(trace: dict[str, Any], k: int = 60) -> float | None:
    """What FUSION=rrf gives a hit with these ranks (both arms weighted 1, divided by 2 / (k + 1))."""
    ranks = [r for r in (trace.get("vector_rank"), trace.get("keyword_rank")) if r is not None]
    return sum(1 / (k + r) for r in ranks) / (2 / (k + 1)) if ranks else None


def decision(out: dict[str, Any], mode_key: str = "search_mode") -> tuple[str, bool, bool, bool]:
    """(mode, rerank asked, reranked, every hit fused by RRF): what each entry point must agree on."""
    chunks = out["chunks"]
    fused_by_rrf = all(
        c["trace"]["fused_score"] is not None and abs(c["trace"]["fused_score"] - rrf_fused(c["trace"])) < 1e-3  # type: ignore[operator]
        for c in chunks
    )
    return out[mode_key], bool(out["rerank"]["requested"]), bool(out["reranked"]), fused_by_rrf and bool(chunks)


@pytest.fixture
async def served(live_app: Callable[..., Any], fake_ollama: FakeOllama, settings: Settings) -> dict[str, Any]:
    overrides = {**ENV, "ollama_host": fake_ollama.url}
    server = live_app(**overrides)
    fake_ollama.responder = responder
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        ids = [await upload(client, name, text) for name, text in DOCS.items()]
        await wait_ready(client, ids)
        put = await client.put("/api/preferences", json=PREFERENCES)
        assert put.status_code == 200, put.text
    return {"url": server.url, "settings": settings.model_copy(update=overrides)}


async def test_every_entry_point_decides_the_same(
    served: dict[str, Any], fake_ollama: FakeOllama, capsys: pytest.CaptureFixture[str]
) -> None:
    url = served["url"]
    decisions: dict[str, tuple[str, bool, bool, bool]] = {}
    rerank_calls: dict[str, int] = {}

    def reranks() -> int:
        return sum(1 for r in fake_ollama.chat_requests if isinstance(r.body, dict) and is_rerank(r.body))

    def asked(where: str) -> str:  # the rerank's scores are cached per query: one query per entry point
        return f"{QUERY}? ({where})"

    before = reranks()
    events = await chat(url, {"message": asked("page")})
    result = all_of(events, "tool_result")[0]
    decisions["page"] = decision(result)
    rerank_calls["page"], before = reranks() - before, reranks()

    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        got = (await client.get("/api/search", params={"q": asked("search"), "limit": LIMIT})).json()
        decisions["/api/search"] = decision(got, "mode")
        rerank_calls["/api/search"], before = reranks() - before, reranks()

        rag = await client.post("/api/rag", json={"query": asked("rag"), "top_k": LIMIT, "debug": True})
        assert rag.status_code == 200, rag.text
        body = rag.json()
        debug = body["debug"]  # /api/rag reports whether it reranked, not what was asked
        decisions["/api/rag"] = decision(
            {**debug, "rerank": {"requested": debug["reranked"]}, "chunks": body["chunks"]}
        )
        rerank_calls["/api/rag"], before = reranks() - before, reranks()

        v1 = await client.post(
            "/v1/chat/completions", json={"model": "ragchat", "messages": [{"role": "user", "content": asked("v1")}]}
        )
        assert v1.status_code == 200, v1.text
        rerank_calls["/v1"], before = reranks() - before, reranks()

    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=60)) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        found = await session.call_tool("search_documents", {"query": asked("mcp"), "limit": LIMIT})
        out: dict[str, Any] = found.structured_content  # type: ignore[assignment]
        decisions["mcp"] = decision(out)
        rerank_calls["mcp"], before = reranks() - before, reranks()

    capsys.readouterr()
    args = argparse.Namespace(
        query=asked("cli"), mode=None, top_k=LIMIT, rerank=None, filter=None, document=None, collection=None,
        json=True, rag=False, local=True, server=None, token=None, user=None, all=False,
    )  # fmt: skip
    assert await cli_search(served["settings"], args) == 0
    printed = json.loads(capsys.readouterr().out)
    decisions["cli"] = decision(printed, "mode")
    rerank_calls["cli"] = reranks() - before

    # hybrid (the preference, not SEARCH_MODE=keyword), reranked (the preference, not RERANK_ENABLED=false),
    # fused by RRF (FUSION: no preference) — from every entry point
    assert decisions == dict.fromkeys(decisions, ("hybrid", True, True, True)), decisions
    assert all(n > 0 for n in rerank_calls.values()), rerank_calls  # the LLM really scored passages each time


async def test_the_request_still_wins_and_bad_options_are_400(served: dict[str, Any]) -> None:
    url = served["url"]
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        preferences = (await client.get("/api/preferences")).json()
        assert preferences["values"]["search_mode"] == "hybrid" and preferences["defaults"]["search_mode"] == "keyword"
        assert (await client.get("/api/settings")).json() == preferences  # the old name, which the page calls
        got = (await client.get("/api/search", params={"q": QUERY, "mode": "vector", "rerank": "false"})).json()
        assert (got["mode"], got["rerank"]["requested"]) == ("vector", False)
        for hostile in ("semantic", "hybrid'; DROP TABLE documents;--", "x" * 10_000, "\x00"):
            search = await client.get("/api/search", params={"q": QUERY, "mode": hostile})
            rag = await client.post("/api/rag", json={"query": QUERY, "mode": hostile})
            page = await client.post("/api/chat", json={"message": QUERY, "search_mode": hostile})
            for response in (search, rag, page):
                assert response.status_code == 400, (hostile[:20], response.text)
                assert len(response.text) < 500  # the error does not echo 10,000 characters
                if response is not search or "\x00" not in hostile:  # a NUL in a URL is refused before
                    assert "vector, keyword or hybrid" in response.text, response.text


async def test_the_rerank_cost_cap_applies_to_chat_and_rag_too(
    live_app: Callable[..., Any], fake_ollama: FakeOllama
) -> None:
    """RERANK_MAX_CANDIDATES=30 with RERANK_CANDIDATES_FACTOR=3: a rerank may ask for 10 passages at most."""
    server = live_app(ollama_host=fake_ollama.url, rerank_max_candidates=30, chat_search_limit=12)
    fake_ollama.responder = responder
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        for response in (
            await client.post("/api/chat", json={"message": QUERY, "rerank": True}),
            await client.post("/api/rag", json={"query": QUERY, "top_k": 11, "rerank": True}),
            await client.get("/api/search", params={"q": QUERY, "limit": 11, "rerank": "true"}),
        ):
            assert response.status_code == 400, response.text
            assert "RERANK_MAX_CANDIDATES=30" in response.text
        assert fake_ollama.chat_requests == []  # refused before any model call
        ok = await client.post("/api/rag", json={"query": QUERY, "top_k": 10, "rerank": True})
        assert ok.status_code == 200, ok.text
