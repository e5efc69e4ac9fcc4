"""The budget of LLM work over real HTTP with the fake LLM (issue 43, item 8): a model that calls
`summarize_documents` four times a round over four documents, a user past their LLM calls, and eight
summaries asked at once. Every limit bounds what the fake receives, and the answer or the error says which."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from ragchat.chat.engine.summarize import MAP_PROMPT, REDUCE_PROMPT
from ragchat.core.errors import RateLimited
from ragchat.db.ratelimit import RateLimiter
from ragchat.settings import Settings
from tests.fakes.ollama_server import Reply
from tests.fakes.plugin import LLMFake
from tests.support.chat import chat, first
from tests.support.corpus import Corpus, ingest_files
from tests.support.ratelimit import a_fresh_window

NAMES = [f"contract{i}.txt" for i in range(4)]
ANSWER = "The contracts set delivery times and penalties [1]."


@pytest.fixture
async def corpus(pool: Any, embedder: Any, settings: Settings) -> Corpus:
    files: dict[str, bytes | str] = {
        name: f"Contract {i}. Delivery within {10 * (i + 1)} days. Penalty {i + 1}% per week of delay."
        for i, name in enumerate(NAMES)
    }
    return await ingest_files(pool, embedder, settings, files)


def probe(ids: list[str], map_delay: float = 0.0) -> Callable[[dict[str, Any]], Reply]:
    """The probe's model: every round with tools, four `summarize_documents` calls over all four documents."""

    def respond(body: dict[str, Any]) -> Reply:
        system = body["messages"][0]["content"]
        if system == MAP_PROMPT:
            return Reply.hang(map_delay, Reply.text("This part sets a delivery time and a penalty."))
        if system == REDUCE_PROMPT:
            return Reply.text("Merged [1].")
        if body.get("tools"):
            return Reply.tool_calls(
                [("summarize_documents", {"document_ids": ids, "focus": f"pass {n}"}) for n in range(4)]
            )
        return Reply.text(ANSWER)

    return respond


def kinds(llm: LLMFake) -> dict[str, int]:
    out = {"map": 0, "reduce": 0, "other": 0}
    for r in llm.fake.chat_requests:
        system = r.messages[0]["content"] if r.messages else ""
        out["map" if system == MAP_PROMPT else "reduce" if system == REDUCE_PROMPT else "other"] += 1
    return out


