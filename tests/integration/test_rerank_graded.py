"""Graded LLM rerank (issue 42): scores from token probabilities, over real HTTP to the fake Ollama and the fake
OpenAI-compatible server, on the real Postgres and embedding model. Logprobs present → graded order; absent or
malformed → the JSON score, remembered, with an honest status; a label outside Yes/No; listwise with a window
larger than the model's context; the early stop; passages cut to the sentences near the query."""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ragchat.core.options import options_of
from ragchat.core.search import ChunkHit, SearchResult
from ragchat.providers.llm import build_llm
from ragchat.providers.llm.base import LLMProvider
from ragchat.retrieval.rerank import LLMReranker, blend
from ragchat.retrieval.rerank_graded import YES_NO_SYSTEM, listwise_budget, trim_passage
from ragchat.retrieval.search import Searcher
from ragchat.settings import RetrievalSettings, Settings
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.plugin import LLMFake
from tests.fakes.script import Reply
from tests.support.corpus import Corpus, ingest_files
from tests.support.services import LOCAL, make_searcher

DOCS: dict[str, bytes | str] = {
    "volcano.txt": "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.",
    "bread.txt": "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.",
    "tides.txt": "Ocean tides are caused by the gravitational pull of the moon and the sun on the oceans.",
    "python.md": "# Python\n\nPython lists are mutable sequences; tuples are immutable.",
    "baking.txt": "Baking powder makes quick breads and cakes rise without yeast.",
}
QUERY = "what makes bread rise?"
#: the fake model's P(yes) per document (a word of the passage); what it answers in JSON: coarse, as small ones do
P_YES = {"Baking powder": 0.9, "Sourdough": 0.8, "Volcanic": 0.3, "tides": 0.1, "Python": 0.05}
JSON_SCORE = {"Baking powder": 0.5, "Sourdough": 0.5, "Volcanic": 0.0, "tides": 0.0, "Python": 0.0}
_PASSAGE = re.compile(r'Passage:\n"""\n(.*)\n"""', re.S)


def passage_of(body: dict[str, Any]) -> str:
    match = _PASSAGE.search(body["messages"][-1]["content"])
    return match.group(1) if match else ""


def asks_logprobs(body: dict[str, Any]) -> bool:
    return bool(body.get("logprobs"))


def yes_no(p: float) -> dict[str, float]:
    """First-token alternatives for P(yes) = p, spread over spellings (" yes" and "YES" count as yes)."""
    return {"Yes": math.log(p * 0.7), " yes": math.log(p * 0.2), "YES": math.log(p * 0.1), "No": math.log(1 - p)}


def word_of(passage: str, table: dict[str, float]) -> float:
    return next((v for word, v in table.items() if word in passage), 0.0)


def graded(body: dict[str, Any]) -> Reply:
    """Logprobs requests: a Yes/No token with probabilities; JSON requests: the coarse score."""
    passage = passage_of(body)
    if asks_logprobs(body):
        return Reply.label(yes_no(word_of(passage, P_YES)))
    return Reply.json({"score": word_of(passage, JSON_SCORE)})


def no_logprobs(body: dict[str, Any]) -> Reply:
    """A server that ignores `logprobs` (Ollama < 0.12.11, a proxy): the text only."""
    if asks_logprobs(body):
        return Reply.text("Yes")
    return Reply.json({"score": word_of(passage_of(body), JSON_SCORE)})


def malformed(body: dict[str, Any]) -> Reply:
    if asks_logprobs(body):
        return Reply(deltas=("Yes",), logprobs=[{"token": "Yes", "logprob": "very likely"}])
    return Reply.json({"score": word_of(passage_of(body), JSON_SCORE)})


def volcano_rambles(body: dict[str, Any]) -> Reply:
    """The volcano passage gets an answer outside the labels ("The" ...), the others Yes/No."""
    passage = passage_of(body)
    if asks_logprobs(body) and "Volcanic" in passage:
        return Reply.label({"The": -0.2, "Passage": -1.9, "**": -3.0})
    return graded(body)


@pytest.fixture
async def corpus(pool: Any, embedder: Any, settings: Settings) -> Corpus:
    return await ingest_files(pool, embedder, settings, DOCS)


def tuned(settings: Settings, llm: LLMFake, **update: Any) -> Settings:
    base = {"rerank_enabled": True, "rerank_method": "logprobs", "rerank_concurrency": 1, "rerank_early_stop": False}
    return settings.model_copy(update={**llm.settings, **base, **update})


