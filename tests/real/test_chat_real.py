"""ragchat driving a real model (Qwen2.5-Coder-1.5B on llama.cpp) through the OpenAI-compatible provider, over
real HTTP and SSE: upload → ask → a real `search_documents` call → an answer with the fact and [n] citations;
the reranker on real candidates; retrieve-then-answer; a follow-up; Stop mid-answer.

Only what must hold for a real model is asserted: the right document, the fact, the protocol's order, and
that everything is saved — never exact wording.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse

from ragchat.settings import LLMSettings
from tests.real.model import RealLLM
from tests.support.chat import chat, first, get_thread, names, text_of

DOCS = {
    "x200-manual.txt": (
        "X200 Dishwasher User Manual. Warranty: the X200 dishwasher is covered by a warranty of 3 years "
        "from the date of purchase. Clean the filter every month. Use only dishwasher detergent."
    ),
    "travel-policy.txt": (
        "Travel Policy. Employees travelling to Berlin receive a per diem of EUR 150 per day. "
        "Flights must be booked in economy class."
    ),
    "sourdough.txt": (
        "Sourdough bread rises because wild yeast and lactic acid bacteria ferment the flour. "
        "Bake at 240 degrees Celsius for 40 minutes."
    ),
}
QUESTION = "What is the warranty period of the X200 dishwasher?"
CITE = re.compile(r"\[(\d+)\]")


@pytest.fixture
def start(live_app: Callable[..., Any], real_llm: RealLLM) -> Callable[..., Any]:
    """The app on the real model: short passages, a fixed temperature, the server's 4096-token window."""

    def _start(**overrides: Any) -> Any:
        values = {
            "llm_provider": "openai",
            "openai_base_url": real_llm.base_url,
            "chat_model": real_llm.model,
            "llm_timeout_s": 300.0,
            "chat_temperature": 0.0,
            "chat_search_limit": 3,
            "ingest_workers": 1,
            "rerank_concurrency": 1,
            "rerank_timeout_s": 120.0,
            "rerank_deadline_s": 600.0,
        }
        return live_app(**{**values, **overrides})

    return _start


async def upload_all(base_url: str) -> dict[str, str]:
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        files = [("files", (name, text.encode(), "text/plain")) for name, text in DOCS.items()]
        assert (await client.post("/api/documents", files=files)).status_code == 201
        for _ in range(600):
            docs = (await client.get("/api/documents")).json()["documents"]
            if len(docs) == len(DOCS) and all(d["status"] == "ready" for d in docs):
                return {d["filename"]: d["id"] for d in docs}
            await asyncio.sleep(0.1)
    raise AssertionError("documents did not become ready")


