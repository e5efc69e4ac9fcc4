"""`RERANK_PROVIDER=http`: the cross-encoder reranker against a fake server per dialect over real HTTP."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from ragchat.providers.rerank.http import HTTPRerankClient, parse_results
from ragchat.retrieval.rerank import LLMReranker
from ragchat.retrieval.rerank_http import HTTPReranker, build_reranker
from ragchat.settings import Settings
from tests.fakes.rerank_server import FakeRerank
from tests.fakes.script import closed_port_url
from tests.unit.test_rerank import hits, make_settings

DIALECTS = ["tei", "cohere", "llamacpp"]
QUERY = "penalty clause late delivery"
DOCS = (
    "weather report for tuesday",  # 0 of 4 words
    "the penalty clause applies",  # 2 of 4
    "a penalty clause for late delivery",  # 4 of 4
    "late trains",  # 1 of 4
)


def api_of(dialect: str) -> str:
    return "tei" if dialect == "tei" else "cohere"


@pytest.fixture(params=DIALECTS)
def fake(request: pytest.FixtureRequest) -> Iterator[FakeRerank]:
    with FakeRerank(request.param) as server:
        yield server


def reranker_of(settings: Settings) -> Any:
    """The reranker these settings build (RERANK_PROVIDER), with no LLM."""
    llm = settings.llm
    return build_reranker(None, settings.retrieval, rerank_model=llm.rerank_model, chat_model=llm.chat_model)  # type: ignore[arg-type]


def http_settings(fake: FakeRerank, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "rerank_provider": "http",
        "rerank_url": fake.url,
        "rerank_api": api_of(fake.dialect),
        "rerank_model": "bge-reranker-v2-m3",
    }
    values.update(overrides)
    return make_settings(**values)


@pytest.fixture
async def reranker(fake: FakeRerank) -> AsyncIterator[HTTPReranker]:
    built = reranker_of(http_settings(fake))  # type: ignore[arg-type]
    assert isinstance(built, HTTPReranker)
    yield built
    await built.close()


async def test_reranks_by_the_server_scores_in_every_dialect(fake: FakeRerank, reranker: HTTPReranker) -> None:
    out = await reranker.rerank_with_status(QUERY, hits(*DOCS), 3)
    assert [h.content for h in out.hits] == [DOCS[2], DOCS[1], DOCS[3]]
    assert (out.scored, out.candidates) == (4, 4)
    scores = [h.trace.rerank_score for h in out.hits]
    assert all(s is not None and 0 <= s <= 1 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert out.hits[0].score == scores[0]
    (rec,) = fake.rerank_requests
    texts_key = "texts" if fake.dialect == "tei" else "documents"
    assert rec.body["query"] == QUERY and rec.body[texts_key] == list(DOCS)
    if fake.dialect != "tei":
        assert rec.body["top_n"] == 4 and rec.body["model"] == "bge-reranker-v2-m3"


async def test_scores_are_cached(fake: FakeRerank, reranker: HTTPReranker) -> None:
    await reranker.rerank_with_status(QUERY, hits(*DOCS), 4)
    again = await reranker.rerank_with_status(QUERY, hits(*DOCS), 4)
    assert again.scored == 4 and len(fake.rerank_requests) == 1


async def test_batches_and_concurrency(fake: FakeRerank) -> None:
    docs = [f"passage {i} about penalty" for i in range(10)]
    reranker = reranker_of(http_settings(fake, rerank_batch_size=3, rerank_concurrency=2))  # type: ignore[arg-type]
    try:
        out = await reranker.rerank_with_status(QUERY, hits(*docs), 10)
    finally:
        await reranker.close()
    assert out.scored == 10
    key = "texts" if fake.dialect == "tei" else "documents"
    assert sorted(len(r.body[key]) for r in fake.rerank_requests) == [1, 3, 3, 3]
    assert fake.max_concurrent <= 2


async def test_server_down_keeps_retrieval_order(fake: FakeRerank) -> None:
    reranker = reranker_of(http_settings(fake, rerank_url=closed_port_url()))  # type: ignore[arg-type]
    try:
        start = time.monotonic()
        out = await reranker.rerank_with_status(QUERY, hits(*DOCS), 4)
    finally:
        await reranker.close()
    assert time.monotonic() - start < 5
    assert out.scored == 0 and [h.content for h in out.hits] == list(DOCS)
    assert all(h.trace.rerank_score is None for h in out.hits)


async def test_http_error_is_unscored(fake: FakeRerank, reranker: HTTPReranker) -> None:
    fake.status = 503
    out = await reranker.rerank_with_status(QUERY, hits(*DOCS), 4)
    assert out.scored == 0 and [h.content for h in out.hits] == list(DOCS)


async def test_slow_server_times_out_in_bounded_time(fake: FakeRerank) -> None:
    fake.latency = 3.0
    reranker = reranker_of(http_settings(fake, rerank_timeout_s=0.3))  # type: ignore[arg-type]
    try:
        start = time.monotonic()
        out = await reranker.rerank_with_status(QUERY, hits(*DOCS), 4)
    finally:
        await reranker.close()
    assert time.monotonic() - start < 2
    assert out.scored == 0 and [h.content for h in out.hits] == list(DOCS)


async def test_deadline_cuts_pending_batches(fake: FakeRerank) -> None:
    fake.latency = 0.4
    settings = http_settings(fake, rerank_batch_size=1, rerank_concurrency=1, rerank_deadline_s=0.6)
    reranker = build_reranker(
        None, settings.retrieval, rerank_model=settings.llm.rerank_model, chat_model=settings.llm.chat_model
    )  # type: ignore[arg-type]
    try:
        start = time.monotonic()
        out = await reranker.rerank_with_status(QUERY, hits(*DOCS), 4)
    finally:
        await reranker.close()
    assert time.monotonic() - start < 2
    assert 0 < out.scored < 4  # partial: what was scored is kept, the rest follow in retrieval order
    assert out.hits[-1].trace.rerank_score is None


async def test_fewer_scores_than_documents_is_partial(fake: FakeRerank, reranker: HTTPReranker) -> None:
    fake.drop = 2
    out = await reranker.rerank_with_status(QUERY, hits(*DOCS), 4)
    assert out.scored == 2
    assert [h.content for h in out.hits] == [DOCS[2], DOCS[1], DOCS[0], DOCS[3]]
    assert [h.trace.rerank_score is None for h in out.hits] == [False, False, True, True]


@pytest.mark.parametrize("bad", ["high", {}, True, float("nan"), float("inf")])
async def test_non_numeric_scores_are_unscored(fake: FakeRerank, reranker: HTTPReranker, bad: Any) -> None:
    fake.override = bad  # NaN and Infinity go out as the bare JSON literals Python's json writes
    out = await reranker.rerank_with_status(QUERY, hits(*DOCS), 4)
    assert out.scored == 0 and [h.content for h in out.hits] == list(DOCS)


async def test_out_of_range_scores_are_read_as_logits(fake: FakeRerank, reranker: HTTPReranker) -> None:
    fake.scorer = lambda q, t: 40.0 if "late delivery" in t else -3.0
    out = await reranker.rerank_with_status(QUERY, hits(*DOCS), 4)
    assert out.scored == 4 and out.hits[0].content == DOCS[2]
    assert all(0 <= (h.trace.rerank_score or 0) <= 1 for h in out.hits)


def test_parse_results_hostile_replies() -> None:
    assert parse_results("tei", [{"index": 1, "score": 0.5}, {"index": 9, "score": 0.9}], 2) == [None, 0.5]
    # a repeated index: neither answer is trusted
    assert parse_results("cohere", {"results": [{"index": 0, "relevance_score": 0.1}] * 2}, 1) == [None]
    assert parse_results("cohere", {"results": [{"index": True, "relevance_score": 0.1}, "x"]}, 1) == [None]
    raw = {"results": [{"index": 0, "relevance_score": -2}, {"index": 1, "relevance_score": 2}]}
    logits = parse_results("cohere", raw, 2)
    assert logits[0] is not None and logits[1] is not None and logits[0] < 0.5 < logits[1]
    with pytest.raises(Exception, match="no result list"):
        parse_results("cohere", [{"index": 0}], 1)


async def test_wrong_shape_reply_is_unscored(fake: FakeRerank) -> None:
    # a TEI client against a cohere-shaped server (or the reverse) gets a 404 or a wrong shape: unscored, no crash
    wrong = "cohere" if fake.dialect == "tei" else "tei"
    settings = http_settings(fake, rerank_api=wrong)
    reranker = build_reranker(
        None, settings.retrieval, rerank_model=settings.llm.rerank_model, chat_model=settings.llm.chat_model
    )  # type: ignore[arg-type]
    try:
        out = await reranker.rerank_with_status(QUERY, hits(*DOCS), 4)
    finally:
        await reranker.close()
    assert out.scored == 0


async def test_bearer_key_and_v1_base_url(fake: FakeRerank) -> None:
    if fake.dialect == "tei":
        pytest.skip("the /v1 base URL form is the cohere dialect's")
    client = HTTPRerankClient(fake.url + "/v1", "cohere", api_key="sekrit")
    try:
        assert await client.score_batch("penalty", ["penalty", "x"], 5) is not None
    finally:
        await client.close()
    assert fake.rerank_requests[-1].headers["authorization"] == "Bearer sekrit"


def test_provider_llm_is_the_default() -> None:
    settings = make_settings()
    assert settings.retrieval.rerank_provider == "llm"
    assert isinstance(
        build_reranker(
            None, settings.retrieval, rerank_model=settings.llm.rerank_model, chat_model=settings.llm.chat_model
        ),
        LLMReranker,
    )  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="RERANK_URL"):
        build_reranker(None, make_settings(rerank_provider="http").retrieval, rerank_model=None, chat_model="m")  # type: ignore[arg-type]
