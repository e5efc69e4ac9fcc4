"""The LLM reranker against the fake Ollama, through the Ollama provider (the real `ollama` client) over HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from ragchat.core.search import ChunkHit, Trace
from ragchat.providers.llm.ollama import OllamaProvider
from ragchat.providers.llm.replies import clean_reply
from ragchat.retrieval.rerank import RERANK_SCHEMA, LLMReranker, RerankScore, blend, cap_text, parse_score
from ragchat.settings import Settings
from tests.fakes.ollama_server import FakeOllama, Reply

DOC = uuid.UUID("11111111-1111-1111-1111-111111111111")
_PASSAGE = re.compile(r'Passage:\n"""\n(.*)\n"""', re.S)
_SCORE = re.compile(r"\[score=(-?[\d.]+)\]")


def make_settings(**overrides: Any) -> Settings:
    # limits far above a fake's answer time, even on a busy machine (a 5 s limit left all three unscored beside
    # stress-ng); the tests of the limits set their own
    values: dict[str, Any] = {"rerank_concurrency": 4, "rerank_timeout_s": 60.0, "rerank_deadline_s": 120.0}
    values["rerank_retrieval_weight"] = 0.0  # these tests read the scorer's order; the blend has its own
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def rr(llm: Any, settings: Settings, **kwargs: Any) -> LLMReranker:
    """The LLM reranker of these settings (its group, and RERANK_MODEL or CHAT_MODEL)."""
    return LLMReranker(llm, settings.retrieval, settings.llm.effective_rerank_model, **kwargs)


def hit(i: int, content: str) -> ChunkHit:
    """A retrieval hit at 1-based rank `i` with hybrid-style trace values."""
    fused = 2 / (60 + i)
    return ChunkHit(
        id=i,
        document_id=DOC,
        filename=f"doc{i}.txt",
        title=f"Doc {i}",
        chunk_index=0,
        content=content,
        content_hash=hashlib.sha256(content.encode()).hexdigest(),
        score=fused,
        trace=Trace(
            vector_rank=i, vector_score=0.9 - i / 100, keyword_rank=i, keyword_score=3.0 - i / 10, fused_score=fused
        ),
    )


def hits(*contents: str) -> list[ChunkHit]:
    return [hit(i, c) for i, c in enumerate(contents, 1)]


def passage_of(body: dict[str, Any]) -> str:
    match = _PASSAGE.search(body["messages"][-1]["content"])
    assert match, body
    return match.group(1)


def scorer(special: dict[str, Reply] | None = None) -> Callable[[dict[str, Any]], Reply]:
    """Responder: a passage containing a `special` marker gets that reply; else `[score=x]` in it → {"score": x}."""

    def respond(body: dict[str, Any]) -> Reply:
        passage = passage_of(body)
        for marker, reply in (special or {}).items():
            if marker in passage:
                return reply
        match = _SCORE.search(passage)
        return Reply.json({"score": float(match.group(1)) if match else 0.0})

    return respond


@pytest.fixture
async def client(fake_ollama: FakeOllama) -> AsyncIterator[OllamaProvider]:
    provider = OllamaProvider(fake_ollama.url)
    yield provider
    await provider.close()


def ids(result: list[ChunkHit]) -> list[int]:
    return [h.id for h in result]


# ---- reply parsing ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw",
    [
        '{"score": 0.8}',
        '  {"score":0.8}\n',
        '```json\n{"score": 0.8}\n```',
        '```\n{"score": 0.8}\n```',
        'Sure! Here is my rating:\n```json\n{"score": 0.8}\n```\nLet me know if you need more.',
        'The relevance is {"score": 0.8}',
        '<think>\nThe query asks about {topic}. Relevant.\n</think>\n{"score": 0.8}',
        '<THINK>a</THINK><think>b</think>```json\n{"score": 0.8}```',
        'The passage is about X {so}... relevant.\n</think>\n\n{"score": 0.8}',
        '<thinking>hmm</thinking>{"score": 0.8, "reason": "on topic"}',
    ],
)
def test_clean_and_parse_accept(raw: str) -> None:
    assert parse_score(raw) == pytest.approx(0.8)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "garbage",
        "0.8",
        '{"score": 1.7}',
        '{"score": -0.2}',
        '{"score": "0.8"}',
        '{"score": true}',
        '{"score": NaN}',
        '{"relevance": 0.8}',
        '{"score": 0.8',
        '<think>I would say {"score": 0.9} but let me think more',
        "[0.8]",
    ],
)
def test_clean_and_parse_reject(raw: str) -> None:
    assert parse_score(raw) is None


def test_helpers() -> None:
    assert clean_reply('x ```json\n{"a": 1}\n``` y') == '{"a": 1}'
    assert RERANK_SCHEMA == RerankScore.model_json_schema()
    assert RERANK_SCHEMA["properties"]["score"]["minimum"] == 0
    assert RERANK_SCHEMA["properties"]["score"]["maximum"] == 1
    text = "word " * 300
    capped = cap_text(text, 1000)
    assert len(capped) <= 1000 and text.startswith(capped) and not capped.endswith(" ") and capped.endswith("word")
    assert cap_text("x" * 1500, 1000) == "x" * 1000
    assert cap_text("  short  ", 1000) == "short"


# ---- rerank ----------------------------------------------------------------------------------------
async def test_empty_input(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    reranker = rr(client, make_settings())
    assert await reranker.rerank("anything", [], 5) == []
    assert await reranker.rerank("anything", hits("a [score=0.5]"), 0) == []
    assert fake_ollama.chat_requests == []


async def test_sorts_by_score_descending_and_keeps_the_trace(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    fake_ollama.responder = scorer()
    candidates = hits("a [score=0.2]", "b [score=0.9]", "c [score=0.5]", "d [score=0.9]", "e [score=0.1]")
    originals = [c.model_copy(deep=True) for c in candidates]
    result = await rr(client, make_settings()).rerank("which letter?", candidates, 10)
    assert ids(result) == [2, 4, 3, 1, 5]  # ties (b, d) keep the retrieval order
    assert [h.score for h in result] == [0.9, 0.9, 0.5, 0.2, 0.1]
    for h in result:
        assert h.trace.rerank_score == h.score
        original = originals[h.id - 1]
        assert h.trace.model_dump(exclude={"rerank_score"}) == original.trace.model_dump(exclude={"rerank_score"})
        assert h.content == original.content
    assert candidates == originals  # the input is not modified
    assert len(fake_ollama.chat_requests) == 5


def test_blend_weighs_the_retrieval_position_against_the_score() -> None:
    assert blend(0.7, 0, 4, 0.0) == 0.7  # weight 0: the score alone
    assert blend(0.7, 3, 4, 1.0) == 0.25  # weight 1: the position alone (1, 0.75, 0.5, 0.25 over a limit of 4)
    assert blend(0.7, 0, 4, 0.3) == pytest.approx(0.79)
    assert blend(0.95, 3, 4, 0.3) == pytest.approx(0.74)
    assert blend(0.95, 4, 4, 0.3) == blend(0.95, 9, 4, 0.3) == pytest.approx(0.665)  # below the limit: no prior
    assert blend(0.5, 0, 0, 0.5) == 0.75  # a limit of 0 is read as 1, never a division by zero
    assert all(blend(1.0, i, 5, 0.4) >= blend(1.0, i + 1, 5, 0.4) for i in range(8))  # never rises: early stop


async def test_the_retrieval_order_breaks_near_ties(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    fake_ollama.responder = scorer()
    candidates = hits("a [score=0.7]", "b [score=0.75]", "c [score=0.2]", "d [score=0.95]")
    result = await rr(client, make_settings(rerank_retrieval_weight=0.3)).rerank("which letter?", candidates, 4)
    # blends 0.79, 0.75, 0.29, 0.74: a's lead in retrieval outweighs b's 0.05, not d's 0.25 (it falls to third)
    assert ids(result) == [1, 2, 4, 3]
    assert [h.score for h in result] == pytest.approx([0.79, 0.75, 0.74, 0.29])
    assert [h.trace.rerank_score for h in result] == [0.7, 0.75, 0.95, 0.2]  # the scorer's own figure is kept
    alone = await rr(client, make_settings(rerank_retrieval_weight=0.0)).rerank("which letter?", candidates, 4)
    assert ids(alone) == [4, 2, 1, 3]


async def test_limit_is_respected(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    fake_ollama.responder = scorer()
    candidates = hits("a [score=0.2]", "b [score=0.9]", "c [score=0.5]", "d [score=0.7]")
    result = await rr(client, make_settings()).rerank("q", candidates, 2)
    assert ids(result) == [2, 4]
    assert len(fake_ollama.chat_requests) == 4  # every candidate is scored before slicing


@pytest.mark.parametrize(
    "raw",
    [
        '```json\n{"score": 0.75}\n```',
        '<think>\nIs it relevant? The passage mentions {cats}.\n</think>\n\n{"score": 0.75}',
        'Reasoning without the opening tag.</think>```json\n{"score": 0.75}\n```',
        'Here you go: {"score": 0.75}',
    ],
)
async def test_fences_think_blocks_and_prose_are_stripped(
    fake_ollama: FakeOllama, client: OllamaProvider, raw: str
) -> None:
    fake_ollama.responder = scorer({"[raw]": Reply.json(raw)})
    result = await rr(client, make_settings()).rerank("q", hits("a [score=0.5]", "b [raw]"), 5)
    assert ids(result) == [2, 1]
    assert result[0].score == pytest.approx(0.75)


async def test_failed_call_keeps_the_chunk_unscored(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    fake_ollama.responder = scorer({"[boom]": Reply.error(500, "model runner crashed")})
    candidates = hits("a [boom]", "b [score=0.3]", "c [score=0.6]", "d [boom]")
    outcome = await rr(client, make_settings()).rerank_with_status("q", candidates, 10)
    result = outcome.hits
    assert ids(result) == [3, 2, 1, 4] and (outcome.scored, outcome.candidates) == (2, 4)
    assert [h.score for h in result[2:]] == [candidates[0].score, candidates[3].score]  # the retrieval score
    assert [h.trace.rerank_score for h in result[2:]] == [None, None]


@pytest.mark.parametrize(
    "reply",
    [
        Reply.json({"score": 1.7}),
        Reply.json({"score": -0.2}),
        Reply.json("I think this passage is quite relevant!"),
        Reply.json({"score": "high"}),
        Reply.json("<think>I would give it a 0.9 {maybe}"),
        Reply.garbage_mid_stream(),
    ],
)
async def test_invalid_replies_leave_it_unscored(fake_ollama: FakeOllama, client: OllamaProvider, reply: Reply) -> None:
    fake_ollama.responder = scorer({"[bad]": reply})
    result = await rr(client, make_settings()).rerank("q", hits("a [bad]", "b [score=0.05]"), 10)
    assert ids(result) == [2, 1]
    assert result[1].score == hit(1, "").score and result[1].trace.rerank_score is None


async def test_timeout_leaves_it_unscored_not_delaying_others(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    fake_ollama.latency = 0.05
    fake_ollama.responder = scorer({"[slow]": Reply.hang(5, then=Reply.json({"score": 1.0}))})
    settings = make_settings(rerank_timeout_s=0.3, rerank_concurrency=2)
    candidates = hits("a [slow]", "b [score=0.2]", "c [score=0.4]", "d [score=0.8]", "e [score=0.6]")
    start = time.perf_counter()
    result = await LLMReranker(client, settings.retrieval, settings.llm.effective_rerank_model).rerank(
        "q", candidates, 10
    )
    wall = time.perf_counter() - start
    # the hung call holds one slot for 0.3 s while the other slot scores the 4 others (4 × 0.05 s)
    assert wall < 0.8, wall
    assert ids(result) == [4, 5, 3, 2, 1]
    assert result[-1].score == hit(1, "").score and result[-1].trace.rerank_score is None
    slow = await fake_ollama.await_disconnect(2.0)  # the timed-out request was abandoned
    assert slow is not None and "[slow]" in passage_of(slow.body)


async def test_concurrency_bound_is_never_exceeded(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    fake_ollama.latency = 0.05
    fake_ollama.responder = scorer()
    settings = make_settings(rerank_concurrency=3)
    candidates = hits(*[f"passage {i} [score=0.{i % 10}]" for i in range(12)])
    start = time.perf_counter()
    result = await LLMReranker(client, settings.retrieval, settings.llm.effective_rerank_model).rerank(
        "q", candidates, 12
    )
    wall = time.perf_counter() - start
    assert len(result) == 12 and len(fake_ollama.chat_requests) == 12
    assert fake_ollama.max_concurrent == 3  # bounded, and actually parallel
    assert wall >= 4 * 0.05
    assert [h.score for h in result] == sorted((h.score for h in result), reverse=True)


async def test_concurrency_bound_holds_across_concurrent_reranks(
    fake_ollama: FakeOllama, client: OllamaProvider
) -> None:
    fake_ollama.latency = 0.05
    fake_ollama.responder = scorer()
    reranker = rr(client, make_settings(rerank_concurrency=2))
    candidates = hits(*[f"passage {i} [score=0.{i}]" for i in range(6)])
    await asyncio.gather(reranker.rerank("q1", candidates, 6), reranker.rerank("q2", candidates, 6))
    assert len(fake_ollama.chat_requests) == 12
    assert fake_ollama.max_concurrent == 2


async def test_overall_deadline_keeps_unscored_in_retrieval_order(
    fake_ollama: FakeOllama, client: OllamaProvider
) -> None:
    fake_ollama.responder = scorer({"[slow]": Reply.hang(5, then=Reply.json({"score": 1.0}))})
    settings = make_settings(rerank_deadline_s=0.4, rerank_timeout_s=10, rerank_concurrency=10)
    candidates = hits("s1 [slow]", "a [score=0.3]", "s2 [slow]", "b [score=0.8]", "s3 [slow]", "c [score=0.5]")
    start = time.perf_counter()
    result = await LLMReranker(client, settings.retrieval, settings.llm.effective_rerank_model).rerank(
        "q", candidates, 10
    )
    wall = time.perf_counter() - start
    assert 0.4 <= wall < 1.0, wall
    assert ids(result) == [4, 6, 2, 1, 3, 5]
    assert [h.trace.rerank_score for h in result[:3]] == [0.8, 0.5, 0.3]
    for h in result[3:]:  # unscored: retrieval score and trace untouched
        original = candidates[h.id - 1]
        assert h.trace.rerank_score is None and h.score == original.score and h.trace == original.trace
    # the pending calls were cancelled: the fake sees three abandoned requests
    assert await fake_ollama.await_until(lambda: sum(r.disconnected for r in fake_ollama.chat_requests) == 3, 2.0)


async def test_deadline_also_cancels_calls_waiting_for_a_slot(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    fake_ollama.latency = 0.15
    fake_ollama.responder = scorer()
    settings = make_settings(rerank_deadline_s=0.4, rerank_concurrency=1)
    candidates = hits(*[f"p{i} [score=0.{i}]" for i in range(1, 7)])
    result = await LLMReranker(client, settings.retrieval, settings.llm.effective_rerank_model).rerank(
        "q", candidates, 10
    )
    scored = [h for h in result if h.trace.rerank_score is not None]
    unscored = [h for h in result if h.trace.rerank_score is None]
    assert 1 <= len(scored) <= 3 and len(scored) + len(unscored) == 6
    assert result == scored + unscored
    assert ids(unscored) == sorted(ids(unscored))  # retrieval order
    await asyncio.sleep(0.3)
    assert len(fake_ollama.chat_requests) <= len(scored) + 1  # nothing was started after the deadline


async def test_cancelling_the_caller_cancels_the_calls(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    fake_ollama.responder = scorer({"[slow]": Reply.hang(5, then=Reply.json({"score": 1.0}))})
    reranker = rr(client, make_settings())
    task = asyncio.create_task(reranker.rerank("q", hits("a [slow]", "b [slow]"), 5))
    assert await fake_ollama.await_until(lambda: fake_ollama.in_flight == 2, 2.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake_ollama.await_until(lambda: fake_ollama.in_flight == 0, 2.0)
    assert all(r.disconnected for r in fake_ollama.chat_requests)


async def test_cache_skips_repeated_questions_but_not_failures(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    failures = {"left": 1}

    def respond(body: dict[str, Any]) -> Reply:
        if "[flaky]" in passage_of(body) and failures["left"]:
            failures["left"] -= 1
            return Reply.error(500, "flaky")
        return scorer()(body)

    fake_ollama.responder = respond
    reranker = rr(client, make_settings())
    candidates = hits("a [score=0.2]", "b [score=0.9]", "c [flaky] [score=0.6]")
    first = await reranker.rerank("question", candidates, 10)
    assert ids(first) == [2, 1, 3] and first[-1].trace.rerank_score is None
    assert len(fake_ollama.chat_requests) == 3

    second = await reranker.rerank("question", candidates, 10)  # only the failed one is asked again
    assert len(fake_ollama.chat_requests) == 4
    assert ids(second) == [2, 3, 1]

    third = await reranker.rerank("question", candidates, 10)  # fully cached now
    assert len(fake_ollama.chat_requests) == 4
    assert third == second

    await reranker.rerank("another question", candidates, 10)  # the query is part of the key
    assert len(fake_ollama.chat_requests) == 7

    other_model = rr(client, make_settings(rerank_model="qwen3:4b"))
    other_model._cache = reranker._cache  # shared cache, different model: still a miss
    await other_model.rerank("question", candidates, 10)
    assert len(fake_ollama.chat_requests) == 10


async def test_cache_is_a_bounded_lru(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    fake_ollama.responder = scorer()
    reranker = rr(client, make_settings(rerank_concurrency=1), cache_size=2)
    candidates = hits("a [score=0.1]", "b [score=0.2]", "c [score=0.3]")
    await reranker.rerank("q", candidates, 10)
    assert len(reranker._cache) == 2  # "a" (least recently used) was evicted
    await reranker.rerank("q", candidates, 10)
    assert len(fake_ollama.chat_requests) == 4


async def test_identical_passages_are_scored_once(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    fake_ollama.responder = scorer()
    candidates = hits("same text [score=0.4]", "other [score=0.7]", "same text [score=0.4]")
    result = await rr(client, make_settings()).rerank("q", candidates, 10)
    assert len(fake_ollama.chat_requests) == 2
    assert ids(result) == [2, 1, 3] and result[1].score == result[2].score == 0.4


async def test_request_carries_schema_temperature_think_and_capped_passage(
    fake_ollama: FakeOllama, client: OllamaProvider
) -> None:
    fake_ollama.responder = scorer()
    long_text = "lorem ipsum dolor " * 100 + "TAILMARKER [score=0.9]"
    settings = make_settings(rerank_model="reranker:1b")
    result = await LLMReranker(client, settings.retrieval, settings.llm.effective_rerank_model).rerank(
        "what is lorem ipsum?", hits(long_text), 1
    )
    (request,) = fake_ollama.chat_requests
    body = request.body
    assert body["model"] == "reranker:1b"
    assert body["format"] == RerankScore.model_json_schema()
    assert body["options"]["temperature"] == 0
    assert body["think"] is False
    assert body["stream"] is False
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    user = body["messages"][-1]["content"]
    assert "what is lorem ipsum?" in user and "0.0 to 1.0" in user
    passage = passage_of(body)
    assert 900 <= len(passage) <= settings.retrieval.rerank_passage_chars
    assert long_text.startswith(passage)
    assert "TAILMARKER" not in user
    assert result[0].score == 0.0  # the score marker was cut off with the tail


async def test_model_defaults_to_the_chat_model(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    fake_ollama.responder = scorer()
    await rr(client, make_settings(chat_model="mistral")).rerank("q", hits("a"), 1)
    assert fake_ollama.chat_requests[0].model == "mistral"


async def test_think_is_dropped_when_the_server_rejects_it(fake_ollama: FakeOllama, client: OllamaProvider) -> None:
    fake_ollama.enqueue(Reply.error(400, '"llama3.2" does not support thinking'))
    fake_ollama.responder = scorer()
    reranker = rr(client, make_settings(rerank_concurrency=1))
    result = await reranker.rerank("q", hits("a [score=0.6]"), 1)
    assert result[0].score == 0.6
    first, retry = fake_ollama.chat_requests
    assert first.body["think"] is False and "think" not in retry.body
    await reranker.rerank("another q", hits("a [score=0.6]"), 1)
    assert "think" not in fake_ollama.chat_requests[-1].body
    assert len(fake_ollama.chat_requests) == 3


async def test_unreachable_server_scores_nothing(closed_ollama_url: str) -> None:
    down = OllamaProvider(closed_ollama_url)
    outcome = await rr(down, make_settings()).rerank_with_status("q", hits("a", "b"), 5)
    await down.close()
    assert ids(outcome.hits) == [1, 2] and (outcome.scored, outcome.candidates) == (0, 2)
    assert [h.trace.rerank_score for h in outcome.hits] == [None, None]
