"""The threads API over real HTTP: list (most recently active first), get, rename, delete."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.fakes.ollama_server import FakeOllama
from tests.support.chat import chat, first


@pytest.fixture
def server(live_app: Callable[..., Any], fake_ollama: FakeOllama) -> Any:
    return live_app(ollama_host=fake_ollama.url)


async def test_list_rename_delete(server: Any, fake_ollama: FakeOllama) -> None:
    fake_ollama.enqueue("One.", "Two.", "Three.")
    long_question = "What does the employee handbook say about carrying unused holiday days into the next year?"
    a = first(await chat(server.url, {"message": long_question}), "thread")["thread_id"]
    b = first(await chat(server.url, {"message": "Second thread"}), "thread")["thread_id"]
    async with httpx.AsyncClient(base_url=server.url) as client:
        listed = (await client.get("/api/threads")).json()["threads"]
        assert [t["id"] for t in listed] == [b, a]
        assert set(listed[0]) == {"id", "title", "created_at", "updated_at", "settings"}
        title = listed[1]["title"]
        assert title == "What does the employee handbook say about carrying unused…"
        assert len(title) <= 60 and long_question.startswith(title[:-1])

        await chat(server.url, {"message": "And now?", "thread_id": a})  # activity moves a to the top
        assert [t["id"] for t in (await client.get("/api/threads")).json()["threads"]] == [a, b]

        renamed = await client.patch(f"/api/threads/{a}", json={"title": "  Holiday   rules "})
        assert renamed.status_code == 200 and renamed.json()["title"] == "Holiday rules"
        assert renamed.json()["id"] == a
        detail = (await client.get(f"/api/threads/{a}")).json()
        assert detail["title"] == "Holiday rules" and len(detail["messages"]) == 4
        assert set(detail["messages"][0]) == {
            "id", "role", "content", "status", "tool_calls", "tool_results", "error", "citations", "created_at",
            "parent_id", "siblings", "model", "feedback",
        }  # fmt: skip
        assert [m["role"] for m in detail["messages"]] == ["user", "assistant", "user", "assistant"]

        assert (await client.patch(f"/api/threads/{a}", json={"title": "   "})).status_code == 400
        assert (await client.patch(f"/api/threads/{a}", json={"title": "x" * 201})).status_code == 400
        assert (await client.patch(f"/api/threads/{uuid.uuid4()}", json={"title": "x"})).status_code == 404

        deleted = await client.delete(f"/api/threads/{a}")
        assert deleted.status_code == 204 and deleted.content == b""
        assert (await client.get(f"/api/threads/{a}")).status_code == 404
        assert (await client.delete(f"/api/threads/{a}")).status_code == 404
        assert [t["id"] for t in (await client.get("/api/threads")).json()["threads"]] == [b]
        response = await client.post("/api/chat", json={"message": "hi", "thread_id": a})
        assert response.status_code == 404


async def test_unknown_and_malformed_thread_ids(server: Any) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        missing = await client.get(f"/api/threads/{uuid.uuid4()}")
        assert missing.status_code == 404 and missing.json()["code"] == "not_found"
        assert (await client.get("/api/threads/not-a-uuid")).status_code == 404
        assert (await client.get("/api/threads")).json() == {"threads": []}