async def test_a_model_calling_summaries_four_times_a_round_is_bounded_and_the_answer_says_so(
    corpus: Corpus, start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(chat_max_tool_calls=6, summary_max_per_message=1)
    ids = [str(corpus[n]) for n in NAMES]
    llm.fake.responder = probe(ids)
    events = await chat(server.url, {"message": "What do the contracts say about delivery?"})
    # one summary ran (4 map calls, one per document); the other 7 calls were refused, and tools stopped
    calls = [d for n, d in events if n == "tool_call"]
    assert [c["name"] for c in calls] == ["summarize_documents"]
    assert kinds(llm) == {"map": 4, "reduce": 0, "other": 3}  # 2 rounds with tools + the answer without
    assert not llm.fake.chat_requests[-1].tool_names
    assert len(llm.fake.chat_requests) == 7  # was 3 rounds × 4 summaries × 4 parts + 4 = 52
    assert first(events, "done")["usage"]["llm_calls"] == 7
    refusals = [m["content"] for m in llm.fake.chat_requests[-1].tool_messages if m["content"].startswith("Error")]
    assert len(refusals) == 7
    assert sum("at most 1 whole-document summary (SUMMARY_MAX_PER_MESSAGE)" in m for m in refusals) == 5
    assert sum("at most 6 tool calls (CHAT_MAX_TOOL_CALLS)" in m for m in refusals) == 2
    # the user reads which limits were reached, after the answer (streamed, and saved with it)
    text = "".join(d["delta"] for n, d in events if n == "token")
    assert text.startswith(ANSWER)
    assert "> Limit reached: one message may make at most 1 whole-document summary (SUMMARY_MAX_PER_MESSAGE)" in text
    assert "> Limit reached: one message may make at most 6 tool calls (CHAT_MAX_TOOL_CALLS)" in text
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        thread = (await client.get(f"/api/threads/{first(events, 'thread')['thread_id']}")).json()
        assert thread["messages"][-1]["content"] == text

        # the OpenAI-compatible door: the same bound, the same note in the answer's text
        llm.fake.reset()
        llm.fake.responder = probe(ids)
        body = {"model": "ragchat", "messages": [{"role": "user", "content": "What do the contracts say?"}]}
        r = await client.post("/v1/chat/completions", json=body)
        assert r.status_code == 200, r.text
        assert (
            "Limit reached: one message may make at most 1 whole-document summary"
            in (r.json()["choices"][0]["message"]["content"])
        )
        assert len(llm.fake.chat_requests) == 7


async def test_the_rate_limit_counts_llm_calls_not_messages(
    corpus: Corpus, start: Callable[..., Any], llm: LLMFake
) -> None:
    await a_fresh_window()  # the per-minute counters are fixed windows
    server = start(rate_llm_calls_per_min=5, rate_chat_per_min=20)
    ids = [str(corpus[n]) for n in NAMES]
    llm.fake.responder = probe(ids)
    # one message: a round (1) and a summary's 4 map calls fit; the next round is the 6th call: refused
    events = await chat(server.url, {"message": "What do the contracts say about delivery?"})
    assert len(llm.fake.chat_requests) == 5
    error = events[-1]
    assert error[0] == "error" and error[1]["code"] == "rate_limited", error
    assert "too many LLM calls (RATE_LLM_CALLS_PER_MIN): the limit is 5 per minute" in error[1]["message"]
    assert [n for n, _ in events].count("tool_result") == 1  # what was done is kept
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        thread = (await client.get(f"/api/threads/{events[0][1]['thread_id']}")).json()
        assert thread["messages"][-1]["status"] == "error"
        assert thread["messages"][-1]["error"]["code"] == "rate_limited"
        # the budget is spent: every door answers 429 before anything runs, and says when to come back
        r = await client.post("/api/chat", json={"message": "And the penalties?"})
        assert r.status_code == 429 and "RATE_LLM_CALLS_PER_MIN" in r.json()["detail"], r.text
        assert 1 <= int(r.headers["retry-after"]) <= 60
        r = await client.post("/api/rag", json={"query": "penalties"})
        assert r.status_code == 429 and "RATE_LLM_CALLS_PER_MIN" in r.text, r.text
        r = await client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "penalties?"}]})
        assert r.status_code == 429 and "RATE_LLM_CALLS_PER_MIN" in r.json()["error"]["message"], r.text
    assert len(llm.fake.chat_requests) == 5


async def test_eight_concurrent_summaries_of_one_user_are_not_all_accepted(
    corpus: Corpus, pool: Any, start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(summary_max_running=2)
    llm.fake.responder = probe([], map_delay=3.0)  # each summary's map call takes 3 s: they overlap

    async def summarise(client: httpx.AsyncClient, name: str) -> tuple[int, str]:
        body = {"message": "Summarise.", "document_ids": [str(corpus[name])], "task": "summarize"}
        async with client.stream("POST", "/api/chat", json=body) as r:
            return r.status_code, (await r.aread()).decode()

    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        asking = [asyncio.create_task(summarise(client, NAMES[i % 4])) for i in range(8)]
        await llm.fake.await_until(lambda: kinds(llm)["map"] >= 2, timeout=20)
        # while two run, the JSON door is refused too
        rag = {"query": "Summarise", "task": "summarize", "filters": {"document_ids": [str(corpus[NAMES[0]])]}}
        r = await client.post("/api/rag", json=rag)
        assert r.status_code == 429 and "SUMMARY_MAX_RUNNING" in r.text, r.text
        results = await asyncio.gather(*asking)
        statuses = sorted(status for status, _ in results)
        assert statuses == [200, 200] + [429] * 6, statuses
        refused = json.loads(next(text for status, text in results if status == 429))
        assert refused["code"] == "rate_limited" and refused["extra"]["retry_after"] >= 1
        assert refused["detail"].startswith(
            "too many whole-document summaries (SUMMARY_MAX_RUNNING) at once: at most 2 run at the same time"
        )
        for status, text in results:
            if status == 200:
                assert "event: done" in text and "Limit reached" not in text
        assert kinds(llm)["map"] == 2  # the refused ones never reached the model
        # the slots were given back: the next summary runs
        llm.fake.responder = probe([])
        status, text = await summarise(client, NAMES[1])
        assert status == 200 and "event: done" in text
    async with pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT count(*) AS n FROM rate_limits WHERE key LIKE 'summaries-running:%%' AND window_start > now()"
            )
        ).fetchone()
    assert row["n"] == 0


