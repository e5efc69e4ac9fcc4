"""Query expansion (QUERY_EXPANSION) through the searcher and /api/search, with the fake Ollama over real HTTP:
the expansion used (keywords reach the keyword arm, hyde the vector arm), and an honest unexpanded search with a
status and warning when the reply is invalid, the call fails or times out; hostile replies are bounded."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from ragchat.core.options import options_of
from ragchat.providers.llm import build_llm
from ragchat.retrieval.expansion import LLMExpander
from ragchat.retrieval.search import Searcher
from ragchat.settings import Settings
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.support.corpus import Corpus, ingest_files
from tests.support.services import LOCAL, make_spaces

DOCS: dict[str, bytes | str] = {
    "volcano.txt": "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.",
    "bread.txt": "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.",
    "tides.txt": "Ocean tides are caused by the gravitational pull of the moon and the sun on the oceans.",
    "baking.txt": "Baking powder makes quick breads and cakes rise without yeast.",
}
QUERY = "leavening agents"  # no document has these words: keyword search alone finds nothing
TERM = re.compile(r"^[^\W_](?:[\w -]*[^\W_])?$")


@pytest.fixture
async def corpus(pool: Any, embedder: Any, settings: Settings) -> Corpus:
    return await ingest_files(pool, embedder, settings, DOCS)


@pytest.fixture
def on(settings: Settings, fake_ollama: FakeOllama) -> Settings:
    return settings.model_copy(
        update={"llm_provider": "ollama", "ollama_host": fake_ollama.url, "expansion_timeout_s": 0.5}
    )


@pytest.fixture
async def searcher(corpus: Corpus, pool: Any, embedder: Any, on: Settings) -> AsyncIterator[Searcher]:
    provider = build_llm(on.llm)
    yield Searcher(
        pool,
        make_spaces(pool, embedder, on),
        on.retrieval,
        expander=LLMExpander(provider, on.retrieval, on.llm.effective_rerank_model, cache_size=0),
    )
    await provider.close()


async def search(searcher: Searcher, query: str = QUERY, **asked: Any) -> Any:
    return await searcher.search(query, principal=LOCAL, options=options_of(searcher.settings, limit=4, **asked))


async def test_keywords_reach_the_keyword_arm(searcher: Searcher, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = lambda body: Reply.json({"terms": ["yeast", "baking powder", "leavening", "agents"]})
    plain = await search(searcher, mode="keyword")
    assert plain.chunks == [] and plain.expansion.status == "off" and not fake_ollama.chat_requests
    result = await search(searcher, mode="keyword", expansion="keywords")
    assert result.expansion.status == "ok" and result.expansion.requested == "keywords"
    assert result.expansion.terms == ["yeast", "baking powder"]  # the query's own words are not "extra"
    assert result.expansion.warning is None and result.timings.expand_ms > 0
    assert {c.filename for c in result.chunks} == {"bread.txt", "baking.txt"}
    sent = fake_ollama.chat_requests[-1].body
    assert "Query: leavening agents" in sent["messages"][-1]["content"]
    assert sent["format"]["properties"]["terms"]["type"] == "array"  # the JSON schema goes to the model
    assert 0 < sent["options"]["num_predict"] <= 24 + 16 * searcher.settings.expansion_max_terms  # a bounded reply


async def test_hyde_moves_the_vector_arm_not_the_confidence(searcher: Searcher, fake_ollama: FakeOllama) -> None:
    passage = "Lava, ash and volcanic gases erupt from the crater when magma rises."
    fake_ollama.responder = lambda body: Reply.json({"passage": passage})
    query = "a mountain that explodes"
    plain = await search(searcher, query, mode="vector")
    result = await search(searcher, query, mode="vector", expansion="hyde")
    assert result.expansion.status == "ok" and result.expansion.passage == passage and not result.expansion.terms
    assert result.chunks[0].filename == "volcano.txt"
    top = next(c for c in plain.chunks if c.id == result.chunks[0].id)
    assert result.chunks[0].trace.vector_score != top.trace.vector_score  # ranked by query + passage
    assert result.chunks[0].similarity == top.similarity  # the confidence: the query alone
    assert result.confidence == plain.confidence
    assert fake_ollama.chat_requests[-1].body["options"]["num_predict"] > 0


async def test_a_hypothetical_passage_cut_by_its_token_bound_is_used_as_far_as_it_goes(
    searcher: Searcher, fake_ollama: FakeOllama
) -> None:
    cut = '{"passage": "Lava, ash and volcanic gases erupt from the crater when magma rises and the mountain exp'
    fake_ollama.responder = lambda body: Reply.json(cut)  # what a model stopped by num_predict sends
    result = await search(searcher, "a mountain that explodes", mode="vector", expansion="hyde")
    assert result.expansion.status == "ok" and result.expansion.passage.endswith("the mountain exp")
    assert result.chunks[0].filename == "volcano.txt"


def _unexpanded(plain: Any, result: Any, status: str, words: str) -> None:
    assert result.expansion.status == status and result.expansion.requested == "keywords"
    assert result.expansion.terms == [] and words in (result.expansion.warning or "")
    assert "query alone" in (result.expansion.warning or "")
    assert [c.id for c in result.chunks] == [c.id for c in plain.chunks]


@pytest.mark.parametrize(
    "reply",
    [
        Reply.json("not json at all"),
        Reply.json({"terms": "yeast"}),  # not a list
        Reply.json({"terms": [1, 2]}),  # not strings
        Reply.json({"terms": ["&|!", "'\"()", "   "]}),  # nothing left once operators go
        Reply.json({"words": ["yeast"]}),
    ],
)
async def test_an_invalid_reply_searches_unexpanded(searcher: Searcher, fake_ollama: FakeOllama, reply: Reply) -> None:
    fake_ollama.responder = lambda body: reply
    plain = await search(searcher, "what makes bread rise")
    result = await search(searcher, "what makes bread rise", expansion="keywords")
    _unexpanded(plain, result, "invalid", "unusable")


async def test_a_failed_call_searches_unexpanded(searcher: Searcher, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = lambda body: Reply(status=500, error_message="fake ollama: model crashed")
    plain = await search(searcher, "what makes bread rise")
    result = await search(searcher, "what makes bread rise", expansion="keywords")
    _unexpanded(plain, result, "error", "failed")


async def test_a_timeout_searches_unexpanded_in_bounded_time(searcher: Searcher, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = lambda body: dataclasses.replace(Reply.json({"terms": ["yeast"]}), delay=20.0)
    plain = await search(searcher, "what makes bread rise")
    start = time.perf_counter()
    result = await search(searcher, "what makes bread rise", expansion="keywords")
    assert time.perf_counter() - start < 15  # EXPANSION_TIMEOUT_S is 0.5 s, the fake would wait 20 s
    _unexpanded(plain, result, "timeout", "timed out")


async def test_hostile_keywords_are_bounded_and_plain_words(searcher: Searcher, fake_ollama: FakeOllama) -> None:
    hostile = [
        "yeast & !flour | 'x':*",
        "' OR 1=1; DROP TABLE documents; --",
        "<script>alert(1)</script>",
        "Hefe",
        "酵母",
        "дрожжи и закваска",
        "x" * 5000,
        "a b c d e f g h i j",
    ] + [f"term{i}" for i in range(20_000)]
    fake_ollama.responder = lambda body: Reply.json({"terms": hostile})
    result = await search(searcher, "what makes bread rise", expansion="keywords")
    terms = result.expansion.terms
    assert result.expansion.status == "ok" and 0 < len(terms) <= searcher.settings.expansion_max_terms
    assert all(TERM.match(t) and len(t) <= 40 and len(t.split()) <= 4 for t in terms), terms
    assert terms[:3] == ["yeast flour x", "OR 1 1 DROP", "script alert 1 script"]
    assert "酵母" in terms and "дрожжи и закваска" in terms  # another language: kept as words, searched safely
    assert result.chunks and result.chunks[0].filename in {"bread.txt", "baking.txt"}


async def test_a_huge_hypothetical_passage_is_capped(searcher: Searcher, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = lambda body: Reply.json({"passage": "magma erupts " * 50_000})
    start = time.perf_counter()
    result = await search(searcher, "volcano", expansion="hyde")
    assert time.perf_counter() - start < 10
    assert result.expansion.status == "ok" and result.expansion.passage
    assert len(result.expansion.passage) <= searcher.settings.expansion_max_chars
    assert result.chunks[0].filename == "volcano.txt"


async def test_no_expander_says_so(corpus: Corpus, pool: Any, embedder: Any, on: Settings) -> None:
    searcher = Searcher(pool, make_spaces(pool, embedder, on), on.retrieval)
    result = await search(searcher, "what makes bread rise", expansion="hyde")
    assert result.expansion.status == "off" and result.expansion.requested == "hyde"
    assert "not available" in (result.expansion.warning or "") and result.chunks


async def test_http_reports_the_expansion_and_rejects_unknown_kinds(
    corpus: Corpus, live_app: Any, fake_ollama: FakeOllama
) -> None:
    fake_ollama.responder = lambda body: Reply.json({"terms": ["yeast"]})
    server = live_app(llm_provider="ollama", ollama_host=fake_ollama.url, query_expansion="keywords")
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        default = (await http.get("/api/search", params={"q": QUERY, "mode": "keyword"})).json()
        off = (await http.get("/api/search", params={"q": QUERY, "mode": "keyword", "expansion": "off"})).json()
        posted = await http.post("/api/search", json={"query": QUERY, "mode": "keyword", "expansion": "KEYWORDS"})
        bad = await http.get("/api/search", params={"q": QUERY, "expansion": "sql' OR 1=1"})
        long = await http.post("/api/search", json={"query": QUERY, "expansion": "x" * 10_000})
    assert default["expansion"]["status"] == "ok" and default["expansion"]["terms"] == ["yeast"]
    assert [c["filename"] for c in default["chunks"]] == ["bread.txt", "baking.txt"]
    assert default["timing_ms"]["expand_ms"] > 0
    assert off["expansion"]["status"] == "off" and off["chunks"] == []
    assert posted.status_code == 200 and posted.json()["expansion"]["status"] == "ok"
    assert bad.status_code == 400 and "unknown expansion" in json.dumps(bad.json())
    assert long.status_code == 400