def passages(events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every passage the model was given, numbered from 1 across searches (as the tool messages number them)."""
    return [c for name, data in events if name == "tool_result" for c in data["chunks"]]


def assert_protocol_order(events: list[tuple[str, dict[str, Any]]]) -> None:
    seq = names(events)
    assert seq[0] == "thread" and seq[-1] == "done", seq
    for i, name in enumerate(seq):
        if name == "tool_result":
            assert seq[i - 1] == "tool_call", seq


async def test_real_model_searches_and_answers_with_the_fact_and_citations(start: Callable[..., Any]) -> None:
    server = start()
    ids = await upload_all(server.url)
    events = await chat(server.url, {"message": QUESTION}, read_timeout=600)
    assert_protocol_order(events)
    call = first(events, "tool_call")
    assert call["name"] == "search_documents" and isinstance(call["arguments"].get("query"), str)
    given = passages(events)
    assert given and given[0]["filename"] == "x200-manual.txt", [p["filename"] for p in given]
    answer = text_of(events)
    assert re.search(r"\b(3|three)\b", answer, re.I), answer
    cited = [int(n) for n in CITE.findall(answer)]
    assert cited, f"no [n] citation in: {answer}"
    assert all(1 <= n <= len(given) for n in cited), (cited, len(given))
    assert any(given[n - 1]["filename"] == "x200-manual.txt" for n in cited), cited
    done = first(events, "done")
    assert done["citations"]["invalid"] == []

    saved = await get_thread(server.url, first(events, "thread")["thread_id"])
    user, assistant = saved["messages"]
    assert user["content"] == QUESTION and assistant["status"] == "complete"
    assert (
        assistant["content"] == answer
        and assistant["tool_results"][0]["chunks"][0]["document_id"] == (ids["x200-manual.txt"])
    )

    # a follow-up in the same thread: history goes along, the loop still works
    follow = await chat(
        server.url,
        {"message": "And what is the per diem for Berlin?", "thread_id": first(events, "thread")["thread_id"]},
        read_timeout=600,
    )
    assert_protocol_order(follow)
    assert "150" in text_of(follow), text_of(follow)
    assert any(p["filename"] == "travel-policy.txt" for p in passages(follow))
    saved = await get_thread(server.url, first(events, "thread")["thread_id"])
    assert [m["role"] for m in saved["messages"]] == ["user", "assistant", "user", "assistant"]
    assert saved["messages"][3]["status"] == "complete"


async def test_retrieve_then_answer_with_a_real_model(start: Callable[..., Any]) -> None:
    server = start(chat_use_tools=False)
    await upload_all(server.url)
    events = await chat(server.url, {"message": QUESTION}, read_timeout=600)
    assert names(events)[:3] == ["thread", "tool_call", "tool_result"] and names(events)[-1] == "done"
    assert first(events, "tool_call")["arguments"] == {"query": QUESTION}
    assert passages(events)[0]["filename"] == "x200-manual.txt"
    assert re.search(r"\b(3|three)\b", text_of(events), re.I), text_of(events)


async def test_reranker_scores_real_candidates_through_the_json_schema(start: Callable[..., Any]) -> None:
    server = start()
    await upload_all(server.url)
    async with httpx.AsyncClient(base_url=server.url, timeout=600) as client:
        body = (await client.get("/api/search", params={"q": QUESTION, "limit": 2, "rerank": "true"})).json()
    assert body["reranked"] is True and body["timing_ms"]["rerank_ms"] > 0
    scores = [c["trace"]["rerank_score"] for c in body["chunks"]]
    assert all(isinstance(s, float) and 0 <= s <= 1 for s in scores), scores
    assert body["chunks"][0]["filename"] == "x200-manual.txt", body["chunks"]
    assert scores[0] > 0 and scores == sorted(scores, reverse=True)


async def test_stop_mid_answer_keeps_the_partial_answer(start: Callable[..., Any]) -> None:
    server = start(chat_search_first=False, chat_use_tools=False)
    await upload_all(server.url)
    question = "Describe how to care for the X200 dishwasher, in detail, in ten numbered steps."
    thread_id = None
    tokens = 0
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=600) as client,
        aconnect_sse(client, "POST", "/api/chat", json={"message": question}) as source,
    ):
        async for event in source.aiter_sse():
            if not event.data:
                continue
            data = json.loads(event.data)
            if event.event == "thread":
                thread_id = data["thread_id"]
            if event.event == "token":
                tokens += 1
                if tokens == 3:  # Stop (leaving the page no longer stops an answer: Stop does)
                    assert thread_id is not None
                    stopped = await client.post(f"/api/threads/{thread_id}/stop")
                    assert stopped.status_code == 200 and stopped.json()["stopped"], stopped.text
                    break
    assert thread_id is not None
    for _ in range(100):
        saved = await get_thread(server.url, thread_id)
        if len(saved["messages"]) == 2:
            break
        await asyncio.sleep(0.1)
    assistant = saved["messages"][1]
    assert assistant["status"] == "incomplete" and assistant["content"].strip()


async def test_the_first_question_at_the_default_limits_shows_an_estimate_and_is_answered(
    live_app: Callable[..., Any], real_llm: RealLLM
) -> None:
    """Issue 46: a fresh install (no speed measured yet) at the default limits (LLM_TIMEOUT_S, LLM_WARMUP, the
    retrieve-first path of a plain lookup): the warm-up measures the model when the server starts, and the first
    question then shows an estimate before its first token and is answered, not cut off."""
    defaults = LLMSettings()
    server = live_app(
        llm_provider="openai",
        openai_base_url=real_llm.base_url,
        chat_model=real_llm.model,
        ingest_workers=1,
        llm_warmup=defaults.llm_warmup,
        llm_timeout_s=defaults.llm_timeout_s,
        chat_retrieve_first=defaults.chat_retrieve_first,
        chat_passage_min_ratio=defaults.chat_passage_min_ratio,
        chat_weak_search_passages=defaults.chat_weak_search_passages,
    )
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        for _ in range(600):  # the warm-up runs in the background of the start
            if (await client.get("/api/search/rerank-cost")).json()["measured_calls"]:
                break
            await asyncio.sleep(1)
        else:
            raise AssertionError("the warm-up did not measure the model within 600 s")
    await upload_all(server.url)
    events = await chat(server.url, {"message": QUESTION}, read_timeout=600)
    seq = names(events)
    assert "error" not in seq and seq[-1] == "done", seq
    raw = [name for name, _ in events]  # names() leaves `estimate` out (a busy machine adds it anywhere)
    assert "estimate" in raw and "token" in raw and raw.index("estimate") < raw.index("token"), raw
    estimate = first(events, "estimate")
    assert estimate["first_token_s"] is not None and estimate["samples"] >= 1, estimate
    assert re.search(r"\b(3|three)\b", text_of(events), re.I), text_of(events)
