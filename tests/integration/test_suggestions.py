"""GET /api/suggestions: example questions from the reader's own ready documents (headings, repeated phrases,
titles), without the LLM: deterministic, bounded, spread over documents, scoped to what the reader may read,
and fast on a library of hundreds of documents."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from ragchat.retrieval.suggestions import display_title, heading_topic, id_like, pick, suggest
from ragchat.settings import Settings
from tests.fakes.ollama_server import FakeOllama
from tests.support.services import LOCAL_OWNER_ID, ingest_texts, register_many

HANDBOOK = """# Employee Handbook

## Paid holidays

Every employee gets 25 days of paid holiday per calendar year. Paid holiday requests go to your manager.

## Remote work

Remote work is allowed two days a week. Remote work equipment is provided by the office.
"""
VOLCANO = (
    "Volcanic eruptions eject magma, ash and gases. Large volcanic eruptions cool the climate for years. "
    "Lava flows from the crater."
)


@pytest.fixture
async def library(pool: Any, embedder: Any, settings: Settings) -> None:
    await ingest_texts(pool, embedder, settings, {"handbook.md": HANDBOOK, "volcano_notes.txt": VOLCANO})


async def test_questions_come_from_the_documents(
    library: None, live_app: Callable[..., Any], fake_ollama: FakeOllama
) -> None:
    server = live_app(ollama_host=fake_ollama.url)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        first = (await client.get("/api/suggestions", params={"limit": 6})).json()["questions"]
        texts = [q["text"] for q in first]
        assert "What does Employee Handbook say about Paid holidays?" in texts
        assert "What does Employee Handbook say about Remote work?" in texts
        assert "What is meant by “volcanic eruptions” in volcano notes?" in texts  # a repeated phrase
        assert len(texts) == len(set(texts)) <= 6 and all(t.endswith("?") for t in texts)
        assert {q["document_title"] for q in first[:2]} == {"Employee Handbook", "volcano notes"}  # spread out
        assert fake_ollama.chat_requests == []  # no LLM call
        assert (await client.get("/api/suggestions", params={"limit": 6})).json()["questions"] == first
        default = (await client.get("/api/suggestions")).json()["questions"]
        assert default == first[:4]
        for bad in ("0", "13", "x"):
            assert (await client.get("/api/suggestions", params={"limit": bad})).status_code == 400


async def test_only_readable_ready_documents(library: None, pool: Any) -> None:
    assert await suggest(pool, uuid.uuid4()) == []  # someone who can read nothing
    await register_many(pool, {"queued_only.txt": b"Queued text"}, status="queued")
    found = await suggest(pool, LOCAL_OWNER_ID, 12)
    assert found and "queued only" not in {s.document_title for s in found}


async def test_fast_on_hundreds_of_documents(pool: Any) -> None:
    files = {f"report_{i:03d}.md": f"Report {i}".encode() for i in range(320)}
    ids = await register_many(pool, files, status="ready")
    async with pool.connection() as conn:  # three chunks each, with headings and repeated phrases
        await conn.execute(
            """INSERT INTO document_chunks
                   (document_id, owner_id, chunk_index, title, content, section, token_count, content_hash)
               SELECT d.id, d.owner_id, n, d.title,
                      repeat('Quarterly revenue grew while operating costs fell. ', 8) || d.title,
                      'Results > Section ' || n || ' Revenue', 60, md5(d.id::text || n)
               FROM documents d CROSS JOIN generate_series(0, 2) AS n WHERE d.id = ANY(%s)""",
            (ids,),
        )
    await suggest(pool, LOCAL_OWNER_ID, 12)  # warm
    started = time.perf_counter()
    found = await suggest(pool, LOCAL_OWNER_ID, 12)
    elapsed = time.perf_counter() - started
    assert len(found) == 12 and len({s.document_id for s in found}) == 12
    assert elapsed < 1.0, elapsed
    print(f"suggestions over {len(ids)} documents: {elapsed * 1000:.0f} ms")


def test_titles_and_headings() -> None:
    assert display_title("employee_handbook.pdf", "employee_handbook.pdf") == "employee handbook"
    assert display_title("Employee Handbook", "handbook.pdf") == "Employee Handbook"
    assert heading_topic("Handbook > 2.1 Paid leave", "Handbook") == "Paid leave"
    assert heading_topic("Page 3", "x") is None and heading_topic("12", "x") is None
    assert heading_topic("Handbook", "handbook") is None


@pytest.mark.parametrize("name", ["scifact-991139", "doc_00042", "3f2a9c1e-77b0-4d1e-9a53-0c1d2e3f4a5b", "12345", "--"])
def test_id_like_names_are_never_asked_about(name: str) -> None:
    assert id_like(display_title(name, name + ".txt"))
    doc = uuid.uuid4()
    found = pick(
        [{"id": doc, "title": name, "filename": name + ".txt"}],
        [{"document_id": doc, "section": "Results"}],
        [{"document_id": doc, "phrase": "among egyptian"}],
        12,
    )
    assert [s.text for s in found] == ["What do my documents say about Results?", "What is meant by “among egyptian”?"]


@pytest.mark.parametrize("name", ["Employee handbook", "q3-budget", "Annual report 2024", "volcano_notes"])
def test_names_people_use_are_kept(name: str) -> None:
    assert not id_like(display_title(name, name + ".pdf"))