@pytest.fixture
async def provider(llm: LLMFake, settings: Settings) -> AsyncIterator[LLMProvider]:
    client = build_llm(settings.model_copy(update=llm.settings).llm)
    yield client
    await client.close()


async def search(searcher: Searcher, limit: int = 5, rerank: bool = True) -> SearchResult:
    return await searcher.search(
        QUERY, principal=LOCAL, options=options_of(searcher.settings, limit=limit, rerank=rerank)
    )


def names(result: SearchResult | list[ChunkHit]) -> list[str]:
    chunks: list[ChunkHit] = list(result) if isinstance(result, list) else list(result.chunks)
    return [c.filename for c in chunks]


async def test_logprobs_give_graded_scores_in_their_order(
    corpus: Corpus, pool: Any, embedder: Any, settings: Settings, llm: LLMFake, provider: LLMProvider
) -> None:
    llm.fake.responder = graded
    on = tuned(settings, llm)
    searcher = make_searcher(pool, embedder, on, LLMReranker(provider, on.retrieval, on.llm.effective_rerank_model))
    result = await search(searcher)
    assert result.rerank.status == "ok" and result.rerank.method == "logprobs" and result.rerank.warning is None
    assert names(result) == ["baking.txt", "bread.txt", "volcano.txt", "tides.txt", "python.md"]
    assert [c.score for c in result.chunks] == [0.9, 0.8, 0.3, 0.1, 0.05]  # graded, where JSON said 0.5/0.5/0/0/0
    requests = llm.fake.chat_requests
    assert len(requests) == len(DOCS) and all(asks_logprobs(r.body) for r in requests)
    for r in requests:
        assert r.body["top_logprobs"] == 20 and llm.json_schema(r) is None
        one_token = r.body.get("max_tokens") if llm.provider == "openai" else r.body["options"]["num_predict"]
        assert one_token == 1
        # the shared prefix first: the same instructions, then the query, then the passage
        assert r.body["messages"][0]["content"] == YES_NO_SYSTEM
        assert r.body["messages"][1]["content"].startswith(f"Query: {QUERY}\n\nPassage:")


async def test_the_default_blends_the_scores_with_the_search_order(
    corpus: Corpus, pool: Any, embedder: Any, settings: Settings, llm: LLMFake, provider: LLMProvider
) -> None:
    llm.fake.responder = graded
    default = RetrievalSettings.model_fields["rerank_retrieval_weight"].default
    assert 0 < default < 1
    on = tuned(settings, llm, rerank_retrieval_weight=default, rerank_candidates_factor=1)
    plain = names(await search(make_searcher(pool, embedder, settings), rerank=False))
    searcher = make_searcher(pool, embedder, on, LLMReranker(provider, on.retrieval, on.llm.effective_rerank_model))
    result = await search(searcher)
    p_yes = {c.filename: word_of(c.content, P_YES) for c in result.chunks}
    expected = sorted(plain, key=lambda n: -blend(p_yes[n], plain.index(n), len(plain), default))
    assert names(result) == expected
    assert expected != sorted(plain, key=lambda n: -p_yes[n])  # the search order changed what P(yes) alone says
    assert [c.score for c in result.chunks] == pytest.approx(
        [blend(p_yes[n], plain.index(n), len(plain), default) for n in expected]
    )
    assert [c.trace.rerank_score for c in result.chunks] == pytest.approx([p_yes[n] for n in expected])


async def test_llamacpp_is_asked_to_cache_the_prompt(
    corpus: Corpus, pool: Any, embedder: Any, settings: Settings, fake_openai: FakeOpenAI
) -> None:
    """llama.cpp (it answers GET /props) gets `cache_prompt: true`; a server without /props does not."""
    fake_openai.responder = graded
    for n_ctx, expected in ((None, None), (4096, True)):
        fake_openai.n_ctx = n_ctx
        mark = len(fake_openai.chat_requests)
        on = settings.model_copy(
            update={"llm_provider": "openai", "openai_base_url": fake_openai.url, "rerank_method": "logprobs"}
        )
        client = build_llm(on.llm)
        try:
            hits = await LLMReranker(client, on.retrieval, on.llm.effective_rerank_model).rerank_with_status(
                QUERY, await candidates(pool, embedder, on), 3
            )
        finally:
            await client.close()
        assert hits.method == "logprobs"
        assert {r.body.get("cache_prompt") for r in fake_openai.chat_requests[mark:]} == {expected}


async def candidates(pool: Any, embedder: Any, settings: Settings) -> list[ChunkHit]:
    plain = await search(make_searcher(pool, embedder, settings), rerank=False)
    return plain.chunks


