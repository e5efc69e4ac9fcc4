"""Reranked search on the real Postgres and embedding model, with a fake LLM scoring: every test runs against the
fake Ollama and the fake OpenAI-compatible server (`llm` fixture)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from ragchat.core.options import options_of
from ragchat.providers.llm import build_llm
from ragchat.providers.llm.base import LLMProvider
from ragchat.retrieval.rerank import LLMReranker
from ragchat.settings import Settings
from tests.fakes.ollama_server import Reply
from tests.fakes.plugin import LLMFake
from tests.support.corpus import Corpus, ingest_files
from tests.support.services import LOCAL, make_searcher

DOCS = {
    "volcano.txt": "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.",
    "bread.txt": "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.",
    "tides.txt": "Ocean tides are caused by the gravitational pull of the moon and the sun on the oceans.",
    "python.md": "# Python\n\nPython lists are mutable sequences; tuples are immutable.",
    "baking.txt": "Baking powder makes quick breads and cakes rise without yeast.",
}
#: what the fake "LLM" thinks of each document for any query: a word of the passage → score
JUDGEMENT = {"Baking powder": 0.95, "Volcanic": 0.7, "Sourdough": 0.4, "tides": 0.2}
_PASSAGE = re.compile(r'Passage:\n"""\n(.*)\n"""', re.S)


def judge(body: dict[str, Any]) -> Reply:
    match = _PASSAGE.search(body["messages"][-1]["content"])
    passage = match.group(1) if match else ""
    score = next((s for word, s in JUDGEMENT.items() if word in passage), 0.05)
    return Reply.json(f'```json\n{{"score": {score}}}\n```')


@pytest.fixture
async def corpus(pool: Any, embedder: Any, settings: Settings) -> Corpus:
    return await ingest_files(pool, embedder, settings, DOCS)


@pytest.fixture
async def client(llm: LLMFake, settings: Settings) -> AsyncIterator[LLMProvider]:
    llm.fake.responder = judge
    provider = build_llm(settings.model_copy(update=llm.settings).llm)
    yield provider
    await provider.close()


async def test_searcher_reranks_by_the_llm_scores(
    corpus: Corpus, pool: Any, embedder: Any, settings: Settings, llm: LLMFake, client: LLMProvider
) -> None:
    searcher = make_searcher(
        pool,
        embedder,
        settings.model_copy(update={"rerank_enabled": True}),
        LLMReranker(client, settings.retrieval, settings.llm.effective_rerank_model),
    )
    query = "what makes sourdough bread rise?"
    plain = await searcher.search(query, principal=LOCAL, options=options_of(searcher.settings, limit=3, rerank=False))
    assert not plain.reranked and plain.timings.rerank_ms == 0
    assert plain.chunks[0].filename == "bread.txt" and plain.chunks[0].trace.rerank_score is None
    assert llm.fake.chat_requests == []

    result = await searcher.search(query, principal=LOCAL, options=options_of(searcher.settings, limit=3))
    assert result.reranked and result.timings.rerank_ms > 0
    assert [c.filename for c in result.chunks] == ["baking.txt", "volcano.txt", "bread.txt"]
    assert [c.score for c in result.chunks] == [0.95, 0.7, 0.4]
    for chunk in result.chunks:
        assert chunk.score == chunk.trace.rerank_score
        assert chunk.trace.vector_rank is not None and chunk.trace.fused_score is not None
    bread = next(c for c in result.chunks if c.filename == "bread.txt")
    assert bread.trace.keyword_rank == 1 and bread.trace.vector_rank == 1  # retrieval trace kept
    # limit × rerank_candidates_factor = 9 candidates asked for; the corpus has 5 chunks
    assert len(llm.fake.chat_requests) == len(DOCS)
    assert all(llm.json_schema(r)["properties"]["score"]["maximum"] == 1 for r in llm.fake.chat_requests)  # type: ignore[index]

    again = await searcher.search(
        query, principal=LOCAL, options=options_of(searcher.settings, limit=3)
    )  # cached: no new LLM calls
    assert [c.id for c in again.chunks] == [c.id for c in result.chunks]
    assert len(llm.fake.chat_requests) == len(DOCS)


async def test_candidates_are_limit_times_factor(
    corpus: Corpus, pool: Any, embedder: Any, settings: Settings, llm: LLMFake, client: LLMProvider
) -> None:
    tuned = settings.model_copy(update={"rerank_enabled": True, "rerank_candidates_factor": 2})
    searcher = make_searcher(
        pool, embedder, tuned, LLMReranker(client, tuned.retrieval, tuned.llm.effective_rerank_model)
    )
    result = await searcher.search(
        "bread", principal=LOCAL, options=options_of(searcher.settings, limit=1, mode="vector")
    )
    assert result.reranked and len(result.chunks) == 1
    assert len(llm.fake.chat_requests) == 2
    assert result.chunks[0].score == result.chunks[0].trace.rerank_score


async def test_llm_down_keeps_retrieval_order_and_says_so(
    corpus: Corpus, pool: Any, embedder: Any, settings: Settings, closed_ollama_url: str, llm: LLMFake
) -> None:
    down = build_llm(
        settings.model_copy(
            update={**llm.settings, "ollama_host": closed_ollama_url, "openai_base_url": closed_ollama_url}
        ).llm
    )
    on = settings.model_copy(update={"rerank_enabled": True})
    searcher = make_searcher(pool, embedder, on, LLMReranker(down, on.retrieval, on.llm.effective_rerank_model))
    plain = await searcher.search(
        "ocean tides moon", principal=LOCAL, options=options_of(searcher.settings, limit=3, rerank=False)
    )
    result = await searcher.search("ocean tides moon", principal=LOCAL, options=options_of(searcher.settings, limit=3))
    await down.close()
    assert not result.reranked and result.rerank.status == "failed" and result.rerank.warning
    assert [c.id for c in result.chunks] == [c.id for c in plain.chunks]
    assert [c.score for c in result.chunks] == [c.score for c in plain.chunks]  # not 0 % relevance


async def test_http_search_reports_rerank(corpus: Corpus, live_app: Any, llm: LLMFake) -> None:
    llm.fake.responder = judge
    server = live_app(rerank_enabled=True, **llm.settings)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        response = await http.get("/api/search", params={"q": "what makes bread rise?", "limit": 2})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["reranked"] is True
        assert body["timing_ms"]["rerank_ms"] > 0
        assert [c["filename"] for c in body["chunks"]] == ["baking.txt", "volcano.txt"]
        assert [c["score"] for c in body["chunks"]] == [0.95, 0.7]
        assert body["chunks"][0]["trace"]["rerank_score"] == 0.95
        assert body["chunks"][0]["trace"]["vector_rank"] is not None
        assert len(llm.fake.chat_requests) == len(DOCS)

        plain = (await http.get("/api/search", params={"q": "what makes bread rise?", "rerank": "false"})).json()
        assert plain["reranked"] is False and plain["timing_ms"]["rerank_ms"] == 0
        assert all(c["trace"]["rerank_score"] is None for c in plain["chunks"])
        assert len(llm.fake.chat_requests) == len(DOCS)


async def test_app_reranks_through_its_own_sharded_client(corpus: Corpus, live_app: Any, llm: LLMFake) -> None:
    """No client handed in: the app builds its provider (and, for Ollama, the rerank shards) from settings."""
    llm.fake.responder = judge
    server = live_app(rerank_enabled=True, **llm.settings)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        body = (await http.get("/api/search", params={"q": "what makes bread rise?", "limit": 2})).json()
    assert body["reranked"] is True
    assert [c["filename"] for c in body["chunks"]] == ["baking.txt", "volcano.txt"]
    assert len(llm.fake.chat_requests) == len(DOCS)
