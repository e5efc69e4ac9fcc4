"""The Summarise action on the real model (Qwen2.5-Coder-1.5B via llama.cpp, 4096-token window): a small
document is read whole, each part summarised by the model, and the answer states its facts citing the parts.
Only what must hold for a real model is asserted: the protocol's order, progress, the facts, valid [n]."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.real.test_chat_real import start, upload_all  # noqa: F401  (the `start` fixture)
from tests.support.chat import chat, first, names, text_of


async def test_summarise_a_small_document(start: Callable[..., Any]) -> None:  # noqa: F811
    server = start()
    ids = await upload_all(server.url)
    body = {"message": "Summarise this document.", "document_ids": [ids["x200-manual.txt"]], "task": "summarize"}
    events = await chat(server.url, body, read_timeout=600)
    flow = names(events)
    assert flow[:2] == ["thread", "tool_call"] and "progress" in flow and flow[-1] == "done", flow
    result = first(events, "tool_result")
    assert result["summary"]["parts"] == 1 and result["chunks"][0]["filename"] == "x200-manual.txt"
    assert "3 years" in result["chunks"][0]["content"] or "three years" in result["chunks"][0]["content"].lower()
    answer = text_of(events)
    assert "warranty" in answer.lower()
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer)}
    assert cited <= {1} and first(events, "done")["citations"]["invalid"] == []


async def test_summarise_and_compare_typed_in_chat_read_the_whole_documents(start: Callable[..., Any]) -> None:  # noqa: F811
    """Issue 41: the words alone (no `task` field, the model never asked to call a tool) reach the whole-document
    tool when the chat's scope names the documents, and the answer cites the parts it was written from."""
    server = start(chat_retrieve_first="auto")
    ids = await upload_all(server.url)
    body = {"message": "summarise this document", "document_ids": [ids["x200-manual.txt"]]}
    events = await chat(server.url, body, read_timeout=900)
    result = first(events, "tool_result")
    assert result["name"] == "summarize_documents" and result["summary"]["parts"] >= 1, names(events)
    assert names(events)[-1] == "done"
    checks = first(events, "citations")
    assert checks["searched"] is True and checks["no_source"] == 0, checks
    assert {int(n) for n in re.findall(r"\[(\d+)\]", checks["content"] or text_of(events))} <= {1}

    both = [ids["x200-manual.txt"], ids["travel-policy.txt"]]
    events = await chat(server.url, {"message": "compare these two documents", "document_ids": both}, read_timeout=900)
    result = first(events, "tool_result")
    assert result["name"] == "summarize_documents" and result["summary"]["parts"] >= 2, names(events)
    assert {c["filename"] for c in result["chunks"]} == {"x200-manual.txt", "travel-policy.txt"}
    assert names(events)[-1] == "done" and first(events, "citations")["no_source"] == 0


async def test_a_plain_lookup_is_answered_in_one_model_call(start: Callable[..., Any]) -> None:  # noqa: F811
    """CHAT_RETRIEVE_FIRST=auto (the default): one search with the question, one model call, the fact, cited."""
    server = start(chat_retrieve_first="auto")
    await upload_all(server.url)
    events = await chat(
        server.url, {"message": "What is the warranty period of the X200 dishwasher?"}, read_timeout=600
    )
    done = first(events, "done")
    assert done["usage"]["llm_calls"] == 1, done["usage"]
    checks = first(events, "citations")
    answer = checks["content"] or text_of(events)
    assert "3 years" in answer or "three years" in answer.lower(), answer
    assert checks["searched"] is True and checks["not_covered"] is False, checks
