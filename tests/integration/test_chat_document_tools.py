"""The chat's document tools over real HTTP with the fake LLM: find_documents lists every matching document
(numbered best passages the model cites, the tally in the tool_result), inside the request's scope."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

from ragchat.settings import Settings
from tests.fakes.ollama_server import Reply
from tests.fakes.plugin import LLMFake
from tests.support.chat import chat, first, get_thread, names
from tests.support.corpus import Corpus, ingest_files

PENALTY = "The supplier pays a penalty of 2% per week of delay."


@pytest.fixture
async def corpus(pool: Any, embedder: Any, settings: Settings) -> Corpus:
    files: dict[str, bytes | str] = {f"contract{i:02d}.txt": f"Contract {i}. {PENALTY}" for i in range(25)}
    files |= {f"note{i}.txt": f"Meeting note {i}: the garden needs watering." for i in range(5)}
    return await ingest_files(pool, embedder, settings, files)


async def test_find_documents_counts_every_match_and_feeds_numbered_passages(
    corpus: Corpus, start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.enqueue(
        Reply.tool_call("find_documents", {"query": "penalty"}),
        Reply.text("25 contracts mention a penalty, e.g. [1] and [2]."),
    )
    events = await chat(server.url, {"message": "Which of my documents mention penalties?"})
    assert names(events) == ["thread", "tool_call", "tool_result", "token", "done"]
    call = first(events, "tool_call")
    assert call["name"] == "find_documents" and call["arguments"] == {"query": "penalty"}
    result = first(events, "tool_result")
    tally = result["documents"]
    assert tally["total_documents"] == 25 and tally["complete"] and tally["more"]
    assert len(result["chunks"]) == len(tally["matches"]) == 20  # the first page; the count covers all 25
    assert {c["document_id"] for c in result["chunks"]} <= {str(corpus[f"contract{i:02d}.txt"]) for i in range(25)}
    assert result["confidence"]["text"] == "25 documents contain these words"
    tool_msg = llm.fake.chat_requests[1].messages[-1]
    assert tool_msg["role"] == "tool" and "25 documents have passages matching" in tool_msg["content"]
    assert "[1] " in tool_msg["content"] and "[20] " in tool_msg["content"] and "[21] " not in tool_msg["content"]
    assert first(events, "done")["citations"]["invalid"] == []
    # saved with the answer: a reload shows the same tally
    thread = await get_thread(server.url, first(events, "thread")["thread_id"])
    saved = thread["messages"][-1]["tool_results"][0]
    assert saved["documents"]["total_documents"] == 25 and saved["name"] == "find_documents"


async def test_find_documents_keeps_the_request_scope_and_bad_arguments(
    corpus: Corpus, start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    only: list[UUID] = [corpus["contract00.txt"], corpus["note0.txt"]]
    llm.fake.enqueue(
        Reply.tool_call("find_documents", {"query": ""}),  # a bad call: an error the model can fix
        Reply.tool_call("find_documents", {"query": "penalty OR garden", "match": "all"}),
        Reply.text("Two documents [1][2]."),
    )
    events = await chat(server.url, {"message": "Which documents?", "document_ids": [str(d) for d in only]})
    result = first(events, "tool_result")
    assert {c["document_id"] for c in result["chunks"]} == {str(d) for d in only}
    assert result["documents"]["total_documents"] == 2
    error_msg = llm.fake.chat_requests[1].messages[-1]
    assert error_msg["role"] == "tool" and error_msg["content"].startswith("Error: find_documents needs")
