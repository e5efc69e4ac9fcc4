"""POST /api/chat over real HTTP: uvicorn in-process, real Postgres and embedder, the fake Ollama as the LLM."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from ragchat.chat.engine.prompts import FALLBACK_SYSTEM_PROMPT, SYSTEM_PROMPT
from tests.fakes.ollama_server import Reply
from tests.fakes.plugin import LLMFake
from tests.support.chat import (
    all_of,
    chat,
    first,
    get_thread,
    names,
    text_of,
)

CHUNK_KEYS = {
    *("id", "document_id", "filename", "title", "page", "section", "chunk_index", "content"),
    *("score", "score_kind", "trace", "location", "url", "snippet", "citation"),
}
SSE_DOC = Path(__file__).resolve().parents[2] / "docs" / "SSE.md"
RESULT_KEYS = {"id", "name", "chunks", "search_mode", "reranked", "timings", "confidence", "rerank"}


async def test_tool_round_event_sequence_and_reload(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.enqueue(
        Reply.tool_call("search_documents", {"query": "paid holiday days per year"}),
        Reply.text("Employees get 25 days of paid holiday per year [1]."),
    )
    events = await chat(server.url, {"message": "How many holiday days do I get?"})

    assert names(events) == ["thread", "tool_call", "tool_result", "token", "done"]
    thread = first(events, "thread")
    assert set(thread) == {"thread_id", "question_id", "message_id"}
    call = first(events, "tool_call")
    assert call == {"id": "call_1", "name": "search_documents", "arguments": {"query": "paid holiday days per year"}}
    result = first(events, "tool_result")
    assert set(result) == RESULT_KEYS
    assert result["id"] == "call_1" and result["name"] == "search_documents"
    assert result["search_mode"] == "hybrid" and result["reranked"] is False
    assert result["timings"]["total_ms"] > 0 and result["confidence"]["label"] in ("high", "moderate", "low")
    top = result["chunks"][0]
    assert set(top) == CHUNK_KEYS
    assert top["filename"] == "handbook.pdf" and top["page"] == 1 and "25 days" in top["content"]
    assert top["document_id"] == str(corpus["handbook.pdf"])
    assert isinstance(top["score"], float) and 0 < top["score"] <= 1
    assert top["trace"]["vector_rank"] is not None and top["trace"]["keyword_rank"] is not None
    assert text_of(events) == "Employees get 25 days of paid holiday per year [1]."
    done = first(events, "done")
    assert done["message_id"] == thread["message_id"] and done["finish_reason"] == "stop"
    assert done["usage"]["llm_calls"] == 2 and done["usage"]["tool_rounds"] == 1
    assert done["usage"]["completion_tokens"] > 0

    # what the model saw: the tool offered, then numbered passages with document and page
    first_req, second_req = llm.fake.chat_requests
    assert first_req.body["stream"] is True
    assert first_req.tool_names[0] == "search_documents" and "find_documents" in first_req.tool_names
    assert first_req.messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert first_req.messages[-1] == {"role": "user", "content": "How many holiday days do I get?"}
    tool_msg = second_req.messages[-1]
    assert tool_msg["role"] == "tool"
    assert "[1] handbook.pdf, page 1\n" in tool_msg["content"] and "25 days" in tool_msg["content"]
    [earlier_call] = second_req.assistant_tool_calls
    assert earlier_call["name"] == "search_documents"
    assert earlier_call["arguments"] == {"query": "paid holiday days per year"}
    if llm.provider == "openai":  # the tool result answers the call by the id the server gave it
        assert tool_msg["tool_call_id"] == earlier_call["id"] == first_req.tool_call_ids[0]
    else:
        assert tool_msg["tool_name"] == "search_documents"

    # reload: same text, tool calls and exact tool results
    saved = await get_thread(server.url, thread["thread_id"])
    assert saved["title"] == "How many holiday days do I get?"
    user, assistant = saved["messages"]
    assert user["role"] == "user" and user["content"] == "How many holiday days do I get?"
    assert user["id"] == thread["question_id"] and assistant["parent_id"] == user["id"]
    assert assistant["id"] == thread["message_id"] and assistant["status"] == "complete"
    assert assistant["content"] == text_of(events) and assistant["error"] is None
    assert assistant["tool_calls"] == [call]
    assert assistant["tool_results"] == [result]


@pytest.mark.parametrize(
    ("setting", "override", "expected"),
    [
        ("vector", None, "vector"),
        ("keyword", None, "keyword"),
        ("hybrid", None, "hybrid"),
        ("vector", "keyword", "keyword"),
    ],
)
async def test_tool_result_reports_the_search_mode_that_ran(
    corpus: dict[str, UUID],
    start: Callable[..., Any],
    llm: LLMFake,
    setting: str,
    override: str | None,
    expected: str,
) -> None:
    server = start(search_mode=setting)
    llm.fake.enqueue(Reply.tool_call("search_documents", {"query": "sourdough bread yeast"}), "Yeast [1].")
    body: dict[str, Any] = {"message": "Why does sourdough rise?"}
    if override:
        body["search_mode"] = override
    events = await chat(server.url, body)
    result = first(events, "tool_result")
    assert result["search_mode"] == expected and result["reranked"] is False
    top = result["chunks"][0]
    assert top["filename"] == "bread.txt"
    assert (top["trace"]["vector_rank"] is not None) == (expected != "keyword")
    assert (top["trace"]["keyword_rank"] is not None) == (expected != "vector")
    assert (top["trace"]["fused_score"] is not None) == (expected == "hybrid")
    saved = await get_thread(server.url, first(events, "thread")["thread_id"])
    assert saved["messages"][1]["tool_results"][0]["search_mode"] == expected


async def test_passages_are_numbered_across_rounds(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(chat_search_limit=2)
    llm.fake.enqueue(
        Reply.tool_call("search_documents", {"query": "volcano lava"}),
        Reply.tool_call("search_documents", {"query": "sourdough bread"}),
        "Lava [1]; bread [3].",
    )
    events = await chat(server.url, {"message": "Tell me about lava and bread"})
    assert names(events) == ["thread", "tool_call", "tool_result", "tool_call", "tool_result", "token", "done"]
    assert [c["id"] for c in all_of(events, "tool_call")] == ["call_1", "call_2"]
    first_result, second_result = all_of(events, "tool_result")
    assert len(first_result["chunks"]) == 2
    second_msg = llm.fake.chat_requests[2].messages[-1]["content"]
    assert second_msg.startswith('Results for "sourdough bread" (hybrid search): passages [3] to [4].')
    assert "\n\n[3] Sourdough bread rises because" in second_msg and "(bread.txt)\nSourdough" in second_msg
    first_msg = llm.fake.chat_requests[1].messages[-1]["content"]
    assert "passages [1] to [2]" in first_msg and "(volcano.txt)\nVolcanic" in first_msg and "\n\n[2] " in first_msg
    saved = await get_thread(server.url, first(events, "thread")["thread_id"])
    assert saved["messages"][1]["tool_results"] == [first_result, second_result]


async def test_model_without_tools_falls_back_to_retrieve_then_answer(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.enqueue(Reply.no_tools(), Reply.text("The office opens at 8 am [1]."))
    question = "When does the office open?"
    events = await chat(server.url, {"message": question})

    assert names(events) == ["thread", "tool_call", "tool_result", "token", "done"]
    assert first(events, "tool_call") == {"id": "call_1", "name": "search_documents", "arguments": {"query": question}}
    result = first(events, "tool_result")
    assert result["search_mode"] == "hybrid" and result["reranked"] is False
    assert result["chunks"][0]["filename"] == "handbook.pdf" and result["chunks"][0]["page"] == 2
    rejected, answered = llm.fake.chat_requests
    assert rejected.body["tools"] and rejected.status == 400
    assert not answered.body.get("tools")
    assert answered.messages[0]["content"] == FALLBACK_SYSTEM_PROMPT
    prompt = answered.messages[-1]["content"]
    assert "[1] handbook.pdf, page 2\n" in prompt and "8 am" in prompt and f"Question: {question}" in prompt
    saved = await get_thread(server.url, first(events, "thread")["thread_id"])
    assert saved["messages"][1]["tool_results"] == [result]
    assert saved["messages"][0]["content"] == question  # the stored question is not the augmented prompt


async def test_passages_far_below_the_best_are_neither_sent_nor_shown(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    """CHAT_PASSAGE_MIN_RATIO=1: only the best passage reaches the model, the page and the saved thread (0: all)."""
    question = "When does the office open?"
    llm.fake.enqueue(Reply.no_tools(), Reply.text("The office opens at 8 am [1]."))
    whole = first(await chat(start(chat_passage_min_ratio=0.0).url, {"message": question}), "tool_result")
    assert len(whole["chunks"]) > 1
    server = start(chat_passage_min_ratio=1.0)
    llm.fake.enqueue(Reply.no_tools(), Reply.text("The office opens at 8 am [1]."))
    events = await chat(server.url, {"message": question})
    result = first(events, "tool_result")
    assert [c["id"] for c in result["chunks"]] == [whole["chunks"][0]["id"]]
    prompt = llm.fake.chat_requests[-1].messages[-1]["content"]
    assert "[1] handbook.pdf, page 2\n" in prompt and "[2] " not in prompt
    saved = await get_thread(server.url, first(events, "thread")["thread_id"])
    assert saved["messages"][1]["tool_results"] == [result]


async def test_history_is_sent_on_the_next_turn_and_bounded(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(chat_history_messages=3, chat_history_chars=10_000)
    llm.fake.enqueue(
        Reply.tool_call("search_documents", {"query": "holidays"}),
        "You get 25 days [1].",
        "Yes, per calendar year.",
        "You are welcome.",
    )
    first_turn = await chat(server.url, {"message": "How many holiday days?"})
    thread_id = first(first_turn, "thread")["thread_id"]
    second_turn = await chat(server.url, {"message": "Per year?", "thread_id": thread_id})
    assert first(second_turn, "thread")["thread_id"] == thread_id
    history = llm.fake.chat_requests[2].messages
    assert [(m["role"], m["content"]) for m in history[1:]] == [
        ("user", "How many holiday days?"),
        ("assistant", "You get 25 days [1]."),  # the answer, not its passages
        ("user", "Per year?"),
    ]
    assert not any(m["role"] == "tool" for m in history)

    await chat(server.url, {"message": "Thanks!", "thread_id": thread_id})
    third = llm.fake.chat_requests[3].messages
    assert [m["content"] for m in third[1:]] == [
        "You get 25 days [1].",
        "Per year?",
        "Yes, per calendar year.",
        "Thanks!",
    ]  # only the 3 most recent earlier messages
    saved = await get_thread(server.url, thread_id)
    assert [m["role"] for m in saved["messages"]] == ["user", "assistant"] * 3


async def test_history_respects_the_character_budget(start: Callable[..., Any], llm: LLMFake) -> None:
    server = start(chat_history_chars=30)
    llm.fake.enqueue("A" * 25, "B" * 10, "ok")
    thread_id = first(await chat(server.url, {"message": "first question"}), "thread")["thread_id"]
    await chat(server.url, {"message": "second", "thread_id": thread_id})
    await chat(server.url, {"message": "third", "thread_id": thread_id})
    sent = [m["content"] for m in llm.fake.chat_requests[2].messages[1:]]
    assert sent == ["second", "B" * 10, "third"]  # 6 + 10 chars fit; adding 25 more would not


async def test_unknown_tool_and_malformed_arguments_go_back_to_the_model(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    # malformed JSON arguments can only come over the OpenAI protocol (Ollama sends parsed objects)
    third = '{"query": "holi' if llm.provider == "openai" else {"query": "   "}
    llm.fake.enqueue(
        Reply.tool_call("get_weather", {"city": "Paris"}),
        Reply.tool_call("search_documents", {"q": "holidays"}),
        Reply.tool_call("search_documents", third),
        "I could not search, sorry.",
    )
    events = await chat(server.url, {"message": "How many holidays?"})
    assert names(events) == ["thread", "token", "done"]
    errors = [r.messages[-1] for r in llm.fake.chat_requests[1:]]
    assert all(m["role"] == "tool" and m["content"].startswith("Error: ") for m in errors)
    assert "no tool named 'get_weather'" in errors[0]["content"]
    assert 'non-empty string "query"' in errors[1]["content"]
    assert ("not valid JSON" if llm.provider == "openai" else '"query"') in errors[2]["content"]
    assert not llm.fake.chat_requests[3].body.get("tools")  # 3 rounds used: the last call has no tools
    saved = await get_thread(server.url, first(events, "thread")["thread_id"])
    assert saved["messages"][1]["status"] == "complete" and saved["messages"][1]["tool_calls"] == []


async def test_tool_rounds_are_bounded(corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake) -> None:
    server = start(chat_max_tool_rounds=2)
    llm.fake.enqueue(
        Reply.tool_call("search_documents", {"query": "lava"}),
        Reply.tool_call("search_documents", {"query": "magma"}),
        Reply.tool_call("search_documents", {"query": "ash"}, content_before="Final answer [1]."),
    )
    events = await chat(server.url, {"message": "What comes out of a volcano?"})
    assert names(events) == ["thread", "tool_call", "tool_result", "tool_call", "tool_result", "token", "done"]
    requests = llm.fake.chat_requests
    assert len(requests) == 3
    assert requests[0].body["tools"] and requests[1].body["tools"] and not requests[2].body.get("tools")
    assert text_of(events) == "Final answer [1]."  # the tool call on the tool-less call is ignored
    assert first(events, "done")["usage"]["tool_rounds"] == 2


async def test_document_selection_bounds_every_search(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    volcano, bread, handbook = corpus["volcano.txt"], corpus["bread.txt"], corpus["handbook.pdf"]
    llm.fake.enqueue(
        Reply.tool_call("search_documents", {"query": "holidays"}),  # no ids: the selection applies
        Reply.tool_call("search_documents", {"query": "bread", "document_ids": [str(bread), str(handbook)]}),
        Reply.tool_call("search_documents", {"query": "holidays", "document_ids": [str(handbook)]}),  # outside
        "Done.",
    )
    events = await chat(
        server.url, {"message": "holidays?", "document_ids": [str(volcano), str(bread)], "search_mode": "vector"}
    )
    first_result, second_result = all_of(events, "tool_result")
    assert {c["filename"] for c in first_result["chunks"]} == {"volcano.txt", "bread.txt"}
    assert {c["filename"] for c in second_result["chunks"]} == {"bread.txt"}  # narrowed within the selection
    outside = llm.fake.chat_requests[3].messages[-1]["content"]
    assert outside.startswith("Error: none of those document_ids")


async def test_answer_without_search(start: Callable[..., Any], llm: LLMFake) -> None:
    server = start()
    llm.fake.enqueue(Reply.text("Hello! Ask me about your documents.", done_reason="stop"))
    events = await chat(server.url, {"message": "  hi  "})
    assert names(events) == ["thread", "token", "done"]
    saved = await get_thread(server.url, first(events, "thread")["thread_id"])
    assert saved["title"] == "hi" and saved["messages"][0]["content"] == "hi"
    assert saved["messages"][1]["tool_results"] == []


def _scripted(body: dict[str, Any]) -> Reply:
    """Rerank calls (they carry `format`) get a score; the chat searches once, then answers."""
    if body.get("format") or body.get("response_format"):
        passage = body["messages"][-1]["content"]
        return Reply.json({"score": 0.9 if "yeast" in passage else 0.2})
    if body["messages"][-1]["role"] == "tool":
        return Reply.text("Wild yeast [1].")
    return Reply.tool_call("search_documents", {"query": "why does bread rise"})


@pytest.mark.skipif(importlib.util.find_spec("ragchat.retrieval.rerank") is None, reason="no reranker in this build")
async def test_rerank_request_reports_reranked_results(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.responder = _scripted
    events = await chat(server.url, {"message": "Why does bread rise?", "rerank": True})
    assert names(events) == ["thread", "tool_call", "tool_result", "token", "done"]
    result = first(events, "tool_result")
    assert result["reranked"] is True and result["search_mode"] == "hybrid"
    assert result["timings"]["rerank_ms"] > 0
    top = result["chunks"][0]
    assert top["filename"] == "bread.txt" and top["score"] == top["trace"]["rerank_score"] == 0.9
    assert all(c["trace"]["rerank_score"] is not None for c in result["chunks"])
    assert any(llm.json_schema(r) for r in llm.fake.chat_requests)

    llm.fake.reset()
    llm.fake.responder = _scripted
    plain = await chat(server.url, {"message": "Why does bread rise?", "rerank": False})
    assert first(plain, "tool_result")["reranked"] is False
    assert not any(llm.json_schema(r) for r in llm.fake.chat_requests)


async def test_think_is_sent_explicitly_and_dropped_when_ollama_rejects_it(
    start: Callable[..., Any], llm: LLMFake
) -> None:
    if llm.provider != "ollama":
        pytest.skip("`think` is an Ollama option")
    server = start(chat_model="nothink-model")  # the rejection is remembered per model for the process
    llm.fake.enqueue(Reply.error(400, '"nothink-model" does not support thinking'), "Hello.", "Again.")
    events = await chat(server.url, {"message": "hi"})
    assert names(events) == ["thread", "token", "done"] and text_of(events) == "Hello."
    rejected, answered = llm.fake.chat_requests
    assert rejected.body["think"] is False and "think" not in answered.body
    assert first(events, "done")["usage"]["llm_calls"] == 1
    await chat(server.url, {"message": "hi again"})
    assert "think" not in llm.fake.chat_requests[2].body


async def test_the_documented_python_client_works(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake, capsys: pytest.CaptureFixture[str]
) -> None:
    server = start()
    doc = SSE_DOC.read_text()
    code = doc.split("```python\n")[-1].split("```")[0]
    code = code.replace("http://127.0.0.1:8000", server.url).replace(
        'asyncio.run(ask("How many holiday days do I get?"))', ""
    )
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/SSE.md", "exec"), namespace)
    llm.fake.enqueue(Reply.tool_call("search_documents", {"query": "holiday days"}), "You get 25 days [1].")
    thread_id = await namespace["ask"]("How many holiday days do I get?")
    out = capsys.readouterr().out
    assert "You get 25 days [1]." in out and "[1] handbook.pdf p.1 (" in out
    llm.fake.enqueue(Reply.error(404, "model not found"))
    assert await namespace["ask"]("And next year?", thread_id) == thread_id
    assert "error: The model 'llama3.2' is not available" in capsys.readouterr().out
