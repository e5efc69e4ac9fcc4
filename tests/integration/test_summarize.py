"""Whole-document summaries over real HTTP with the fake LLM: a 300-page PDF through the real pipeline is read
in order, mapped part by part within the context budget, reduced, and answered citing the parts (pages);
progress events, the honest cut at the bound, compare, /api/rag, Stop, bad requests, and the chat tools."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

import httpx
import pytest
from httpx_sse import aconnect_sse

from ragchat.chat.engine.budget import MESSAGE_OVERHEAD, estimate_tokens
from ragchat.chat.engine.summarize import MAP_PROMPT, REDUCE_PROMPT
from ragchat.settings import Settings
from tests.fakes.ollama_server import Reply
from tests.fakes.plugin import LLMFake
from tests.support.chat import chat, first, make_pdf, names
from tests.support.corpus import Corpus, ingest_files

PAGES = 300
WINDOW = 3072
RESERVE = 512
PART = re.compile(r"Part \[(\d+)\], (pages?|sections?) (\d+)(?:–(\d+))?")


def page_text(n: int) -> str:
    return f"Page {n}. Clause {n}: the supplier delivers lot {n} within {n % 30 + 1} days; penalty {n % 7}%. " * 4


# one worker takes the module: its 300-page PDF is ingested once there (tests/support/corpus.py keeps the rows)
pytestmark = pytest.mark.xdist_group("summarize")


@pytest.fixture
async def corpus(pool: Any, embedder: Any, settings: Settings) -> Corpus:
    files: dict[str, bytes | str] = {
        "report.pdf": make_pdf([page_text(n) for n in range(1, PAGES + 1)]),
        "v1.txt": "Contract v1. Delivery within 30 days. Penalty 2% per week.",
        "v2.txt": "Contract v2. Delivery within 20 days. Penalty 5% per week.",
    }
    return await ingest_files(pool, embedder, settings, files)


def responder(body: dict[str, Any]) -> Reply:
    """Map: which pages it saw; reduce: the markers it got, merged; the answer: cites a few parts."""
    system = body["messages"][0]["content"]
    user = body["messages"][-1]["content"]
    if system == MAP_PROMPT:
        match = PART.search(user)
        assert match, user[:200]
        lots = f"lots {match.group(3)} to {match.group(4) or match.group(3)}"
        return Reply.text(f"Part {match.group(1)} covers {lots}: delivery times, penalties and suppliers. " * 6)
    if system == REDUCE_PROMPT:
        markers = " ".join(dict.fromkeys(re.findall(r"\[\d+\]", user)))
        return Reply.text(f"Merged lots {markers}.")
    return Reply.text("The report sets delivery times and penalties for every lot [1][2].")


def tokens(body: dict[str, Any]) -> int:
    """The request's size as the app's budget counts it (server/ragchat/chat/engine/budget.py), from the wire body."""
    total = estimate_tokens(json.dumps(body["tools"])) if body.get("tools") else 0
    for m in body["messages"]:
        total += MESSAGE_OVERHEAD + estimate_tokens(str(m.get("content") or ""))
        for call in m.get("tool_calls") or []:
            fn = call["function"]
            arguments = fn["arguments"] if isinstance(fn["arguments"], str) else json.dumps(fn["arguments"])
            total += estimate_tokens(fn["name"] + arguments) + MESSAGE_OVERHEAD
    return total


def check_budget(llm: LLMFake) -> list[dict[str, Any]]:
    """Every request fits the model's window minus the answer's reserve; the map and reduce requests."""
    requests = [r.body for r in llm.fake.chat_requests]
    for body in requests:
        assert tokens(body) <= WINDOW - RESERVE, tokens(body)
    return requests


async def test_a_300_page_document_is_summarised_part_by_part_within_the_budget(
    corpus: Corpus, start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(chat_context_tokens=WINDOW, chat_answer_reserve_tokens=RESERVE)
    llm.fake.responder = responder
    body = {"message": "Summarise this report.", "document_ids": [str(corpus["report.pdf"])], "task": "summarize"}
    events = await chat(server.url, body, read_timeout=120)
    flow = names(events)
    assert flow[:3] == ["thread", "tool_call", "progress"] and flow[-3:] == ["tool_result", "token", "done"]
    call = first(events, "tool_call")
    assert call["name"] == "summarize_documents"
    progress = [d for n, d in events if n == "progress"]
    assert {p["id"] for p in progress} == {call["id"]}
    maps = [p for p in progress if p["stage"] == "map"]
    reduces = [p for p in progress if p["stage"] == "reduce"]
    assert [p["done"] for p in maps] == list(range(1, len(maps) + 1)) and maps[-1]["total"] == len(maps)
    assert len(maps) > 10 and reduces  # the summaries did not fit one request: merged first

    requests = check_budget(llm)
    map_bodies = [b for b in requests if b["messages"][0]["content"] == MAP_PROMPT]
    reduce_bodies = [b for b in requests if b["messages"][0]["content"] == REDUCE_PROMPT]
    assert len(map_bodies) == len(maps) and len(reduce_bodies) == len(reduces)
    # the map calls read every page once, in order
    seen = []
    for b in map_bodies:
        seen += [int(p) for p in re.findall(r"Page (\d+)\. Clause", b["messages"][-1]["content"])[::4]]
    assert seen == list(range(1, PAGES + 1))
    assert not any(b.get("tools") for b in map_bodies + reduce_bodies)

    result = first(events, "tool_result")
    parts = result["chunks"]
    assert len(parts) == len(maps) == result["summary"]["parts"] and result["summary"]["notes"] == []
    assert result["summary"]["llm_calls"] == len(maps) + len(reduces)
    assert parts[0]["page"] == 1 and parts[0]["section"].startswith("Summary of pages 1–")
    assert all(p["document_id"] == str(corpus["report.pdf"]) and p["id"] for p in parts)
    assert parts[-1]["section"].endswith(f"–{PAGES}") and "covers lots" in parts[0]["content"]
    answer = requests[-1]["messages"][-1]["content"]  # the answer's request: the merged summaries with [n]
    assert "[1]" in answer and f"[{len(parts)}]" in answer and "Summarise this report." in answer
    assert first(events, "done")["citations"]["invalid"] == []


async def test_the_bound_is_said_and_compare_reads_both(
    corpus: Corpus, start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(chat_context_tokens=WINDOW, chat_answer_reserve_tokens=RESERVE, summary_max_sections=40)
    llm.fake.responder = responder
    body = {"message": "Summarise.", "document_ids": [str(corpus["report.pdf"])], "task": "summarize"}
    events = await chat(server.url, body, read_timeout=120)
    result = first(events, "tool_result")
    assert result["summary"]["notes"] == [
        "Summarised the first 40 of 300 sections of report: the rest was not read (the request's bound)."
    ]
    assert "Summarised the first 40 of 300 sections" in llm.fake.chat_requests[-1].messages[-1]["content"]
    assert result["chunks"][-1]["section"].endswith("–40")

    llm.fake.reset()
    llm.fake.responder = responder
    ids = [str(corpus["v1.txt"]), str(corpus["v2.txt"])]
    events = await chat(server.url, {"message": "What changed?", "document_ids": ids, "task": "compare"})
    parts = first(events, "tool_result")["chunks"]
    assert [p["filename"] for p in parts] == ["v1.txt", "v2.txt"]
    answer = llm.fake.chat_requests[-1].messages[-1]["content"]
    assert answer.startswith("What changed?") and "Comparing Contract v1" in answer and "[2] Contract v2" in answer
    assert "where they differ" in answer


async def test_rag_and_bad_requests(corpus: Corpus, start: Callable[..., Any], llm: LLMFake) -> None:
    server = start(chat_context_tokens=WINDOW, chat_answer_reserve_tokens=RESERVE)
    llm.fake.responder = responder
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        rag = await client.post(
            "/api/rag",
            json={"query": "Summarise v1", "task": "summarize", "filters": {"document_ids": [str(corpus["v1.txt"])]}},
        )
        assert rag.status_code == 200, rag.text
        assert rag.json()["answer"].startswith("The report sets") and rag.json()["chunks"][0]["filename"] == "v1.txt"
        for body, says in [
            ({"message": "Summarise", "task": "summarize"}, "task summarize needs 1 to 4 document_ids (got 0)"),
            ({"message": "x", "task": "compare", "document_ids": [str(corpus["v1.txt"])]}, "needs 2 to 4"),
            ({"message": "x", "task": "summarize", "document_ids": [str(UUID(int=i)) for i in range(5)]}, "got 5"),
            ({"message": "x", "task": "delete everything", "document_ids": [str(corpus["v1.txt"])]}, "task"),
        ]:
            started = time.monotonic()
            r = await client.post("/api/chat", json=body)
            assert r.status_code == 400 and says in r.text, r.text
            assert time.monotonic() - started < 5
        # another user's or a missing document: 404 before anything runs (docs/API.md "Unreadable ids")
        llm.fake.reset()
        missing = str(UUID(int=7))
        r = await client.post(
            "/api/chat", json={"message": "Summarise", "task": "summarize", "document_ids": [missing]}
        )
        assert r.status_code == 404 and f"document {missing} not found" in r.text, r.text
        assert llm.fake.chat_requests == []


async def test_stop_cancels_the_map_reduce(corpus: Corpus, start: Callable[..., Any], llm: LLMFake) -> None:
    server = start(chat_context_tokens=WINDOW, chat_answer_reserve_tokens=RESERVE)
    llm.fake.responder = lambda body: Reply.hang(0.3, responder(body))
    body = {"message": "Summarise this report.", "document_ids": [str(corpus["report.pdf"])], "task": "summarize"}
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=60) as client,
        aconnect_sse(client, "POST", "/api/chat", json=body) as source,
    ):
        seen: list[tuple[str, dict[str, Any]]] = []
        async for event in source.aiter_sse():
            if not event.data:
                continue
            seen.append((event.event, json.loads(event.data)))
            if event.event == "progress" and seen[-1][1]["stage"] == "map" and seen[-1][1]["done"] == 2:
                thread_id = seen[0][1]["thread_id"]
                stop = await client.post(f"/api/threads/{thread_id}/stop")
                assert stop.status_code in (200, 202, 204), stop.text
        assert seen[-1][0] == "error" and seen[-1][1]["code"] == "stopped"
    await asyncio.sleep(0.5)  # the call in flight when the stop came (if any) has reached the fake
    calls = len(llm.fake.chat_requests)
    await asyncio.sleep(1.5)
    assert len(llm.fake.chat_requests) == calls <= 4  # no map call after the stop


async def test_the_model_reads_and_summarises_through_its_tools(
    corpus: Corpus, start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(chat_context_tokens=WINDOW, chat_answer_reserve_tokens=RESERVE)
    report = str(corpus["report.pdf"])
    llm.fake.enqueue(
        Reply.tool_call("read_document", {"document_id": report, "start_section": 10}),
        Reply.tool_call("summarize_documents", {"document_ids": [str(corpus["v2.txt"])]}),
        Reply.text("v2 delivers in 20 days [1]."),  # the map call of v2's one part
        Reply.text("Page 11 says lot 11 [1]; v2 is faster [5]."),
    )
    events = await chat(server.url, {"message": "Read the report from section 10, then summarise v2."})
    assert [d["name"] for n, d in events if n == "tool_call"] == ["read_document", "summarize_documents"]
    read, summary = [d for n, d in events if n == "tool_result"]
    assert read["chunks"][0]["chunk_index"] == 10 and read["chunks"][0]["page"] == 11
    assert summary["chunks"][0]["filename"] == "v2.txt"
    tool_msg = llm.fake.chat_requests[1].messages[-1]["content"]
    assert "[1] section 10, page 11" in tool_msg and "More follows: call read_document with start_section=" in tool_msg
    assert check_budget(llm)
    # a bad id is an error the model can fix, nothing runs
    llm.fake.reset()
    llm.fake.enqueue(Reply.tool_call("read_document", {"document_id": "report.pdf"}), Reply.text("Sorry."))
    events = await chat(server.url, {"message": "Read it"})
    assert "tool_call" not in names(events)
    assert llm.fake.chat_requests[1].messages[-1]["content"].startswith("Error: 'report.pdf' is not a document id")


async def test_a_5000_page_request_is_bounded_and_says_so(
    corpus: Corpus, pool: Any, start: Callable[..., Any], llm: LLMFake
) -> None:
    """A 5,000-page document (v1.txt's row, given 5,000 page chunks in SQL: ingesting them through the model
    would take minutes) is summarised within SUMMARY_MAX_SECTIONS and SUMMARY_MAX_PARTS, in bounded time."""
    doc = corpus["v1.txt"]
    async with pool.connection() as conn:
        await conn.execute(
            """INSERT INTO document_chunks
                   (document_id, owner_id, chunk_index, content, page, token_count, content_hash)
               SELECT c.document_id, c.owner_id, p, 'Page ' || p || '. ' || repeat('Clause text of this page. ', 40),
                      p, 200, md5(p::text)
               FROM document_chunks c, generate_series(1, 4999) p WHERE c.document_id = %s AND c.chunk_index = 0""",
            (doc,),
        )
        await conn.execute("UPDATE documents SET chunks_total = 5000 WHERE id = %s", (doc,))
    server = start(chat_context_tokens=WINDOW, chat_answer_reserve_tokens=RESERVE, summary_max_parts=12)
    llm.fake.responder = responder
    started = time.monotonic()
    events = await chat(server.url, {"message": "Summarise.", "document_ids": [str(doc)], "task": "summarize"})
    assert time.monotonic() - started < 60
    result = first(events, "tool_result")
    notes = result["summary"]["notes"]
    assert notes[0] == (
        "Summarised the first 2000 of 5000 sections of Contract v1. Delivery within 30 days. Penalty 2% per week.: "
        "the rest was not read (the request's bound)."
    )
    assert notes[1].startswith("Summarised the first ") and "(up to pages " in notes[1]
    maps = [b for b in check_budget(llm) if b["messages"][0]["content"] == MAP_PROMPT]
    assert len(maps) == len(result["chunks"]) == 12
    assert (
        "Say this to the user: Summarised the first 2000 of 5000" in llm.fake.chat_requests[-1].messages[-1]["content"]
    )