@pytest.mark.parametrize("responder", [no_logprobs, malformed], ids=["absent", "malformed"])
async def test_no_or_malformed_logprobs_fall_back_to_json_and_are_remembered(
    corpus: Corpus, pool: Any, embedder: Any, settings: Settings, llm: LLMFake, provider: LLMProvider, responder: Any
) -> None:
    llm.fake.responder = responder
    on = tuned(settings, llm)
    reranker = LLMReranker(provider, on.retrieval, on.llm.effective_rerank_model, cache_size=0)
    searcher = make_searcher(pool, embedder, on, reranker)
    plain = await search(searcher, rerank=False)
    result = await search(searcher)
    status = result.rerank
    assert status.status == "ok" and status.scored == len(DOCS) and status.method == "json"
    assert status.warning and "Graded rerank is not available" in status.warning and "JSON" in status.warning
    assert sorted(c.score for c in result.chunks) == sorted(word_of(c.content, JSON_SCORE) for c in plain.chunks)
    assert names(result)[:2] == [n for n in names(plain) if n in ("baking.txt", "bread.txt")]  # ties: search order
    asked = [asks_logprobs(r.body) for r in llm.fake.chat_requests]
    assert asked == [True] + [False] * len(DOCS)  # one try, then JSON for every passage (the first one too)

    mark = len(llm.fake.chat_requests)
    again = await search(searcher)
    assert again.rerank.method == "json" and again.rerank.warning
    assert not any(asks_logprobs(r.body) for r in llm.fake.chat_requests[mark:])  # remembered: no retry per call


async def test_a_label_outside_yes_no_is_scored_by_json(
    corpus: Corpus, pool: Any, embedder: Any, settings: Settings, llm: LLMFake, provider: LLMProvider
) -> None:
    llm.fake.responder = volcano_rambles
    on = tuned(settings, llm)
    searcher = make_searcher(
        pool, embedder, on, LLMReranker(provider, on.retrieval, on.llm.effective_rerank_model, cache_size=0)
    )
    result = await search(searcher)
    status = result.rerank
    assert status.status == "ok" and status.method == "logprobs+json"
    assert status.warning and "outside Yes/No for 1 of 5" in status.warning
    volcano = next(c for c in result.chunks if c.filename == "volcano.txt")
    assert volcano.score == JSON_SCORE["Volcanic"]
    assert names(result)[:2] == ["baking.txt", "bread.txt"]
    json_calls = [r for r in llm.fake.chat_requests if not asks_logprobs(r.body)]
    assert len(json_calls) == 1 and "Volcanic" in passage_of(json_calls[0].body)
    mark = len(llm.fake.chat_requests)
    await search(searcher)  # a stray answer does not switch logprobs off
    assert sum(asks_logprobs(r.body) for r in llm.fake.chat_requests[mark:]) == len(DOCS)


LABEL = re.compile(r"^\[([A-T])\]\n(.*?)(?=\n\n\[[A-T]\]\n|\n\n(?:Which|List) )", re.S | re.M)


def listwise_best(body: dict[str, Any]) -> Reply:
    """Listwise: the baking passage's label likeliest, then bread's; JSON: the same ranking."""
    labels = {label: text for label, text in LABEL.findall(body["messages"][-1]["content"])}
    order = sorted(labels, key=lambda label: -word_of(labels[label], P_YES))
    if asks_logprobs(body):
        return Reply.label({label: math.log(word_of(labels[label], P_YES) / 3) for label in order})
    return Reply.json({"ranking": order})


