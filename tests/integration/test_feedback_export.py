"""Message actions over real HTTP: feedback on answers (set, shown with the thread, exported as JSON lines
and CSV that no spreadsheet runs), a thread exported as Markdown and JSON, thread settings on PATCH
(ids checked, renaming does not move a thread), and the LLM server's model list."""

from __future__ import annotations

import csv
import io
import json
import uuid
from collections.abc import Callable
from typing import Any
from uuid import UUID

import httpx
import pytest

from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.openai_server import FakeOpenAI
from tests.support.accounts import add_user, setup_admin, signed_in
from tests.support.chat import chat, first

FORMULA = '=HYPERLINK("http://evil.example","click")'


@pytest.fixture
def server(live_app: Callable[..., Any], fake_ollama: FakeOllama) -> Any:
    return live_app(ollama_host=fake_ollama.url)


async def ask(url: str, fake: FakeOllama, question: str, answer: str, **body: Any) -> tuple[str, str]:
    """One answered question; (thread id, answer message id)."""
    fake.enqueue(Reply.tool_call("search_documents", {"query": question}), answer)
    events = await chat(url, {"message": question, **body})
    return first(events, "thread")["thread_id"], first(events, "done")["message_id"]


async def test_feedback_is_saved_shown_and_exported(
    corpus: dict[str, UUID], server: Any, fake_ollama: FakeOllama
) -> None:
    thread, answer = await ask(server.url, fake_ollama, "How many holiday days?", "You get 25 days [1].")
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        put = await client.put(f"/api/messages/{answer}/feedback", json={"rating": "up", "note": f"  {FORMULA} "})
        assert put.status_code == 200, put.text
        assert put.json()["rating"] == "up" and put.json()["note"] == FORMULA and put.json()["message_id"] == answer
        messages = (await client.get(f"/api/threads/{thread}")).json()["messages"]
        assert messages[0]["feedback"] is None and messages[1]["feedback"]["rating"] == "up"

        down = await client.put(f"/api/messages/{answer}/feedback", json={"rating": "down", "note": None})
        assert down.json()["rating"] == "down" and down.json()["note"] is None
        assert down.json()["updated_at"] > put.json()["updated_at"]
        await client.put(f"/api/messages/{answer}/feedback", json={"rating": "down", "note": FORMULA})

        question_id = messages[0]["id"]
        for path, body, status in (
            (f"/api/messages/{question_id}/feedback", {"rating": "up"}, 400),  # questions are not rated
            (f"/api/messages/{uuid.uuid4()}/feedback", {"rating": "up"}, 404),
            (f"/api/messages/{answer}/feedback", {"rating": "meh"}, 400),
            (f"/api/messages/{answer}/feedback", {"rating": "up", "note": "x" * 2001}, 400),
            (f"/api/messages/{answer}/feedback", {"note": "no rating key"}, 400),
        ):
            response = await client.put(path, json=body)
            assert response.status_code == status, (path, body, response.text)

        jsonl = await client.get("/api/feedback/export", params={"format": "jsonl"})
        assert jsonl.status_code == 200
        assert jsonl.headers["content-disposition"].startswith('attachment; filename="ragchat-feedback-')
        rows = [json.loads(line) for line in jsonl.text.splitlines()]
        assert len(rows) == 1
        row = rows[0]
        assert row["message_id"] == answer and row["thread_id"] == thread and row["rating"] == "down"
        assert row["question"] == "How many holiday days?" and row["answer"] == "You get 25 days [1]."
        assert row["note"] == FORMULA and row["model"] == "llama3.2" and row["status"] == "complete"

        exported = await client.get("/api/feedback/export", params={"format": "csv"})
        assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
        table = list(csv.DictReader(io.StringIO(exported.text)))
        assert len(table) == 1 and table[0]["note"] == "'" + FORMULA  # a spreadsheet shows it, never runs it
        assert table[0]["question"] == "How many holiday days?" and table[0]["rating"] == "down"
        assert (await client.get("/api/feedback/export", params={"format": "xml"})).status_code == 400


