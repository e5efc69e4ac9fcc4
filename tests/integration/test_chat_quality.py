"""Answers that fail though the model finished (issue 35): retried once with a correction, then an error with
Regenerate; the `reading` note before the first token. Fake LLM over real HTTP, real server, real search."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from ragchat.chat.engine.quality import failure_of, previous_exchange
from tests.fakes.ollama_server import Reply
from tests.fakes.plugin import LLMFake
from tests.support.chat import chat, first, get_thread, names

SEARCH = Reply.tool_call("search_documents", {"query": "volcano lava"})


async def test_an_answer_of_only_markers_is_retried_and_the_page_is_told(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.enqueue(SEARCH, "[1], [2], [3]", "Lava flows from the crater [1].")
    events = await chat(server.url, {"message": "What comes out of a volcano?"})
    assert names(events) == ["thread", "tool_call", "tool_result", "token", "retry", "token", "done"]
    assert first(events, "retry")["reason"] == "only_citations"
    assert first(events, "reading")["passages"] >= 1
    correction = llm.fake.chat_requests[-1].messages[-1]["content"]
    assert "only citation markers" in correction  # the model was told what was wrong
    saved = await get_thread(server.url, first(events, "thread")["thread_id"])
    answer = saved["messages"][1]
    assert answer["status"] == "complete" and answer["content"] == "Lava flows from the crater [1]."


async def test_an_answer_that_fails_twice_is_an_error_with_regenerate(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.enqueue(SEARCH, "[1]", "[1] [2]")
    events = await chat(server.url, {"message": "What comes out of a volcano?"})
    assert names(events)[-1] == "error"
    error = first(events, "error")
    assert error["code"] == "answer_failed" and "Regenerate" in error["message"]
    saved = await get_thread(server.url, first(events, "thread")["thread_id"])
    assert saved["messages"][1]["status"] == "error"


async def test_a_follow_up_that_repeats_the_previous_answer_is_retried(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    first_answer = "Lava flows from the crater and eruptions release gas and ash into the air [1]."
    llm.fake.enqueue(SEARCH, first_answer)
    events = await chat(server.url, {"message": "What comes out of a volcano?"})
    thread_id = first(events, "thread")["thread_id"]
    llm.fake.enqueue(
        Reply.tool_call("search_documents", {"query": "sourdough yeast"}), first_answer, "Wild yeast ferments it [2]."
    )
    events = await chat(server.url, {"message": "And why does sourdough rise?", "thread_id": thread_id})
    assert first(events, "retry")["reason"] == "repeated"
    assert names(events)[-1] == "done"


def test_the_checks_leave_ordinary_answers_alone() -> None:
    passages = ["Lava flows from the crater. Eruptions release gas and ash."]
    assert failure_of("Lava flows from the crater [1].", "What comes out?", None, passages) is None
    assert failure_of("The documents do not say.", "Who won?", None, passages) is None
    assert failure_of("Hello! How can I help you with your documents today, my friend?", "hi", None, []) is None
    same = "Lava flows from the crater and eruptions release gas and ash into the air [1]."
    asked_again = previous_exchange(
        [{"role": "user", "content": "What comes out?"}, {"role": "assistant", "content": same}]
    )
    assert failure_of(same, "What comes out?", asked_again, passages) is None  # the same question: same answer
    assert failure_of(same, "Why does bread rise?", asked_again, passages) is not None
    off = (
        "Quarterly revenue grew strongly thanks to marketing campaigns, pricing changes, new partnerships, "
        "hiring and better logistics."
    )
    assert failure_of(off, "What comes out of a volcano?", None, passages).reason == "off_topic"  # type: ignore[union-attr]
