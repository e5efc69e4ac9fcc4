"""GET /api/suggestions: example questions from the documents the reader chose to ask about (the most-read, then
the largest of their readable ready documents: headings, topics, repeated phrases), never from one-line notes,
none when there is nothing worth asking; without the LLM, deterministic, scoped to what the reader may read, and
bounded (rows read counted on a 10,000-document library)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from ragchat.retrieval import suggestions as sg
from ragchat.retrieval.suggestions import display_title, heading_topic, id_like, pick, suggest, suggest_on
from ragchat.settings import Settings
from tests.fakes.ollama_server import FakeOllama
from tests.support.services import LOCAL_OWNER_ID, ingest_texts, register_many

HANDBOOK = """# Staff Handbook

## 1. Holiday allowance

Every full-time employee gets 25 days of paid holiday per calendar year, plus public holidays. Holiday requests
go to your manager at least two weeks ahead. Up to five unused days carry over to the next year; the rest lapse
at the end of March. Part-time staff get a share of the allowance in proportion to their contracted hours.

## 2. Remote work

You may work from home up to three days a week. Core hours are 10:00 to 15:00, when everyone is reachable by
chat and phone. The office lends a laptop, a screen and a headset; return them when you leave the company.
Working from abroad needs the written approval of human resources because of tax and insurance rules.

## 3. Travel expenses

Travel must be booked through the travel desk. Trains are preferred for trips under four hours. Meals are
reimbursed up to 35 euros a day with receipts, and hotels up to 120 euros a night in most cities. Claims are
filed within a month of the trip, with every receipt scanned and attached to the claim.

## 4. Sick leave

Tell your manager before ten on the first morning you are ill. From the fourth day a doctor's note is needed.
Sick days never count against the holiday allowance, and a holiday interrupted by illness is given back.

## Contents ..... 4

