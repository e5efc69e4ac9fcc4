"""GET/PUT /api/settings over real HTTP: the environment's defaults, partial changes, resets, hostile input,
one user's settings never another's, and a setting that changes the next answer (mode, model)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

import httpx
import pytest

from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.plugin import LLMFake
from tests.support.accounts import add_user, setup_admin, signed_in
from tests.support.chat import chat, first


@pytest.fixture
def server(live_app: Callable[..., Any], fake_ollama: FakeOllama) -> Any:
    return live_app(ollama_host=fake_ollama.url, search_mode="keyword", chat_model="llama3.2")


async def test_defaults_changes_and_resets(server: Any) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        view = (await client.get("/api/settings")).json()
        assert view["restart_required"] == []
        assert view["defaults"] == view["values"]
        assert view["defaults"]["search_mode"] == "keyword" and view["defaults"]["chat_model"] == "llama3.2"
        assert view["defaults"]["theme"] == "system" and view["defaults"]["rerank"] is False

        changed = await client.put("/api/settings", json={"search_mode": "vector", "theme": "dark"})
        assert changed.status_code == 200, changed.text
        values = changed.json()["values"]
        assert values["search_mode"] == "vector" and values["theme"] == "dark"
        assert values["chat_model"] == "llama3.2" and changed.json()["defaults"]["search_mode"] == "keyword"
        assert (await client.get("/api/settings")).json()["values"] == values

        more = (await client.put("/api/settings", json={"chat_model": "  qwen3:4b ", "rerank": True})).json()
        assert more["values"]["chat_model"] == "qwen3:4b" and more["values"]["rerank"] is True
        assert more["values"]["theme"] == "dark"  # fields not sent are kept

        reset = (await client.put("/api/settings", json={"search_mode": None})).json()
        assert reset["values"]["search_mode"] == "keyword" and reset["values"]["theme"] == "dark"

        for bad in (
            {"search_mode": "fast"},
            {"theme": "blue"},
            {"chat_model": ""},
            {"chat_model": "   "},
            {"chat_model": "x" * 201},
            {"chat_model": "llama\n3"},
            {"rerank": "yes"},
            {"chunk_strategy": "paragraph"},
            {"colour": "red"},
        ):
            response = await client.put("/api/settings", json=bad)
            assert response.status_code == 400, (bad, response.text)
        assert (await client.get("/api/settings")).json()["values"] == reset["values"]


async def test_each_user_has_their_own(live_app: Callable[..., Any], fake_ollama: FakeOllama) -> None:
    server = live_app(ollama_host=fake_ollama.url, auth="on")
    admin = await setup_admin(server.url)
    await add_user(admin, "bob")
    bob = await signed_in(server.url, "bob")
    try:
        assert (await admin.put("/api/settings", json={"theme": "dark", "search_mode": "vector"})).status_code == 200
        assert (await bob.get("/api/settings")).json()["values"]["theme"] == "system"
        assert (await bob.put("/api/settings", json={"theme": "light"})).json()["values"]["theme"] == "light"
        assert (await admin.get("/api/settings")).json()["values"]["theme"] == "dark"
        async with httpx.AsyncClient(base_url=server.url) as anonymous:
            assert (await anonymous.get("/api/settings")).status_code == 401
    finally:
        await admin.aclose()
        await bob.aclose()


async def test_a_setting_changes_the_next_answer(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(search_mode="hybrid")
    llm.fake.models = [*llm.fake.models, "qwen3:4b"]

    async def ask(body: dict[str, Any] | None = None) -> tuple[str, str | None]:
        llm.fake.enqueue(Reply.tool_call("search_documents", {"query": "sourdough bread yeast"}), "Yeast [1].")
        events = await chat(server.url, {"message": "Why does sourdough rise?", **(body or {})})
        return first(events, "tool_result")["search_mode"], llm.fake.chat_requests[-1].model

    assert await ask() == ("hybrid", "llama3.2")  # CHAT_MODEL
    async with httpx.AsyncClient(base_url=server.url) as client:
        put = await client.put("/api/settings", json={"search_mode": "vector", "chat_model": "qwen3:4b"})
        assert put.status_code == 200, put.text
    assert await ask() == ("vector", "qwen3:4b")
    assert await ask({"search_mode": "keyword"}) == ("keyword", "qwen3:4b")  # the request still wins


async def test_uploads_follow_the_settings(server: Any) -> None:
    async def upload(name: str, **form: str) -> dict[str, Any]:
        files = {"files": (name, f"{name}: first line.\nSecond line.".encode())}
        r = await client.post("/api/documents", files=files, data=form or None)
        assert r.status_code == 201, r.text
        return r.json()["results"][0]["document"]

    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        plain = await upload("a.txt")
        assert plain["chunking"] is None and plain["metadata_status"] is None  # the environment's defaults
        await client.put("/api/settings", json={"chunk_strategy": "line", "metadata_extraction": True})
        mine = await upload("b.txt")
        assert mine["chunking"]["requested"] == "line" and mine["metadata_status"] == "pending"
        chosen = await upload("c.txt", chunk_strategy="sentence")  # the upload's own choice wins
        assert chosen["chunking"]["requested"] == "sentence"
        await client.put("/api/settings", json={"chunk_strategy": None, "metadata_extraction": None})
        again = await upload("d.txt")
        assert again["chunking"] is None and again["metadata_status"] is None


EXTRACTED = {
    "title": "Rivers",
    "summary": "About rivers.",
    "topics": ["Rivers"],
    "document_type": "Notes",
    "language": "English",
    "key_dates": [],
}


async def test_metadata_extraction_follows_the_owner(live_app: Callable[..., Any], fake_ollama: FakeOllama) -> None:
    """METADATA_EXTRACTION=true, but this user turned it off: their new document is not sent to the LLM until
    they put the setting back to the default."""
    fake_ollama.responder = lambda body: Reply.json(EXTRACTED)
    server = live_app(ingest_workers=1, ollama_host=fake_ollama.url, metadata_extraction=True)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        await client.put("/api/settings", json={"metadata_extraction": False})
        r = await client.post("/api/documents", files={"files": ("rivers.txt", b"The Ganges forms a delta.")})
        doc = r.json()["results"][0]["document"]["id"]

        async def row() -> dict[str, Any]:
            return (await client.get(f"/api/documents/{doc}")).json()

        async def until(key: str, value: str) -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if (await row())[key] == value:
                    return
                await asyncio.sleep(0.2)
            raise AssertionError(f"{key} never became {value}: {await row()}")

        await until("status", "ready")
        await asyncio.sleep(6)  # longer than the extractor's idle poll (5 s)
        assert (await row())["metadata_status"] is None and fake_ollama.chat_requests == []

        await client.put("/api/settings", json={"metadata_extraction": None})  # the default: on
        await until("metadata_status", "done")
        assert (await row())["metadata"]["topics"] == ["Rivers"] and len(fake_ollama.chat_requests) == 1