async def test_feedback_belongs_to_its_user(live_app: Callable[..., Any], fake_ollama: FakeOllama) -> None:
    server = live_app(ollama_host=fake_ollama.url, auth="on")
    admin = await setup_admin(server.url)
    await add_user(admin, "bob")
    bob = await signed_in(server.url, "bob")
    try:
        fake_ollama.enqueue("Hello.")
        r = await admin.post("/api/chat", json={"message": "hi"})
        done = [json.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:") and "finish" in line]
        answer = done[-1]["message_id"]
        assert (await bob.put(f"/api/messages/{answer}/feedback", json={"rating": "up"})).status_code == 404
        assert (await admin.put(f"/api/messages/{answer}/feedback", json={"rating": "up"})).status_code == 200
        assert (await bob.get("/api/feedback/export")).text == ""
        assert (await bob.get("/api/feedback/export", params={"all": "true"})).status_code == 403
        everyone = await admin.get("/api/feedback/export", params={"all": "true"})
        assert [json.loads(line)["user"] for line in everyone.text.splitlines()] == ["admin"]
    finally:
        await admin.aclose()
        await bob.aclose()


async def test_thread_export(corpus: dict[str, UUID], server: Any, fake_ollama: FakeOllama) -> None:
    thread, _ = await ask(server.url, fake_ollama, "How many holiday days?", "You get 25 days [1].")
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        await client.patch(f"/api/threads/{thread}", json={"title": "Holiday rules: 2025 / Ünïcode?"})
        md = await client.get(f"/api/threads/{thread}/export", params={"format": "markdown"})
        assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
        assert md.headers["content-disposition"] == 'attachment; filename="holiday-rules-2025-unicode.md"'
        text = md.text
        assert text.startswith("# Holiday rules: 2025 / Ünïcode?\n")
        assert "> How many holiday days?" in text and "You get 25 days [1]." in text
        assert "### Sources" in text and "1. *handbook*, page *1*: “Paid holidays: every employee gets 25" in text

        js = await client.get(f"/api/threads/{thread}/export", params={"format": "json"})
        assert js.headers["content-disposition"].endswith('.json"')
        doc = js.json()
        assert doc["thread"]["id"] == thread and [m["role"] for m in doc["messages"]] == ["user", "assistant"]
        source = doc["messages"][1]["sources"][0]
        assert source["n"] == 1 and source["document_id"] == str(corpus["handbook.pdf"]) and source["page"] == 1
        assert source["document_title"] == "handbook" and source["content"].startswith("Paid holidays")
        assert doc["messages"][1]["model"] == "llama3.2"

        assert (await client.get(f"/api/threads/{uuid.uuid4()}/export")).status_code == 404
        assert (await client.get(f"/api/threads/{thread}/export", params={"format": "pdf"})).status_code == 400


async def test_thread_settings_and_rename_keep_the_order(
    corpus: dict[str, UUID], server: Any, fake_ollama: FakeOllama
) -> None:
    older, _ = await ask(server.url, fake_ollama, "How many holiday days?", "25 [1].")
    newer, _ = await ask(server.url, fake_ollama, "What erupts?", "Magma [1].")
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        before = (await client.get("/api/threads")).json()["threads"]
        assert [t["id"] for t in before] == [newer, older] and before[0]["settings"] == {
            "document_ids": None, "collection_ids": None, "search_mode": None, "rerank": None, "model": None,
            "documents_only": None,
        }  # fmt: skip
        renamed = await client.patch(f"/api/threads/{older}", json={"title": "Holidays"})
        assert renamed.status_code == 200 and renamed.json()["updated_at"] == before[1]["updated_at"]
        assert [t["id"] for t in (await client.get("/api/threads")).json()["threads"]] == [newer, older]

        handbook = str(corpus["handbook.pdf"])
        settings = {"document_ids": [handbook, handbook], "search_mode": "keyword", "rerank": True, "model": "qwen3"}
        saved = await client.patch(f"/api/threads/{older}", json={"settings": settings})
        assert saved.status_code == 200, saved.text
        assert saved.json()["title"] == "Holidays" and saved.json()["updated_at"] == before[1]["updated_at"]
        assert saved.json()["settings"] == {
            **settings,
            "document_ids": [handbook],
            "collection_ids": None,
            "documents_only": None,
        }
        detail = (await client.get(f"/api/threads/{older}")).json()
        assert detail["settings"]["document_ids"] == [handbook] and detail["settings"]["model"] == "qwen3"
        assert [t["id"] for t in (await client.get("/api/threads")).json()["threads"]] == [newer, older]

        missing = await client.patch(f"/api/threads/{older}", json={"settings": {"document_ids": [str(uuid.uuid4())]}})
        assert missing.status_code == 404 and missing.json()["detail"].startswith("document ")
        gone = await client.patch(f"/api/threads/{older}", json={"settings": {"collection_ids": [str(uuid.uuid4())]}})
        assert gone.status_code == 404 and gone.json()["detail"].startswith("collection ")
        for bad in (
            {},
            {"settings": {"search_mode": "fast"}},
            {"settings": {"model": "a\nb"}},
            {"settings": {"document_ids": ["not-a-uuid"]}},
            {"settings": {"rerank": "yes"}},
        ):
            assert (await client.patch(f"/api/threads/{older}", json=bad)).status_code == 400, bad
        assert (await client.get(f"/api/threads/{older}")).json()["settings"]["search_mode"] == "keyword"
        cleared = await client.patch(f"/api/threads/{older}", json={"settings": {}})
        assert cleared.json()["settings"]["document_ids"] is None


@pytest.mark.parametrize("provider", ["ollama", "openai"])
async def test_models_list(
    live_app: Callable[..., Any], fake_ollama: FakeOllama, fake_openai: FakeOpenAI, provider: str
) -> None:
    fake: FakeOllama | FakeOpenAI = fake_ollama if provider == "ollama" else fake_openai
    fake.models = ["qwen3:4b", "llama3.2:latest"] if provider == "ollama" else ["qwen3-4b", "llama3.2"]
    urls = {"ollama_host": fake_ollama.url} if provider == "ollama" else {"openai_base_url": fake_openai.url}
    server = live_app(llm_provider=provider, **urls)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        listing = await client.get("/api/models")
        assert listing.status_code == 200, listing.text
        body = listing.json()
        assert body["provider"] == provider and body["default"] == "llama3.2"
        assert [m["name"] for m in body["models"]] == sorted(fake.models)
        if provider == "ollama":
            assert body["models"][0]["family"] == "llama" and body["models"][0]["size"] > 0
        await client.put("/api/settings", json={"chat_model": "qwen3:4b"})
        assert (await client.get("/api/models")).json()["default"] == "qwen3:4b"


async def test_models_list_when_the_server_is_down(live_app: Callable[..., Any], closed_ollama_url: str) -> None:
    server = live_app(ollama_host=closed_ollama_url)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        down = await client.get("/api/models")
        assert down.status_code == 503 and "not reachable" in down.json()["detail"]