See the sections above.
"""
_VOLCANO_FACTS = [
    "Volcanic eruptions eject magma, ash and gases high into the atmosphere.",
    "Large volcanic eruptions can cool the global climate for several years.",
    "Lava flows from the crater and along the flanks of the mountain.",
    "Shield volcanoes such as those of Hawaii erupt runny basalt lava.",
    "Stratovolcanoes build steep cones from layers of ash and sticky lava.",
    "Pyroclastic flows race downhill at hundreds of kilometres an hour.",
    "Volcanic eruptions are forecast by watching earthquakes, ground swelling and gas output.",
    "Ash clouds ground aircraft because the glassy particles melt inside jet engines.",
]
GUIDE = "\n\n".join(" ".join(_VOLCANO_FACTS[n:] + _VOLCANO_FACTS[:n]) for n in range(14))  # no headings
NOTES = {
    "invoice_56.txt": "Invoice #56: 120 EUR paid to Acme on 3 March.",
    "note_call.txt": "Call the plumber about the kitchen sink.",
    "todo.md": "# Todo\n\nBuy milk.",
}


@pytest.fixture
async def library(pool: Any, embedder: Any, settings: Settings) -> None:
    await ingest_texts(pool, embedder, settings, {"handbook.md": HANDBOOK, "volcano_guide.txt": GUIDE, **NOTES})


async def _document_ids(pool: Any) -> dict[str, uuid.UUID]:
    async with pool.connection() as conn:
        rows = await (await conn.execute("SELECT id, filename FROM documents")).fetchall()
    return {r["filename"]: r["id"] for r in rows}


async def test_questions_come_from_real_documents_never_from_notes(
    library: None, live_app: Callable[..., Any], fake_ollama: FakeOllama
) -> None:
    server = live_app(ollama_host=fake_ollama.url)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        found = (await client.get("/api/suggestions", params={"limit": 12})).json()["questions"]
        texts = [q["text"] for q in found]
        assert "What does “Staff Handbook” say about holiday allowance?" in texts
        assert "What does “Staff Handbook” say about remote work?" in texts
        assert "What does the volcano guide say about volcanic eruptions?" in texts  # a repeated phrase
        assert {q["document_title"] for q in found} == {"Staff Handbook", "volcano guide"}  # no note
        assert {q["document_title"] for q in found[:2]} == {"Staff Handbook", "volcano guide"}  # spread out
        for text in texts:  # natural questions: no file extension, numbering, table of contents or id
            assert text.endswith("?") and text[0].isupper(), text
            assert not any(bad in text for bad in (".md", ".txt", "1.", "#", "Contents", "key points")), text
        assert len(texts) == len(set(texts))
        assert fake_ollama.chat_requests == []  # no LLM call
        assert (await client.get("/api/suggestions", params={"limit": 12})).json()["questions"] == found
        default = (await client.get("/api/suggestions")).json()["questions"]
        assert default == found[:4]
        for bad in ("0", "13", "x"):
            assert (await client.get("/api/suggestions", params={"limit": bad})).status_code == 400


async def test_nothing_to_suggest_from_trivial_notes(
    pool: Any, embedder: Any, settings: Settings, live_app: Callable[..., Any], fake_ollama: FakeOllama
) -> None:
    many = {f"note_{n}.txt": f"Invoice #{n}: {n * 10} EUR paid to Acme." for n in range(30)}
    await ingest_texts(pool, embedder, settings, {**NOTES, **many})
    assert await suggest(pool, LOCAL_OWNER_ID, 12) == []
    server = live_app(ollama_host=fake_ollama.url)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        assert (await client.get("/api/suggestions")).json() == {"questions": []}


async def test_the_largest_documents_first(library: None, pool: Any) -> None:
    async with pool.connection() as conn:
        sizes = {
            r["filename"]: r["chunks_total"]
            for r in await (await conn.execute("SELECT filename, chunks_total FROM documents")).fetchall()
        }
    assert sizes["volcano_guide.txt"] > sizes["handbook.md"]
    found = await suggest(pool, LOCAL_OWNER_ID, 4)
    assert found[0].document_title == "volcano guide"  # the largest first


async def test_only_readable_ready_documents(library: None, pool: Any) -> None:
    assert await suggest(pool, uuid.uuid4()) == []  # someone who can read nothing
    await register_many(pool, {"queued_handbook.md": HANDBOOK.replace("Staff", "Queued").encode()}, status="queued")
    found = await suggest(pool, LOCAL_OWNER_ID, 12)
    assert found and "queued handbook" not in {s.document_title for s in found}

    reader = uuid.uuid4()  # another user the handbook (only) is shared with, through a collection
    handbook = (await _document_ids(pool))["handbook.md"]
    async with pool.connection() as conn:
        await conn.execute("INSERT INTO users (id, name) VALUES (%s, 'reader')", (reader,))
        row = await (
            await conn.execute(
                "INSERT INTO collections (owner_id, name) VALUES (%s, 'shared') RETURNING id", (LOCAL_OWNER_ID,)
            )
        ).fetchone()
        await conn.execute(
            "INSERT INTO collection_members (collection_id, user_id, role) VALUES (%s, %s, 'owner'), (%s, %s, 'read')",
            (row["id"], LOCAL_OWNER_ID, row["id"], reader),
        )
        await conn.execute(
            "INSERT INTO document_collections (collection_id, document_id) VALUES (%s, %s)", (row["id"], handbook)
        )
    shared = await suggest(pool, reader, 12)
    assert shared and {s.document_id for s in shared} == {handbook}


async def _table_reads(conn: Any) -> dict[str, tuple[int, int]]:
    """(sequential scans, rows read) per table so far in this transaction."""
    rows = await (
        await conn.execute(
            """SELECT relname, seq_scan, seq_tup_read + coalesce(idx_tup_fetch, 0) AS rows
               FROM pg_stat_xact_user_tables
               WHERE relname IN ('documents', 'document_chunks')"""
        )
    ).fetchall()
    return {r["relname"]: (int(r["seq_scan"]), int(r["rows"])) for r in rows}


async def test_bounded_at_ten_thousand_documents(library: None, pool: Any) -> None:
    """10,000 one-line notes beside the handbook: the handbook is found, no note is, and the rows read stay within
    the windows' bounds (counted by Postgres, not timed)."""
    handbook = (await _document_ids(pool))["handbook.md"]
    async with pool.connection() as conn:
        await conn.execute(
            """INSERT INTO documents (owner_id, filename, title, content_type, byte_size, sha256, status,
                                      chunks_total, created_at)
               SELECT %(uid)s, 'note_' || n || '.txt', 'Note ' || n, 'text/plain', 40, md5('note' || n), 'ready', 1,
                      now() - make_interval(secs => n)
               FROM generate_series(1, 10000) AS n""",
            {"uid": LOCAL_OWNER_ID},
        )
        await conn.execute(
            """INSERT INTO document_chunks (document_id, owner_id, chunk_index, title, content, token_count,
                                            content_hash)
               SELECT d.id, d.owner_id, 0, d.title, d.title || ': call the plumber.', 8, md5(d.id::text)
               FROM documents d WHERE d.filename ~ '^note_[0-9]+[.]txt$'"""
        )
        await conn.execute("ANALYZE documents")
        await conn.execute("ANALYZE document_chunks")

    async with pool.connection() as conn, conn.transaction():
        before = await _table_reads(conn)
        started = time.perf_counter()
        found = await suggest_on(conn, LOCAL_OWNER_ID, 12)
        elapsed = time.perf_counter() - started
        after = await _table_reads(conn)
    reads = {t: (after[t][0] - before.get(t, (0, 0))[0], after[t][1] - before.get(t, (0, 0))[1]) for t in after}
    print(f"suggestions over 10,000+ documents: {elapsed * 1000:.0f} ms; (seq scans, rows read): {reads}")

    assert found and handbook in {s.document_id for s in found}
    assert not [s for s in found if s.document_title.startswith("Note ")]  # no note, however many
    assert reads["documents"][0] == 0  # no sequential scan of documents
    # the size window and the candidates' own rows; nowhere near the 10,006 documents
    assert reads["documents"][1] <= sg.SIZE_WINDOW + 2 * sg.LARGEST_DOCS, reads
    chunk_bound = sg.LARGEST_DOCS * sg.FLOOR_CHUNKS + sg.MAX_LIMIT * (sg.HEADING_CHUNKS + sg.PHRASE_CHUNKS)
    assert reads["document_chunks"][0] == 0 and reads["document_chunks"][1] <= chunk_bound, reads


