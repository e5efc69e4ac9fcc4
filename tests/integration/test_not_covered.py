""" "Not in your documents" (issue 35 item 3) and titles from the first exchange (item 7). Real server, real
search and embeddings, the fake LLM over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from uuid import UUID

import httpx

from ragchat.chat.engine.coverage import REFUSAL, not_covered
from ragchat.chat.engine.titles import clean_title
from tests.fakes.ollama_server import Reply
from tests.fakes.plugin import LLMFake
from tests.support.chat import chat, first, get_thread, names

OFF_TOPIC = Reply.tool_call("search_documents", {"query": "quarterly semiconductor export tariffs in Brazil"})
ON_TOPIC = Reply.tool_call("search_documents", {"query": "volcano lava"})
QUESTION = "What were the semiconductor export tariffs in Brazil last quarter?"


async def test_nothing_matches_the_model_is_told_and_the_turn_says_so(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.enqueue(OFF_TOPIC, "Your documents don't cover export tariffs.")
    events = await chat(server.url, {"message": QUESTION})
    assert names(events) == ["thread", "tool_call", "tool_result", "token", "done"]
    result = first(events, "tool_result")
    assert result["confidence"]["insufficient"] is True
    assert not_covered([result])
    told = llm.fake.chat_requests[-1].tool_messages[-1]["content"]
    assert "insufficient_confidence: true" in told and "documents don't say" in told


async def test_a_search_that_matches_nothing_sends_only_its_best_passages(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    """CHAT_WEAK_SEARCH_PASSAGES=2: a search whose confidence is insufficient gives the model, the page and the
    saved thread its two best passages (0: all of them); a search that matches keeps its passages."""
    llm.fake.enqueue(OFF_TOPIC, "Your documents don't cover export tariffs.")
    whole = first(await chat(start(chat_weak_search_passages=0).url, {"message": QUESTION}), "tool_result")
    assert whole["confidence"]["insufficient"] is True and len(whole["chunks"]) > 2
    server = start(chat_weak_search_passages=2)
    llm.fake.enqueue(OFF_TOPIC, "Your documents don't cover export tariffs.")
    events = await chat(server.url, {"message": QUESTION})
    result = first(events, "tool_result")
    best = sorted(whole["chunks"], key=lambda c: c["score"], reverse=True)[:2]
    assert {c["id"] for c in result["chunks"]} == {c["id"] for c in best}
    told = llm.fake.chat_requests[-1].tool_messages[-1]["content"]
    assert "[1] " in told and "[2] " in told and "[3] " not in told
    saved = await get_thread(server.url, first(events, "thread")["thread_id"])
    assert saved["messages"][1]["tool_results"] == [result]
    llm.fake.enqueue(ON_TOPIC, "Lava flows from the crater [1].")
    covered = first(await chat(server.url, {"message": "What comes out of a volcano?"}), "tool_result")
    assert covered["confidence"]["insufficient"] is False and len(covered["chunks"]) > 2


async def test_documents_only_refuses_without_asking_the_model_again(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.enqueue(OFF_TOPIC, "Brazil's tariffs were 12 percent.")  # the second reply must never be asked for
    events = await chat(server.url, {"message": QUESTION, "documents_only": True})
    assert names(events) == ["thread", "tool_call", "tool_result", "token", "done"]
    assert "".join(e["delta"] for n, e in events if n == "token") == REFUSAL
    assert first(events, "done")["finish_reason"] == "not_covered"
    assert len(llm.fake.chat_requests) == 1 and llm.fake.pending_replies == 1
    saved = await get_thread(server.url, first(events, "thread")["thread_id"])
    assert saved["messages"][1]["content"] == REFUSAL and saved["messages"][1]["status"] == "complete"


async def test_documents_only_from_the_preference_and_the_thread_override(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    async with httpx.AsyncClient(base_url=server.url) as client:
        r = await client.put("/api/preferences", json={"documents_only": True})
        assert r.status_code == 200 and r.json()["values"]["documents_only"] is True
        for hostile in ("yes please", 2, [True], {"a": 1}):
            bad = await client.put("/api/preferences", json={"documents_only": hostile})
            assert bad.status_code == 400, hostile
        bad = await client.post("/api/chat", json={"message": "hi", "documents_only": "\x00"})
        assert bad.status_code == 400
    llm.fake.enqueue(OFF_TOPIC)
    events = await chat(server.url, {"message": QUESTION})
    assert first(events, "done")["finish_reason"] == "not_covered"
    # the thread says false (the client sends the thread's setting): the model answers
    llm.fake.enqueue(OFF_TOPIC, "I could not find that in your documents.")
    events = await chat(server.url, {"message": QUESTION, "documents_only": False})
    assert first(events, "done")["finish_reason"] != "not_covered"
    # a question the documents cover is answered as usual, documents_only or not
    llm.fake.enqueue(ON_TOPIC, "Lava flows from the crater [1].")
    events = await chat(server.url, {"message": "What comes out of a volcano?"})
    assert first(events, "tool_result")["confidence"]["insufficient"] is False
    assert "".join(e["delta"] for n, e in events if n == "token") == "Lava flows from the crater [1]."


async def _title(url: str, thread_id: str, other_than: str) -> str:
    for _ in range(100):
        title = (await get_thread(url, thread_id))["title"]
        if title != other_than:
            return title
        await asyncio.sleep(0.05)
    return other_than


async def test_a_new_thread_is_titled_from_its_first_exchange(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(chat_title_generation=True)
    question = "What comes out of a volcano when it erupts, and is it dangerous for the people living nearby?"
    llm.fake.enqueue(ON_TOPIC, "Lava flows from the crater [1].", Reply.json({"title": '"Volcanic eruptions."'}))
    events = await chat(server.url, {"message": question})
    thread_id = first(events, "thread")["thread_id"]
    fallback = "What comes out of a volcano when it erupts, and is it…"
    assert await _title(server.url, thread_id, fallback) == "Volcanic eruptions"
    schema = llm.json_schema(llm.fake.chat_requests[-1])
    assert schema is not None and "title" in schema["properties"]
    # a second turn asks for no title
    llm.fake.enqueue(ON_TOPIC, "Gas and ash [1].")
    await chat(server.url, {"message": "And gas?", "thread_id": thread_id})
    assert llm.fake.pending_replies == 0 and len(llm.fake.chat_requests) == 5

    # a hostile or broken title keeps the trimmed question
    for raw in (Reply.json({"title": "\u202e\x00  "}), Reply.text("not json"), Reply.json({"title": ["x"]})):
        llm.fake.enqueue(ON_TOPIC, "Lava [1].", raw)
        events = await chat(server.url, {"message": "Lava?"})
        await asyncio.sleep(0.3)
        assert (await get_thread(server.url, first(events, "thread")["thread_id"]))["title"] == "Lava?"


def test_clean_title() -> None:
    assert clean_title('{"title": "  **Holiday   allowance**. "}') == "Holiday allowance"
    assert clean_title('{"title": "Lava [1] flows"}') == "Lava flows"
    assert clean_title('{"title": "a\\u202eb\\nc"}') == "a b c"
    assert clean_title('{"title": "x" }') is None
    assert clean_title("[]") is None
    long = clean_title('{"title": "' + "word " * 40 + '"}')
    assert long is not None and len(long) <= 60 and long.endswith("…")