async def test_listwise_window_larger_than_the_context_is_cut_to_fit(
    corpus: Corpus, pool: Any, embedder: Any, settings: Settings, fake_openai: FakeOpenAI
) -> None:
    fake_openai.responder = listwise_best
    fake_openai.n_ctx = 420  # llama.cpp's /props: room for three 200-character passages, not ten
    on = settings.model_copy(
        update={"llm_provider": "openai", "openai_base_url": fake_openai.url, "rerank_method": "listwise"}
    )
    client = build_llm(on.llm)
    try:
        hits = await candidates(pool, embedder, on)
        reranker = LLMReranker(
            client, on.retrieval.model_copy(update={"rerank_listwise_size": 10}), on.llm.effective_rerank_model
        )
        out = await reranker.rerank_with_status(QUERY, hits, 5)
        assert len(fake_openai.chat_requests) == 1
        body = fake_openai.chat_requests[0].body
        prompt = "".join(m["content"] for m in body["messages"])
        assert len(prompt) / 3 + 1 <= 420  # the prompt and a one-token answer fit, at 3 characters a token
        window = listwise_budget(10, len(QUERY), on.retrieval.rerank_passage_chars, 420)
        assert window.size == 3 == len(LABEL.findall(body["messages"][-1]["content"]))
        assert out.method == "listwise" and out.scored == 3 and out.skipped == 2 and out.candidates == 5
        first3 = hits[:3]
        best = sorted(first3, key=lambda h: -word_of(h.content, P_YES))
        assert [h.id for h in out.hits[:3]] == [h.id for h in best]
        assert [h.id for h in out.hits[3:]] == [h.id for h in hits[3:]]  # beyond the window: search order

        again = await reranker.rerank_with_status(QUERY, hits, 5)  # the whole window cached: no call
        assert len(fake_openai.chat_requests) == 1 and [h.id for h in again.hits] == [h.id for h in out.hits]

        fake_openai.n_ctx = 200  # not even two passages fit: nothing scored, and the status says why
        tiny = LLMReranker(build_llm(on.llm), on.retrieval, on.llm.effective_rerank_model)
        none = await tiny.rerank_with_status(QUERY, hits, 5)
        assert none.scored == 0 and none.note and "cannot hold two passages" in none.note
        assert len(fake_openai.chat_requests) == 1
        await tiny.llm.close()
    finally:
        await client.close()


async def test_listwise_without_logprobs_asks_for_a_json_ranking(
    corpus: Corpus, pool: Any, embedder: Any, settings: Settings, llm: LLMFake, provider: LLMProvider
) -> None:
    def json_only(body: dict[str, Any]) -> Reply:
        return Reply.text("A") if asks_logprobs(body) else listwise_best(body)

    llm.fake.responder = json_only
    on = tuned(settings, llm, rerank_method="listwise")
    searcher = make_searcher(pool, embedder, on, LLMReranker(provider, on.retrieval, on.llm.effective_rerank_model))
    plain = await search(searcher, rerank=False)
    result = await search(searcher)
    assert result.rerank.status == "ok" and result.rerank.method == "listwise-json" and result.rerank.warning
    best = sorted(plain.chunks, key=lambda h: -word_of(h.content, P_YES))
    assert names(result) == names(best)
    assert [asks_logprobs(r.body) for r in llm.fake.chat_requests] == [True, False]


async def test_early_stop_skips_ranks_that_cannot_enter_the_top(
    corpus: Corpus, pool: Any, embedder: Any, settings: Settings, llm: LLMFake, provider: LLMProvider
) -> None:
    def top_two_certain(body: dict[str, Any]) -> Reply:
        return Reply.label({"Yes": 0.0, "No": -40.0}) if asks_logprobs(body) else Reply.json({"score": 1.0})

    llm.fake.responder = top_two_certain
    on = tuned(settings, llm, rerank_early_stop=True)
    searcher = make_searcher(
        pool, embedder, on, LLMReranker(provider, on.retrieval, on.llm.effective_rerank_model, cache_size=0)
    )
    plain = await search(searcher, limit=2, rerank=False)
    result = await search(searcher, limit=2)
    assert len(llm.fake.chat_requests) == 2  # the first two scored 1.0: the other three cannot pass them
    assert result.rerank.status == "ok" and result.rerank.scored == 2 and result.rerank.skipped == 3
    assert names(result) == names(plain)

    def second_low(body: dict[str, Any]) -> Reply:  # not settled after two: it goes on
        low = "Sourdough" in passage_of(body) or "Baking" in passage_of(body)
        return Reply.label({"Yes": -3.0 if low else 0.0, "No": -0.05 if low else -40.0})

    mark = len(llm.fake.chat_requests)
    llm.fake.responder = second_low
    result = await search(searcher, limit=2)
    assert result.rerank.skipped < 3 and len(llm.fake.chat_requests[mark:]) > 2
    assert all(c.score == 1.0 for c in result.chunks)


def test_trim_keeps_the_sentences_near_the_query_terms() -> None:
    filler = " ".join(f"Filler sentence number {i} says nothing at all." for i in range(40))
    passage = f"{filler} Sourdough bread rises because yeast ferments the dough. {filler}"
    out = trim_passage(passage, "why does sourdough bread rise?", 300)
    assert len(out) <= 300 and "Sourdough bread rises because yeast ferments the dough." in out
    assert trim_passage("short text", "anything", 300) == "short text"
    assert trim_passage(filler, "volcano", 120) == filler[:120].rsplit(" ", 1)[0]  # no match: the start