def test_titles_and_headings() -> None:
    assert display_title("employee_handbook.pdf", "employee_handbook.pdf") == "employee handbook"
    assert display_title("Employee Handbook", "handbook.pdf") == "Employee Handbook"
    assert display_title("Microsoft Word - Budget 2024.docx", "b.docx") == "Budget 2024"
    assert display_title("03 Annual report", "r.pdf") == "Annual report"
    assert display_title("2024 Annual report", "r.pdf") == "2024 Annual report"
    assert heading_topic("Handbook > 2.1 Paid leave", "Handbook") == "Paid leave"
    assert heading_topic("Chapter 3: Sick leave", "Handbook") == "Sick leave"
    assert heading_topic("Sick leave ........ 12", "Handbook") == "Sick leave"
    for none in ("Page 3", "12", "Introduction", "Table of contents", "INV-2024-0056"):
        assert heading_topic(none, "x") is None, none
    assert heading_topic("Handbook", "handbook") is None


def test_questions_read_naturally() -> None:
    doc = uuid.uuid4()
    found = pick(
        [{"id": doc, "title": "Staff Handbook", "filename": "h.md", "topics": ["pension plan", 7, ""]}],
        [
            {"document_id": doc, "section": "Staff Handbook > How do I request leave?"},
            {"document_id": doc, "section": "Staff Handbook > Paid Holidays"},
            {"document_id": doc, "section": "Staff Handbook > GDPR rules"},
        ],
        [{"document_id": doc, "phrase": "staff handbook"}],  # the title again: not a topic
        12,
    )
    assert [s.text for s in found] == [
        "How do I request leave?",
        "What does “Staff Handbook” say about Paid Holidays?",
        "What does “Staff Handbook” say about GDPR rules?",
        "What does “Staff Handbook” say about pension plan?",
        "What is “Staff Handbook” about?",
    ]


@pytest.mark.parametrize(
    "name", ["scifact-991139", "doc_00042", "3f2a9c1e-77b0-4d1e-9a53-0c1d2e3f4a5b", "12345", "--", "Invoice #56"]
)
def test_id_like_names_are_never_asked_about(name: str) -> None:
    assert id_like(display_title(name, name + ".txt"))
    doc = uuid.uuid4()
    found = pick(
        [{"id": doc, "title": name, "filename": name + ".txt"}],
        [{"document_id": doc, "section": "Results"}],
        [{"document_id": doc, "phrase": "eruption forecasts"}],
        12,
    )
    assert [s.text for s in found] == [
        "What do my documents say about results?",
        "What do my documents say about eruption forecasts?",
    ]


@pytest.mark.parametrize("name", ["Employee handbook", "q3-budget", "Annual report 2024", "volcano_notes"])
def test_names_people_use_are_kept(name: str) -> None:
    assert not id_like(display_title(name, name + ".pdf"))
