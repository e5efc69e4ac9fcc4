"""What real small models do (seen with Qwen2.5-Coder-1.5B on llama.cpp, tests/real/FINDINGS.md), scripted
against both fake protocols so `make test` keeps guarding the chat loop's answers to each behaviour."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

from tests.fakes.ollama_server import Reply
from tests.fakes.plugin import LLMFake
from tests.support.chat import chat, first, get_thread, names, text_of

HOLIDAYS = {"query": "paid holiday days per year"}


async def test_prose_and_leftovers_before_a_tool_call(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    """Prose streams; the `<tools>{…` leftovers after it are held back and dropped once the call arrives."""
    server = start()
    llm.fake.enqueue(
        Reply.tool_call("search_documents", HOLIDAYS, content_before='Let me check. <tools>\n{"type": "function"'),
        Reply.text("Employees get 25 days of paid holiday [1]."),
    )
    events = await chat(server.url, {"message": "How many holiday days do I get?"})
    assert [n for i, n in enumerate(names(events)) if n != "token" or names(events)[i - 1] != "token"] == [
        "thread",
        "token",
        "tool_call",
        "tool_result",
        "token",
        "done",
    ]
    assert text_of(events) == "Let me check. \n\nEmployees get 25 days of paid holiday [1]."
    assert "<tools>" not in text_of(events)


@pytest.mark.parametrize(
    "written",
    [
        '{"name": "search_documents", "arguments": {"query": "paid holiday days per year"}}',
        '```json\n{"name": "search_documents", "arguments": {"query": "paid holiday days per year"}}\n```',
        '<tool_call>\n{"name": "search_documents", "arguments": {"query": "paid holiday days per year"}}\n</tool_call>',
        'I will search.\n{"function": {"name": "search_documents", "arguments": "{\\"query\\": \\"paid holiday\\"}"}}',
    ],
    ids=["bare", "fenced", "tagged", "prose-then-openai-shape"],
)
async def test_a_tool_call_written_as_text_is_run(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake, written: str
) -> None:
    server = start()
    llm.fake.enqueue(Reply.text(written), Reply.text("25 days [1]."))
    events = await chat(server.url, {"message": "How many holiday days do I get?"})
    assert names(events)[-4:] == ["tool_call", "tool_result", "token", "done"]
    assert "search_documents" not in text_of(events) and "{" not in text_of(events)
    assert first(events, "tool_result")["chunks"][0]["filename"] == "handbook.pdf"
    assert text_of(events).endswith("25 days [1].")


async def test_the_same_search_repeated_is_answered_from_the_first_results(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.enqueue(
        Reply.tool_call("search_documents", HOLIDAYS),
        Reply.tool_call("search_documents", {"query": "Paid holiday  days per year"}),
        Reply.text("25 days [1]."),
    )
    events = await chat(server.url, {"message": "How many holiday days do I get?"})
    assert names(events) == ["thread", "tool_call", "tool_result", "token", "done"]  # searched once
    requests = llm.fake.chat_requests
    assert len(requests) == 3
    assert "You already searched" in requests[2].messages[-1]["content"]
    assert not requests[2].tool_names  # no more tools: the model must answer now


async def test_another_search_after_a_result_is_allowed(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.enqueue(
        Reply.tool_call("search_documents", HOLIDAYS),
        Reply.tool_call("search_documents", {"query": "office opening hours"}),
        Reply.text("25 days [1]; open 8 to 6 [7]."),
    )
    events = await chat(server.url, {"message": "Holidays and office hours?"})
    assert names(events).count("tool_result") == 2
    second = [e for n, e in events if n == "tool_result"][1]
    assert any("8 am" in c["content"] for c in second["chunks"])


async def test_invented_document_ids_are_ignored(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.enqueue(
        Reply.tool_call("search_documents", {**HOLIDAYS, "document_ids": ["document1", "file1.pdf"]}),
        Reply.text("25 days [1]."),
    )
    events = await chat(server.url, {"message": "How many holiday days do I get?"})
    assert names(events) == ["thread", "tool_call", "tool_result", "token", "done"]
    assert first(events, "tool_result")["chunks"][0]["filename"] == "handbook.pdf"


async def test_citations_beyond_the_passages_are_reported(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    """A number past the passages stays, and is reported, on a sentence no passage supports (one that a passage
    supports is re-cited to it: tests/unit/test_verify_recite.py)."""
    server = start(chat_search_limit=2)
    answer = "Employees get 25 days of paid holiday per calendar year [1][2]. Parking is free for visitors [9]."
    llm.fake.enqueue(Reply.tool_call("search_documents", HOLIDAYS), Reply.text(answer))
    events = await chat(server.url, {"message": "How many holiday days do I get?"})
    done = first(events, "done")
    assert done["citations"] == {"cited": [1, 9], "invalid": [9]}
    assert [c["verdict"] for c in first(events, "citations")["citations"]][-1] == "missing"


async def test_the_first_call_must_search_where_the_protocol_can_say_so(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.enqueue(Reply.tool_call("search_documents", HOLIDAYS), Reply.text("25 days [1]."))
    await chat(server.url, {"message": "How many holiday days do I get?"})
    first_req, second_req = llm.fake.chat_requests
    if llm.provider == "openai":
        assert first_req.body["tool_choice"] == "required" and "tool_choice" not in second_req.body
    else:
        assert "tool_choice" not in first_req.body  # Ollama has no such option
    off = start(chat_search_first=False)
    llm.fake.reset()
    llm.fake.enqueue(Reply.text("Hello!"))
    await chat(off.url, {"message": "hi"})
    assert "tool_choice" not in llm.fake.chat_requests[0].body


async def test_an_empty_answer_is_a_clear_error(start: Callable[..., Any], llm: LLMFake) -> None:
    server = start(chat_search_first=False)
    llm.fake.enqueue(Reply.text(""))
    events = await chat(server.url, {"message": "hi"})
    assert names(events) == ["thread", "error"]
    assert first(events, "error")["code"] == "llm_bad_response" and "empty answer" in first(events, "error")["message"]


async def test_history_and_passages_are_fitted_to_the_context(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    """A small window: the oldest history goes first, then passages are cut at passage boundaries."""
    server = start(chat_context_tokens=1200, chat_answer_reserve_tokens=100, chat_search_limit=6)
    thread_id = None
    for i in range(4):  # earlier turns with long answers fill the history
        llm.fake.enqueue(Reply.tool_call("search_documents", HOLIDAYS), Reply.text(f"Answer {i}: " + "word " * 300))
        body: dict[str, Any] = {"message": f"Question {i} about holidays?"}
        if thread_id:
            body["thread_id"] = thread_id
        events = await chat(server.url, body)
        thread_id = first(events, "thread")["thread_id"]
    last = llm.fake.chat_requests[-1]
    sent = sum(len(str(m.get("content") or "")) for m in last.messages)
    assert sent / 3.0 < 1200  # what was sent fits the estimate of the window
    assert last.messages[0]["role"] == "system"
    assert not any("Answer 0:" in str(m.get("content")) for m in last.messages)  # oldest history dropped
    assert any(m["role"] == "tool" for m in last.messages)  # this turn's passages stay (cut if need be)
    saved = await get_thread(server.url, str(thread_id))
    assert len(saved["messages"]) == 8  # nothing stored was dropped: only what the model was sent


async def test_a_context_overflow_is_retried_smaller_then_reported(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    overflow = "request (4834 tokens) exceeds the available context size (4096 tokens), try increasing it"
    server = start(chat_context_tokens=4096, chat_search_first=False)
    llm.fake.enqueue(Reply.error(400, overflow), Reply.text("Short answer."))
    events = await chat(server.url, {"message": "hi"})
    assert names(events) == ["thread", "token", "done"] and first(events, "done")["usage"]["llm_calls"] == 2

    llm.fake.enqueue(Reply.error(400, overflow), Reply.error(400, overflow))
    events = await chat(server.url, {"message": "hi again"})
    assert names(events) == ["thread", "error"]
    assert first(events, "error")["code"] == "context_overflow"


async def test_retrieve_then_answer_when_tools_are_off(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    """CHAT_USE_TOOLS=false: search with the question first, then one model call with the passages, no tools."""
    server = start(chat_use_tools=False)
    llm.fake.enqueue(Reply.text("25 days [1]."))
    events = await chat(server.url, {"message": "How many holiday days do I get?"})
    assert names(events) == ["thread", "tool_call", "tool_result", "token", "done"]
    [request] = llm.fake.chat_requests
    assert not request.tool_names and "Passages from my documents" in request.messages[-1]["content"]


def test_fitting_keeps_the_citation_instructions() -> None:
    from ragchat.chat.engine.budget import fit, request_tokens

    passages = "\n\n".join(f"[{n}] doc.txt\n" + "text " * 200 for n in range(1, 7))
    tool = {"role": "tool", "content": f"Results for x: passages [1] to [6].\n\n{passages}\n\n---\nCite like [1]."}
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "q"}, tool]
    fitted = fit(messages, None, 900)
    content = fitted[2]["content"]
    assert request_tokens(fitted, None) <= 900
    assert "[1] doc.txt" in content and "[6] doc.txt" not in content and content.endswith("Cite like [1].")
