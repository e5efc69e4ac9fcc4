"""The source documents' search contract: POST /api/search beside the GET (the same response), snippets,
citations and confidence tiers, over HTTP on the real app, Postgres and embedding model."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest

from ragchat.core.search import ChunkHit, Location
from ragchat.httpapi.search import citation_of, snippet_of
from ragchat.retrieval.schemas import MAX_SEARCH_QUERY_CHARS, SEARCH_BODY_BYTES
from ragchat.retrieval.search import Searcher
from ragchat.retrieval.wording import INSUFFICIENT_MESSAGE, confidence_of
from ragchat.settings import Settings
from tests.support.corpus import Corpus, ingest_files

DOCS = {
    "volcano.txt": ("Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.", "geo"),
    "bread.txt": ("Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.", "food"),
    "tides.txt": ("Ocean tides are caused by the gravitational pull of the moon and the sun on the oceans.", "geo"),
    "baking.txt": ("Baking powder makes quick breads and cakes rise without yeast. " * 12, "food"),
}


@pytest.fixture
async def corpus(pool: Any, embedder: Any, settings: Settings) -> Corpus:
    texts = {name: text for name, (text, _) in DOCS.items()}
    teams = {name: {"team": team} for name, (_, team) in DOCS.items()}
    return await ingest_files(pool, embedder, settings, texts, metadata=teams)


@pytest.fixture
async def http(corpus: Corpus, live_app: Any) -> Any:
    server = live_app()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        yield client


def _ids(body: dict[str, Any]) -> list[int]:
    return [c["id"] for c in body["chunks"]]


# ---- POST /api/search ------------------------------------------------------------------------------------
async def test_post_answers_like_the_get(http: httpx.AsyncClient) -> None:
    q = "what makes sourdough bread rise?"
    got = await http.get("/api/search", params={"q": q, "limit": 3, "mode": "hybrid"})
    posted = await http.post("/api/search", json={"query": q, "top_k": 3, "mode": "hybrid"})
    assert got.status_code == posted.status_code == 200, posted.text
    a, b = got.json(), posted.json()
    assert _ids(a) == _ids(b) and len(b["chunks"]) == 3
    assert b["chunks"][0]["filename"] == "bread.txt"
    assert a["confidence"] == b["confidence"] and a["rerank"] == b["rerank"]
    assert b["rerank"] == {
        "requested": False, "status": "off", "scored": 0, "skipped": 0, "candidates": 0, "method": None, "warning": None
    }  # fmt: skip
    assert b["reranked"] is False
    assert posted.headers["cache-control"] == "private, no-store"
    top = b["chunks"][0]
    assert top["snippet"] == top["content"]  # short passage: the whole of it
    assert top["citation"] == f"Based on *{top['title']}*"  # a text file: no section, no page
    conf = b["confidence"]
    assert conf["label"] in ("high", "moderate", "low") and not conf["insufficient"]
    assert conf["percent"] == round(conf["best_similarity"] * 100)
    assert conf["text"] == f"{conf['label'].capitalize()} confidence ({conf['percent']}%)"
    assert conf["insufficient_confidence"] is False


async def test_post_snippet_of_a_long_passage(http: httpx.AsyncClient) -> None:
    body = (await http.post("/api/search", json={"query": "baking powder cakes", "top_k": 1})).json()
    top = body["chunks"][0]
    assert top["filename"] == "baking.txt" and len(top["content"]) > 200
    assert top["snippet"].endswith("…") and len(top["snippet"]) <= 201
    assert top["content"].startswith(top["snippet"][:-1])
    assert top["content"][len(top["snippet"]) - 1] == " "  # cut at a word boundary


async def test_post_filters(http: httpx.AsyncClient, corpus: Corpus) -> None:
    q = "rise"
    only = await http.post("/api/search", json={"query": q, "filters": {"document_ids": [str(corpus["tides.txt"])]}})
    assert {c["filename"] for c in only.json()["chunks"]} == {"tides.txt"}
    for meta in ({"team": "geo"}, {"team": ["geo"]}, {"team": ["geo", "geo"]}):
        geo = await http.post("/api/search", json={"query": q, "filters": {"metadata": meta}})
        assert geo.status_code == 200, geo.text
        assert {c["filename"] for c in geo.json()["chunks"]} == {"volcano.txt", "tides.txt"}
    both = await http.post("/api/search", json={"query": q, "filters": {"metadata": {"team": ["geo", "food"]}}})
    assert both.status_code == 200 and len({c["filename"] for c in both.json()["chunks"]}) == 4  # OR within a key
    # a document's id is no collection: 404, as every unknown or unreadable id (test_unreadable_ids.py)
    none = await http.post("/api/search", json={"query": q, "filters": {"collection_ids": [str(corpus["bread.txt"])]}})
    assert none.status_code == 404 and none.json()["extra"] == {"kind": "collection", "ids": [str(corpus["bread.txt"])]}


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"query": "a", "unknown": 1}, "unknown"),
        ({"query": "a", "filters": {"document_ids": [], "tags": ["x"]}}, "tags"),
        ({"query": 42}, "query"),
        ({"query": ["a"]}, "query"),
        ({"query": "a", "top_k": "many"}, "top_k"),
        ({"query": "a", "top_k": 0}, "top_k"),
        ({"query": "a", "top_k": 101}, "top_k"),
        ({"query": "a", "rerank": "yes"}, "rerank"),
        ({"query": "a", "filters": {"document_ids": ["not-a-uuid"]}}, "document_ids"),
        ({"query": "a", "filters": {"metadata": {"team": {"nested": "x"}}}}, "metadata"),
        ({"query": "a", "filters": {"metadata": {"team": []}}}, "metadata"),
        ({"query": "a", "filters": {"metadata": {"team": 3}}}, "metadata"),
        ({"query": "a", "filters": {"location": {"galaxy": "x"}}}, "galaxy"),
        ({"query": "a", "mode": "psychic"}, "psychic"),
        ({"query": "a\x00b"}, "NUL"),
        ({"query": "x" * (MAX_SEARCH_QUERY_CHARS + 1)}, "too long"),
        ({}, "query"),
        ([], ""),
        ("just a string", ""),
    ],
)
async def test_post_hostile_bodies_are_400(http: httpx.AsyncClient, body: Any, needle: str) -> None:
    response = await http.post("/api/search", json=body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert set(error) >= {"code", "detail"} or set(error) >= {"status_code", "detail"}, error
    assert needle.lower() in response.text.lower()


async def test_get_rejects_the_same_queries(http: httpx.AsyncClient) -> None:
    nul = await http.get("/api/search?q=a%00b")
    assert nul.status_code == 400 and "NUL" in nul.text
    long = await http.get("/api/search", params={"q": "x" * (MAX_SEARCH_QUERY_CHARS + 1)})
    assert long.status_code == 400 and "too long" in long.text


async def test_post_huge_and_deep_bodies_fail_fast(http: httpx.AsyncClient) -> None:
    start = time.perf_counter()
    huge = await http.post(
        "/api/search",
        content=b'{"query": "' + b"x" * (SEARCH_BODY_BYTES + 10) + b'"}',
        headers={"content-type": "application/json"},
    )
    assert huge.status_code == 413, huge.text
    deep = await http.post(
        "/api/search",
        content=b'{"query": "a", "filters": ' + b'{"metadata": ' * 10_000 + b"1" + b"}" * 10_001,
        headers={"content-type": "application/json"},
    )
    assert deep.status_code == 400, deep.text
    many_ids = {"query": "a", "filters": {"document_ids": ["00000000-0000-0000-0000-000000000000"] * 5000}}
    too_many = await http.post("/api/search", json=many_ids)
    assert too_many.status_code in (400, 413), too_many.text
    broken = await http.post("/api/search", content=b'{"query": ', headers={"content-type": "application/json"})
    assert broken.status_code == 400
    assert time.perf_counter() - start < 10
    ok = await http.post("/api/search", json={"query": "volcano lava"})
    assert ok.status_code == 200 and ok.json()["chunks"][0]["filename"] == "volcano.txt"


async def test_post_off_topic_question_is_insufficient(http: httpx.AsyncClient) -> None:
    body = (await http.post("/api/search", json={"query": "quarterly vacation days policy for employees"})).json()
    conf = body["confidence"]
    assert conf["label"] == "insufficient" and conf["insufficient"] and conf["insufficient_confidence"]
    assert conf["message"] == INSUFFICIENT_MESSAGE
    assert conf["text"] == f"Insufficient confidence ({conf['percent']}%)"


# ---- pieces ----------------------------------------------------------------------------------------------
def test_snippet_cuts_at_a_word_boundary() -> None:
    assert snippet_of("  short\n\ntext  ") == "short text"
    words = "alpha beta gamma delta " * 20
    out = snippet_of(words)
    assert out.endswith("…") and len(out) <= 201 and not out[:-1].endswith(" ")
    assert words.startswith(out[:-1]) and out[:-1].split()[-1] in {"alpha", "beta", "gamma", "delta"}
    exact = "a" * 199 + " bcd"
    assert snippet_of(exact) == "a" * 199 + "…"
    assert snippet_of("x" * 500) == "x" * 200 + "…"  # one endless word: cut where it must be
    assert snippet_of("word " * 40) == ("word " * 40).strip()  # exactly 199 characters: whole


def test_citation_parts() -> None:
    assert citation_of("Handbook", "Holidays", 3, None) == "Based on *Handbook*, *Holidays*, page *3*"
    assert citation_of("Handbook", None, 3, None) == "Based on *Handbook*, page *3*"
    assert citation_of("Handbook", "  ", None, None) == "Based on *Handbook*"
    slides = Location(slide=4)
    assert citation_of("Deck", "Intro", None, slides) == "Based on *Deck*, *Slide 4*"
    assert citation_of("Book", None, None, Location(chapter="The Sea")) == "Based on *Book*, *Chapter: The Sea*"
    assert citation_of("Talk", None, None, Location()) == "Based on *Talk*"  # empty label: no part
    assert citation_of("a*b", None, None, None) == "Based on *a\\*b*"
    assert citation_of("", None, None, None) == ""


@pytest.mark.parametrize(
    ("best", "label", "percent"),
    [
        (0.9, "high", 90),
        (0.55, "high", 55),
        (0.549, "moderate", 55),
        (0.40, "moderate", 40),
        (0.30, "low", 30),
        (0.25, "low", 25),
        (0.2, "insufficient", 20),
        (None, "insufficient", 0),
        (-0.1, "insufficient", 0),
        (1.2, "high", 100),
    ],
)
def test_confidence_tiers(best: float | None, label: str, percent: int) -> None:
    conf = confidence_of(best, high=0.55, moderate=0.40, floor=0.25)
    assert conf.label == label and conf.percent == percent
    assert conf.insufficient == conf.insufficient_confidence == (label == "insufficient")
    assert conf.text == f"{label.capitalize()} confidence ({percent}%)"
    assert (conf.message == INSUFFICIENT_MESSAGE) == (label == "insufficient")
    assert (conf.message is None) == (label in ("high", "moderate"))


def test_confidence_tiers_follow_the_settings(settings: Settings) -> None:
    tuned = settings.model_copy(update={"confidence_high": 0.8, "confidence_moderate": 0.6, "confidence_floor": 0.5})
    searcher = Searcher(None, None, tuned.retrieval)  # type: ignore[arg-type]  # confidence needs neither pool nor spaces
    hit = ChunkHit(id=1, document_id=uuid.uuid4(), filename="a.txt", title="a", chunk_index=0, content="a", score=0.9)
    assert searcher.confidence([]).label == "insufficient"
    assert searcher.confidence([hit.model_copy(update={"similarity": 0.7})]).label == "moderate"
    assert searcher.confidence([hit.model_copy(update={"similarity": 0.45})]).label == "insufficient"
    assert searcher.confidence([hit, hit.model_copy(update={"similarity": 0.81})]).text == "High confidence (81%)"


async def test_cli_prints_confidence_text_warning_and_citation(
    http: httpx.AsyncClient, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragchat.cli.search import print_results

    api = (await http.post("/api/search", json={"query": "volcano lava crater", "top_k": 2})).json()
    api["rerank"] = {"requested": True, "status": "failed", "scored": 0, "candidates": 6, "warning": "Rerank failed: x"}
    print_results(api, as_json=False)
    out = capsys.readouterr().out
    assert api["confidence"]["text"] in out and "Rerank failed: x" in out
    assert out.count("Based on *") == 2 and api["chunks"][0]["citation"] in out


def test_a_confidence_stored_before_the_tiers_still_reads() -> None:
    """Chat history keeps each tool result's confidence as it was: the old three fields still validate."""
    from ragchat.chat.schemas import ToolResult

    old = {"label": "low", "best_similarity": 0.2, "insufficient_confidence": True}
    stored = {"id": "c1", "name": "search_documents", "chunks": [], "search_mode": "hybrid", "reranked": False}
    result = ToolResult.model_validate({**stored, "timings": {}, "confidence": old})
    assert result.confidence.label == "insufficient" and result.confidence.insufficient
    assert result.confidence.text == "Insufficient confidence (20%)" and result.rerank is None
    older = {"label": "high", "best_similarity": 0.71, "insufficient_confidence": False}
    fine = ToolResult.model_validate({**stored, "timings": {}, "confidence": older}).confidence
    assert (fine.label, fine.percent, fine.text) == ("high", 71, "High confidence (71%)")
    assert type(fine).model_validate(fine.model_dump()) == fine
