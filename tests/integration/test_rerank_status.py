"""An honest rerank status: with the fake Ollama failing every call (500), timing out, or failing half the calls,
the search says failed / failed / partial, keeps an honest order, and warns, in the searcher, over HTTP (GET and
POST /api/search), in the chat tool's result and in the MCP tool's output."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from ragchat.core.options import options_of
from ragchat.core.search import SearchResult
from ragchat.mcp.models import SearchOutput, search_text
from ragchat.providers.llm import build_llm
from ragchat.providers.llm.base import LLMProvider
from ragchat.retrieval.rerank import LLMReranker
from ragchat.retrieval.search import Searcher
from ragchat.settings import Settings
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.support.corpus import Corpus, ingest_files
from tests.support.services import LOCAL, make_searcher

DOCS = {
    "volcano.txt": "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.",
    "bread.txt": "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.",
    "tides.txt": "Ocean tides are caused by the gravitational pull of the moon and the sun on the oceans.",
    "python.md": "# Python\n\nPython lists are mutable sequences; tuples are immutable.",
    "baking.txt": "Baking powder makes quick breads and cakes rise without yeast.",
}
#: the half the fake LLM scores; it answers 500 for the others
SCORES = {"Baking powder": 0.9, "Volcanic": 0.6}
_PASSAGE = re.compile(r'Passage:\n"""\n(.*)\n"""', re.S)
QUERY = "what makes bread rise?"


def fail(body: dict[str, Any]) -> Reply:
    return Reply(status=500, error_message="fake ollama: model crashed")


def slow(body: dict[str, Any]) -> Reply:
    return dataclasses.replace(Reply.json('{"score": 1.0}'), delay=5.0)


def half(body: dict[str, Any]) -> Reply:
    match = _PASSAGE.search(body["messages"][-1]["content"])
    passage = match.group(1) if match else ""
    score = next((s for word, s in SCORES.items() if word in passage), None)
    return fail(body) if score is None else Reply.json(f'{{"score": {score}}}')


@pytest.fixture
async def corpus(pool: Any, embedder: Any, settings: Settings) -> Corpus:
    return await ingest_files(pool, embedder, settings, DOCS)


@pytest.fixture
def on(settings: Settings, fake_ollama: FakeOllama) -> Settings:
    return settings.model_copy(
        update={
            "llm_provider": "ollama",
            "ollama_host": fake_ollama.url,
            "rerank_enabled": True,
            "rerank_timeout_s": 0.5,
            "rerank_deadline_s": 3.0,
        }
    )


@pytest.fixture
async def searcher(corpus: Corpus, pool: Any, embedder: Any, on: Settings) -> AsyncIterator[Searcher]:
    provider: LLMProvider = build_llm(on.llm)
    yield make_searcher(pool, embedder, on, LLMReranker(provider, on.retrieval, on.llm.effective_rerank_model))
    await provider.close()


async def plain_and_reranked(searcher: Searcher) -> tuple[SearchResult, SearchResult, float]:
    plain = await searcher.search(QUERY, principal=LOCAL, options=options_of(searcher.settings, limit=4, rerank=False))
    start = time.perf_counter()
    result = await searcher.search(QUERY, principal=LOCAL, options=options_of(searcher.settings, limit=4))
    return plain, result, time.perf_counter() - start


def assert_failed(plain: SearchResult, result: SearchResult) -> None:
    status = result.rerank
    assert status.requested and status.status == "failed" and not result.reranked
    assert status.scored == 0 and status.candidates == len(DOCS)
    assert status.warning and "Rerank failed" in status.warning and "search order" in status.warning
    assert [c.id for c in result.chunks] == [c.id for c in plain.chunks]  # the fused order, kept
    assert [c.score for c in result.chunks] == [c.score for c in plain.chunks]  # never "0 %"
    assert all(c.trace.rerank_score is None and c.score_kind != "rerank" for c in result.chunks)


async def test_every_call_failing_is_failed(searcher: Searcher, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = fail
    plain, result, _ = await plain_and_reranked(searcher)
    assert len(fake_ollama.chat_requests) >= len(DOCS)
    assert_failed(plain, result)
    assert plain.rerank.status == "off" and not plain.rerank.requested and plain.rerank.warning is None


async def test_every_call_timing_out_is_failed(searcher: Searcher, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = slow
    plain, result, seconds = await plain_and_reranked(searcher)
    assert_failed(plain, result)
    assert seconds < 3.0  # per-call RERANK_TIMEOUT_S (0.5 s) × 5 candidates over 4 slots, not the fake's 5 s


async def test_the_deadline_passing_is_failed(
    corpus: Corpus, pool: Any, embedder: Any, on: Settings, fake_ollama: FakeOllama
) -> None:
    tight = on.model_copy(update={"rerank_timeout_s": 30.0, "rerank_deadline_s": 0.5})
    provider = build_llm(tight.llm)
    try:
        fake_ollama.responder = slow
        searcher = make_searcher(
            pool, embedder, tight, LLMReranker(provider, tight.retrieval, tight.llm.effective_rerank_model)
        )
        plain, result, seconds = await plain_and_reranked(searcher)
    finally:
        await provider.close()
    assert_failed(plain, result)
    assert seconds < 2.5


async def test_half_the_calls_failing_is_partial(searcher: Searcher, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = half
    plain, result, _ = await plain_and_reranked(searcher)
    status = result.rerank
    assert status.status == "partial" and result.reranked and status.requested
    assert (status.scored, status.candidates) == (2, len(DOCS))
    assert status.warning and "2 of 5" in status.warning
    # the scored ones first, by their score; then the unscored ones in the fused order
    assert [c.filename for c in result.chunks[:2]] == ["baking.txt", "volcano.txt"]
    assert [c.trace.rerank_score for c in result.chunks[:2]] == [0.9, 0.6]
    assert all(c.score_kind == "rerank" for c in result.chunks[:2])
    rest = result.chunks[2:]
    fused_order = [
        c.id for c in plain.chunks + await _tail(searcher) if c.filename not in ("baking.txt", "volcano.txt")
    ]
    assert [c.id for c in rest] == fused_order[: len(rest)]
    assert all(c.trace.rerank_score is None and c.score_kind != "rerank" and c.score > 0 for c in rest)
    scores = [c.score for c in result.chunks]
    assert scores == sorted(scores, reverse=True)


async def _tail(searcher: Searcher) -> list[Any]:
    """The fused order beyond the first 4 (the rerank saw limit × factor candidates)."""
    wide = await searcher.search(
        QUERY, principal=LOCAL, options=options_of(searcher.settings, limit=len(DOCS), rerank=False)
    )
    return wide.chunks[4:]


async def test_all_scored_is_ok(searcher: Searcher, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = lambda body: Reply.json('{"score": 0.5}')
    result = await searcher.search(QUERY, principal=LOCAL, options=options_of(searcher.settings, limit=4))
    assert result.rerank.status == "ok" and result.reranked and result.rerank.warning is None
    assert (result.rerank.scored, result.rerank.candidates) == (len(DOCS), len(DOCS))


async def test_http_chat_and_mcp_report_the_status(
    corpus: Corpus, live_app: Any, fake_ollama: FakeOllama, searcher: Searcher
) -> None:
    fake_ollama.responder = fail
    server = live_app(rerank_enabled=True, llm_provider="ollama", ollama_host=fake_ollama.url, rerank_timeout_s=0.5)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        got = (await http.get("/api/search", params={"q": QUERY, "limit": 3})).json()
        posted = (await http.post("/api/search", json={"query": QUERY, "top_k": 3, "rerank": True})).json()
        plain = (await http.get("/api/search", params={"q": QUERY, "limit": 3, "rerank": "false"})).json()
    for body in (got, posted):
        assert body["reranked"] is False
        assert body["rerank"]["status"] == "failed" and body["rerank"]["requested"] is True
        assert "Rerank failed" in body["rerank"]["warning"]
        assert [c["id"] for c in body["chunks"]] == [c["id"] for c in plain["chunks"]]
        assert all(c["score_kind"] != "rerank" and c["score"] > 0 for c in body["chunks"])
    assert plain["rerank"]["status"] == "off"

    from ragchat.chat.engine.tools import tool_result_payload

    result = await searcher.search(QUERY, principal=LOCAL, options=options_of(searcher.settings, limit=3))
    payload = tool_result_payload("call-1", result)
    assert payload["reranked"] is False and payload["rerank"]["status"] == "failed"
    assert "Rerank failed" in payload["rerank"]["warning"]
    out = SearchOutput.of(result)
    assert out.rerank.status == "failed" and "Rerank failed" in search_text(out)