async def test_summaries_per_hour_and_a_refused_summary_the_model_asked_for(
    corpus: Corpus, start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(rate_summaries_per_hour=1)
    ids = [str(corpus[n]) for n in NAMES]
    llm.fake.responder = probe(ids)
    body = {"message": "Summarise.", "document_ids": [ids[0]], "task": "summarize"}
    events = await chat(server.url, body)
    assert first(events, "done") and kinds(llm)["map"] == 1
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await client.post("/api/chat", json=body)
        assert r.status_code == 429, r.text
        assert "too many whole-document summaries (RATE_SUMMARIES_PER_HOUR): the limit is 1 per hour" in r.text
    # the model asks for one: refused, and the answer says why
    llm.fake.reset()
    llm.fake.responder = probe(ids)
    events = await chat(server.url, {"message": "What do the contracts say?"})
    assert kinds(llm)["map"] == 0 and "summarize_documents" not in [d["name"] for n, d in events if n == "tool_call"]
    last = max(i for i, (n, _) in enumerate(events) if n in ("thread", "retry"))  # a retry starts the text anew
    text = "".join(d["delta"] for n, d in events[last:] if n == "token")
    assert (
        text.startswith(ANSWER) and "Limit reached: too many whole-document summaries (RATE_SUMMARIES_PER_HOUR)" in text
    )


async def test_a_summary_answer_asked_again_reuses_its_parts(
    corpus: Corpus, start: Callable[..., Any], llm: LLMFake
) -> None:
    """A failed answer is asked once more (pipeline.py): from the parts already summarised, not a second summary
    (which SUMMARY_MAX_PER_MESSAGE would refuse, leaving the answer nothing to write from)."""
    server = start()
    answers = iter(["[1]", ANSWER])

    def respond(body: dict[str, Any]) -> Reply:
        if body["messages"][0]["content"] == MAP_PROMPT:
            return Reply.text("This part sets a delivery time and a penalty.")
        return Reply.text(next(answers))

    llm.fake.responder = respond
    ids = [str(corpus[n]) for n in NAMES[:2]]
    events = await chat(server.url, {"message": "Compare them.", "document_ids": ids, "task": "compare"})
    assert [n for n, _ in events].count("retry") == 1 and first(events, "done")
    assert kinds(llm) == {"map": 2, "reduce": 0, "other": 2}
    retry = max(i for i, (n, _) in enumerate(events) if n == "retry")
    text = "".join(d["delta"] for n, d in events[retry:] if n == "token")
    assert text == ANSWER
    again = llm.fake.chat_requests[-1].messages[-1]["content"]
    assert again.startswith("Compare them.") and "Comparing Contract 0" in again


async def test_a_summary_slot_is_shared_by_processes_and_expires_when_its_holder_dies(pool: Any) -> None:
    """The slots are rows in Postgres (every server process sees them); a holder that died without giving its
    slot back (its renewals stop) loses it once the lease's time to live has passed."""
    first_process, second_process = RateLimiter(pool), RateLimiter(pool)
    held = await first_process.lease("summaries-running:u", 1, ttl_s=1.5, what="summaries")
    assert held is not None
    with pytest.raises(RateLimited, match="at most 1 run at the same time"):
        await second_process.lease("summaries-running:u", 1, ttl_s=1.5, what="summaries")
    await asyncio.sleep(2.0)  # renewed every 0.5 s: still held
    with pytest.raises(RateLimited):
        await second_process.lease("summaries-running:u", 1, ttl_s=1.5)
    held._stop.set()  # the holder dies: no more renewals, no release
    await asyncio.sleep(2.0)
    taken = await second_process.lease("summaries-running:u", 1, ttl_s=1.5)
    assert taken is not None
    await taken.release()
    await taken.release()  # once is enough; again does nothing
    again = await first_process.lease("summaries-running:u", 1, ttl_s=1.5)
    assert again is not None
    await again.release()
