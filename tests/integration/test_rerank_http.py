"""The app with `RERANK_PROVIDER=http`: /api/search reranks through a fake cross-encoder server (each dialect)
over real HTTP, on the real Postgres and embedding model, and says honestly when the server is down."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ragchat.settings import Settings
from tests.fakes.rerank_server import FakeRerank
from tests.support.services import ingest_texts

DOCS = {
    "volcano.txt": "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.",
    "bread.txt": "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.",
    "tides.txt": "Ocean tides are caused by the gravitational pull of the moon and the sun on the oceans.",
    "baking.txt": "Baking powder makes quick breads and cakes rise without yeast.",
}
JUDGEMENT = {"Baking powder": 0.95, "Volcanic": 0.7, "Sourdough": 0.4, "tides": 0.2}


@pytest.fixture
async def corpus(pool: Any, embedder: Any, settings: Settings) -> None:
    await ingest_texts(pool, embedder, settings, DOCS)


@pytest.fixture(params=["tei", "cohere", "llamacpp"])
def fake(request: pytest.FixtureRequest) -> Iterator[FakeRerank]:
    with FakeRerank(request.param) as server:
        server.scorer = lambda q, text: next((s for w, s in JUDGEMENT.items() if w in text), 0.05)
        yield server


def rerank_settings(fake: FakeRerank) -> dict[str, Any]:
    api = "tei" if fake.dialect == "tei" else "cohere"
    return {"rerank_enabled": True, "rerank_provider": "http", "rerank_url": fake.url, "rerank_api": api}


async def test_search_reranks_through_the_server(corpus: None, live_app: Any, fake: FakeRerank) -> None:
    server = live_app(**rerank_settings(fake))
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        response = await http.get("/api/search", params={"q": "what makes bread rise?", "limit": 2})
        assert response.status_code == 200, response.text
        body = response.json()
    assert body["reranked"] is True and body["rerank"]["status"] == "ok"
    assert [c["filename"] for c in body["chunks"]] == ["baking.txt", "volcano.txt"]
    assert all(c["score_kind"] == "rerank" for c in body["chunks"])
    if fake.dialect != "llamacpp":
        assert [c["score"] for c in body["chunks"]] == [0.95, 0.7]
    assert fake.rerank_requests and len(fake.rerank_requests) == 1


async def test_search_with_the_server_down_says_so(corpus: None, live_app: Any, fake: FakeRerank) -> None:
    settings = rerank_settings(fake)
    fake.stop()
    server = live_app(**settings)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        body = (await http.get("/api/search", params={"q": "what makes bread rise?", "limit": 2})).json()
    assert body["reranked"] is False and body["rerank"]["status"] == "failed"
    assert "the rerank server scored none" in body["rerank"]["warning"]
    assert all(c["trace"]["rerank_score"] is None for c in body["chunks"])


async def test_fewer_scores_is_partial(corpus: None, live_app: Any, fake: FakeRerank) -> None:
    fake.drop = 1
    server = live_app(**rerank_settings(fake))
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        body = (await http.get("/api/search", params={"q": "what makes bread rise?", "limit": 2})).json()
    assert body["rerank"]["status"] == "partial" and body["rerank"]["warning"]
    assert body["chunks"][0]["filename"] == "baking.txt"
