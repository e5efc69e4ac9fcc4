"""Remote embedding providers end to end over real HTTP: upload → ingest → search → chat, with 768-dimension
vectors from the fake Ollama (`/api/embed`) and the fake OpenAI-compatible server (`/v1/embeddings`).

The fakes' embeddings are deterministic per text, so searching with a chunk's exact embedding text puts that
chunk first with similarity 1: proof that the query and the documents went through the same remote model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from ragchat.vectors.store import embedding_text
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.openai_server import FakeOpenAI
from tests.support.chat import chat, first, names
from tests.support.services import LOCAL

DOCS = {
    "rivers.txt": "The Danube flows through ten countries before it reaches the Black Sea.",
    "coffee.txt": "Espresso is brewed by forcing hot water through finely ground coffee beans.",
}


async def wait_ready(client: httpx.AsyncClient, n: int, within_s: float = 30.0) -> list[dict[str, Any]]:
    deadline = asyncio.get_running_loop().time() + within_s
    while True:
        docs = (await client.get("/api/documents")).json()["documents"]
        if len(docs) == n and all(d["status"] in ("ready", "failed") for d in docs):
            return docs
        assert asyncio.get_running_loop().time() < deadline, docs
        await asyncio.sleep(0.1)


@pytest.fixture
def remote(request: pytest.FixtureRequest, fake_ollama: FakeOllama, fake_openai: FakeOpenAI) -> dict[str, Any]:
    """Settings for the parametrized provider, with the fake that serves its embeddings (768 dimensions)."""
    provider = request.param
    fake_ollama.embed_dim = fake_openai.embed_dim = 768
    if provider == "ollama":
        fake_ollama.embed_models = ["nomic-embed-text", "llama3.2"]
        return {
            "fake": fake_ollama,
            "settings": {"embed_provider": "ollama", "embed_model": "nomic-embed-text", "ollama_host": fake_ollama.url},
        }
    fake_openai.models = ["llama3.2", "text-embedding-768"]
    return {
        "fake": fake_openai,
        "settings": {
            "embed_provider": "openai",
            "embed_model": "text-embedding-768",
            "llm_provider": "openai",
            "openai_base_url": fake_openai.url,
        },
    }


@pytest.mark.parametrize("remote", ["ollama", "openai"], indirect=True)
async def test_remote_embeddings_end_to_end(remote: dict[str, Any], live_app: Callable[..., Any]) -> None:
    fake = remote["fake"]
    server = live_app(ingest_workers=1, **remote["settings"])
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        files = [("files", (name, text.encode(), "text/plain")) for name, text in DOCS.items()]
        assert (await client.post("/api/documents", files=files)).status_code == 201
        docs = await wait_ready(client, len(DOCS))
        assert {d["status"] for d in docs} == {"ready"}

        # every chunk was embedded by the remote model, and the space records it with its dimension
        embedded = [text for r in fake.embed_requests for text in r.inputs]
        titles = {d["filename"]: d["title"] for d in docs}
        for name, text in DOCS.items():
            assert embedding_text(titles[name], text) in embedded
        health = (await client.get("/api/health")).json()
        stored = health["embeddings"]["stored"]
        assert stored == {"provider": remote["settings"]["embed_provider"], "model": fake_model(remote), "dim": 768}
        assert health["embeddings"]["status"] == "ok"

        # the query goes through the same model: a chunk's exact embedding text finds it with similarity 1
        query = embedding_text(titles["coffee.txt"], DOCS["coffee.txt"])
        before = len(fake.embed_requests)
        body = (await client.get("/api/search", params={"q": query, "mode": "vector", "limit": 2})).json()
        assert body["chunks"][0]["filename"] == "coffee.txt"
        assert body["chunks"][0]["trace"]["vector_score"] == pytest.approx(1.0, abs=1e-4)
        assert [r.inputs for r in fake.embed_requests[before:]] == [[query]]

    # chat: the tool call's search runs on the remote vectors too
    fake.enqueue(
        Reply.tool_call("search_documents", {"query": embedding_text(titles["rivers.txt"], DOCS["rivers.txt"])}),
        Reply.text("The Danube flows through ten countries [1]."),
    )
    events = await chat(server.url, {"message": "Which river flows through ten countries?", "search_mode": "vector"})
    assert names(events) == ["thread", "tool_call", "tool_result", "token", "done"], events
    assert first(events, "tool_result")["chunks"][0]["filename"] == "rivers.txt"


def fake_model(remote: dict[str, Any]) -> str:
    return str(remote["settings"]["embed_model"])


@pytest.mark.parametrize("remote", ["ollama", "openai"], indirect=True)
async def test_unreachable_or_missing_embedding_model_says_the_fix(
    remote: dict[str, Any], live_app: Callable[..., Any], closed_ollama_url: str
) -> None:
    settings = dict(remote["settings"])
    settings["embed_model"] = "no-such-embedder"
    server = live_app(ingest_workers=1, **settings)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        files = [("files", ("a.txt", b"Some text about glaciers.", "text/plain"))]
        assert (await client.post("/api/documents", files=files)).status_code == 201
        [doc] = await wait_ready(client, 1)
    assert doc["status"] == "failed"
    fix = "ollama pull no-such-embedder" if settings["embed_provider"] == "ollama" else "EMBED_MODEL"
    assert fix in doc["error"]

    down = {**settings, "ollama_host": closed_ollama_url, "openai_base_url": closed_ollama_url + "/v1"}
    down["embed_model"] = remote["settings"]["embed_model"]
    server = live_app(**down)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        response = await client.get("/api/search", params={"q": "glaciers"})
    # nothing stored yet: keyword search still answers; the embedding failure never becomes a 500
    assert response.status_code in (200, 503), response.text
    if response.status_code == 503:
        assert "not reachable" in response.json()["detail"]


async def test_configured_model_differs_from_stored_vectors(
    runtime: Any, live_app: Callable[..., Any], fake_ollama: FakeOllama
) -> None:
    """MiniLM vectors stored, then the server starts with EMBED_PROVIDER=ollama: nothing mixes, health says what
    to run, and search keeps using MiniLM (the fake gets no query to embed)."""
    await runtime.documents.ingestion.register_upload(LOCAL, "coffee.txt", DOCS["coffee.txt"].encode())
    await runtime.documents.ingestion.ingest()
    fake_ollama.embed_dim = 768
    server = live_app(embed_provider="ollama", embed_model="nomic-embed-text", ollama_host=fake_ollama.url)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        health = (await client.get("/api/health")).json()
        result = (await client.get("/api/search", params={"q": "how is espresso made", "mode": "vector"})).json()
    embeddings = health["embeddings"]
    assert embeddings["status"] == "mismatch"
    assert embeddings["stored"]["model"] == "all-MiniLM-L6-v2" and embeddings["stored"]["dim"] == 384
    assert embeddings["configured"] == {"provider": "ollama", "model": "nomic-embed-text"}
    assert "ragchat reembed" in embeddings["message"]
    assert result["chunks"][0]["filename"] == "coffee.txt" and result["chunks"][0]["score"] > 0.5
    assert fake_ollama.embed_requests == []


@pytest.mark.parametrize("remote", ["ollama"], indirect=True)
async def test_a_model_whose_dimension_changed_is_refused_with_the_fix(
    remote: dict[str, Any], live_app: Callable[..., Any]
) -> None:
    """The stored vectors are 768-dimensional; the same model name now returns 512: nothing is mixed, search
    and chat say to run `ragchat reembed`."""
    fake = remote["fake"]
    server = live_app(ingest_workers=1, **remote["settings"])
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        files = [("files", ("coffee.txt", DOCS["coffee.txt"].encode(), "text/plain"))]
        assert (await client.post("/api/documents", files=files)).status_code == 201
        await wait_ready(client, 1)
        fake.embed_dim = 512
        response = await client.get("/api/search", params={"q": "how is espresso made", "mode": "vector"})
        assert response.status_code == 503 and "ragchat reembed" in response.json()["detail"]
        keyword = await client.get("/api/search", params={"q": "espresso", "mode": "keyword"})
        assert keyword.status_code == 200 and keyword.json()["chunks"][0]["filename"] == "coffee.txt"
    fake.enqueue(Reply.tool_call("search_documents", {"query": "espresso"}))
    events = await chat(server.url, {"message": "How is espresso made?", "search_mode": "hybrid"})
    assert names(events) == ["thread", "tool_call", "error"]
    assert first(events, "error")["code"] == "embeddings_unavailable"
    assert "ragchat reembed" in first(events, "error")["message"]
