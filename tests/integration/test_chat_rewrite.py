"""Retrieve-then-answer (CHAT_USE_TOOLS=false) follow-ups over real HTTP with the fake LLM: the question is
rewritten into a standalone query from the thread with one short structured call, that query is searched,
shown in the `tool_call` and stored with the message; a timeout, an error or a garbage reply searches the raw
question and says why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

from ragchat.chat.engine.rewrite import REWRITE_PROMPT
from tests.fakes.ollama_server import Reply
from tests.fakes.plugin import LLMFake
from tests.support.chat import chat, first, get_thread

FOLLOW_UP = "and when is it open?"


async def first_turn(server: Any, llm: LLMFake) -> str:
    llm.fake.enqueue(Reply.text("The handbook covers holidays and the office [1]."))
    events = await chat(server.url, {"message": "What does the staff handbook cover?"})
    call = first(events, "tool_call")
    assert call["arguments"] == {"query": "What does the staff handbook cover?"}  # no thread yet: no rewrite
    assert llm.fake.chat_requests[0].body.get("stream") is not False and len(llm.fake.chat_requests) == 1
    return first(events, "thread")["thread_id"]


async def test_follow_up_searches_the_rewritten_query(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(chat_use_tools=False)
    thread_id = await first_turn(server, llm)
    llm.fake.reset()
    llm.fake.enqueue(
        Reply.json({"query": "staff handbook office opening hours"}),
        Reply.text("The office is open from 8 am to 6 pm [1]."),
    )
    events = await chat(server.url, {"message": FOLLOW_UP, "thread_id": thread_id})
    call = first(events, "tool_call")
    assert call["arguments"] == {
        "query": "staff handbook office opening hours",
        "question": FOLLOW_UP,
        "rewrite": "rewritten",
    }
    result = first(events, "tool_result")
    assert result["chunks"][0]["filename"] == "handbook.pdf" and "8 am" in result["chunks"][0]["content"]
    # the rewrite call: one short structured request holding the thread and the follow-up, no tools
    rewrite, answer = llm.fake.chat_requests
    assert rewrite.messages[0]["content"] == REWRITE_PROMPT and not rewrite.tool_names
    assert llm.json_schema(rewrite) is not None
    assert "What does the staff handbook cover?" in rewrite.messages[1]["content"]
    assert f"user (latest message): {FOLLOW_UP}" in rewrite.messages[1]["content"]
    assert "8 am" in answer.messages[-1]["content"]  # the passages the rewritten query found
    assert first(events, "done")["usage"]["llm_calls"] == 2
    # stored with the message: a reload shows the same query
    saved = (await get_thread(server.url, thread_id))["messages"][-1]
    assert saved["tool_calls"][0]["arguments"]["query"] == "staff handbook office opening hours"
    assert saved["tool_calls"][0]["arguments"]["question"] == FOLLOW_UP


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        (Reply.hang(5, Reply.json({"query": "too late"})), "fallback: no answer within 1 s"),
        (Reply.error(500), "fallback: the model failed"),
        (Reply.json("I think you mean the office, which opens at 8."), "fallback: the reply was not a query"),
        (Reply.json({"query": "x" * 2000}), "fallback: the reply was not a query"),
        (Reply.json({"query": FOLLOW_UP.upper()}), "unchanged"),
    ],
    ids=["timeout", "error", "prose", "essay", "unchanged"],
)
async def test_rewrite_failures_search_the_raw_question(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake, reply: Reply, outcome: str
) -> None:
    server = start(chat_use_tools=False, chat_rewrite_timeout_s=1.0)
    thread_id = await first_turn(server, llm)
    llm.fake.reset()
    llm.fake.enqueue(reply, Reply.text("The documents say 8 am to 6 pm [1]."))
    events = await chat(server.url, {"message": FOLLOW_UP, "thread_id": thread_id})
    if reply.delay:  # the rewrite's timeout bounds the wait, not the hanging server: the answer was asked for
        # before the hung reply was due (the fake's own clock; the whole chat's wall time is the machine's)
        rewrite, answer = llm.fake.chat_requests[:2]
        assert answer.started_at < rewrite.started_at + reply.delay, (rewrite, answer)
    call = first(events, "tool_call")
    assert call["arguments"] == {"query": FOLLOW_UP, "question": FOLLOW_UP, "rewrite": outcome}
    assert first(events, "done")["finish_reason"] == "stop"


async def test_rewrite_off_searches_the_raw_follow_up(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(chat_use_tools=False, chat_rewrite_followups=False)
    thread_id = await first_turn(server, llm)
    llm.fake.reset()
    llm.fake.enqueue(Reply.text("8 am to 6 pm [1]."))
    events = await chat(server.url, {"message": FOLLOW_UP, "thread_id": thread_id})
    assert first(events, "tool_call")["arguments"] == {"query": FOLLOW_UP}
    assert len(llm.fake.chat_requests) == 1
