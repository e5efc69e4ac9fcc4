"""Ingestion on the real Postgres with the real embedding model: formats, duplicates, re-ingestion, bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from ragchat.documents.catalog import chunk_store
from ragchat.documents.ingest import queue
from ragchat.documents.ingest.registration import register_bytes, register_paths
from ragchat.settings import Settings
from ragchat.vectors.store import create_space
from tests.support.services import LOCAL_OWNER_ID, make_pipeline


def make_pdf(pages: list[str]) -> bytes:
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=letter)
    for text in pages:
        y = 740
        for line in text.split("\n"):
            pdf.drawString(72, y, line)
            y -= 14
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def make_image_only_pdf() -> bytes:
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf)
    pdf.rect(100, 100, 300, 300, fill=1)
    pdf.showPage()
    pdf.save()
    return buf.getvalue()


def make_encrypted_pdf() -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(make_pdf(["Secret plans for the heist."]))).pages:
        writer.add_page(page)
    writer.encrypt("secret")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def make_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Field Manual", level=1)
    document.add_paragraph("Calibrate the spectrometer before each measurement run.")
    document.add_heading("Maintenance", level=2)
    document.add_paragraph("Replace the xenon lamp every 2000 hours of operation.")
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def rows(uri: str, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    with psycopg.connect(uri, row_factory=dict_row) as conn:
        register_vector(conn)
        return conn.execute(sql, params).fetchall()


def counts(uri: str) -> dict[str, int]:
    return {
        t: rows(uri, f"SELECT count(*) AS n FROM {t}")[0]["n"]
        for t in ("documents", "document_chunks", "document_blobs")
    }


async def ingest(pool: Any, embedder: Any, settings: Settings, paths: list[Path], **kw: Any) -> tuple[list[Any], Any]:
    registered = await register_paths(pool, LOCAL_OWNER_ID, paths, settings.ingestion, **kw)
    ids = [r.document_id for r in registered if r.status in ("queued", "requeued")]
    progress = await make_pipeline(pool, embedder, settings).run(ids)
    return registered, progress


async def test_every_format_becomes_ready_with_pages_and_headings(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("Plain text about sourdough starters and hydration.")
    (tmp_path / "guide.md").write_text("# Guide\n\nIntro.\n\n## Install\n\nRun the installer with admin rights.\n")
    (tmp_path / "page.html").write_text(
        "<html><head><title>Cats</title><script>alert(1)</script></head>"
        "<body><h1>Cats</h1><p>Cats sleep sixteen hours a day.</p></body></html>"
    )
    (tmp_path / "paper.pdf").write_bytes(make_pdf(["Page one is about glaciers.", "Page two is about volcanoes."]))
    (tmp_path / "manual.docx").write_bytes(make_docx())

    registered, progress = await ingest(pool, embedder, settings, [tmp_path])
    assert sorted(r.status for r in registered) == ["queued"] * 5
    assert progress.documents_done == 5 and progress.documents_failed == 0

    docs = {r["filename"]: r for r in rows(db, "SELECT * FROM documents")}
    assert {d["status"] for d in docs.values()} == {"ready"}
    assert docs["paper.pdf"]["page_count"] == 2
    assert docs["page.html"]["title"] == "Cats"
    chunks = rows(
        db,
        "SELECT d.filename, c.page, c.section, c.content, e.embedding, s.model AS embedding_model, s.dim, "
        "c.token_count "
        "FROM document_chunks c JOIN documents d ON d.id = c.document_id "
        "JOIN chunk_embeddings e ON e.chunk_id = c.id JOIN embedding_spaces s ON s.id = e.space_id "
        "WHERE s.state = 'active' ORDER BY d.filename, c.chunk_index",
    )
    pdf_pages = [(c["page"], c["content"]) for c in chunks if c["filename"] == "paper.pdf"]
    assert pdf_pages == [(1, "Page one is about glaciers."), (2, "Page two is about volcanoes.")]
    assert any(c["section"] == "Guide > Install" for c in chunks if c["filename"] == "guide.md")
    assert any(c["section"] == "Field Manual > Maintenance" for c in chunks if c["filename"] == "manual.docx")
    assert not any("alert" in c["content"] for c in chunks)
    for c in chunks:
        vec = c["embedding"].to_numpy()
        assert vec.shape == (384,) and c["dim"] == 384 and abs(np.linalg.norm(vec) - 1) < 1e-3
        assert c["embedding_model"] == "all-MiniLM-L6-v2" and 0 < c["token_count"] <= settings.ingestion.chunk_tokens


async def test_reingesting_the_same_files_adds_nothing(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("Alpha document about rivers.")
    await ingest(pool, embedder, settings, [tmp_path])
    before = counts(db)
    registered, progress = await ingest(pool, embedder, settings, [tmp_path])
    assert [r.status for r in registered] == ["duplicate"]
    assert progress.documents_done == 0
    assert counts(db) == before


async def test_changed_file_replaces_old_version_and_reuses_unchanged_embeddings(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    paragraphs = [f"Paragraph {i} explains topic number {i} in some detail." for i in range(12)]
    path = tmp_path / "doc.md"
    path.write_text("\n\n".join(paragraphs))
    small = settings.model_copy(update={"chunk_tokens": 24, "chunk_overlap": 0})
    _, first = await ingest(pool, embedder, small, [path])
    assert first.chunks_embedded == first.chunks_done > 3

    path.write_text("\n\n".join([*paragraphs[:-1], "A brand new closing paragraph about something else."]))
    _, second = await ingest(pool, embedder, small, [path])
    assert second.documents_done == 1
    assert second.chunks_reused >= first.chunks_done - 2  # only the changed tail is embedded again
    assert second.chunks_embedded <= 2
    docs = rows(db, "SELECT status FROM documents")
    assert docs == [{"status": "ready"}]  # the old version was replaced, not duplicated


@pytest.mark.parametrize(
    ("name", "payload", "reason"),
    [
        ("garbage.pdf", b"\x00\x01garbage" * 200, "not a valid PDF"),
        ("scan.pdf", "image_only", "no extractable text"),
        ("locked.pdf", "encrypted", "encrypted"),
        ("broken.docx", b"PK\x03\x04 not really a zip", "DOCX"),
        ("blank.txt", b"   \n\n\t  \n", "no text"),
        ("binary.txt", bytes(range(256)) * 20, "text"),
    ],
)
async def test_bad_files_fail_with_a_reason_and_leave_only_their_row(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path, name: str, payload: Any, reason: str
) -> None:
    data = {"image_only": make_image_only_pdf, "encrypted": make_encrypted_pdf}.get(payload, lambda: payload)()
    (tmp_path / "good.txt").write_text("A healthy document about tides.")
    (tmp_path / name).write_bytes(data)
    _, progress = await ingest(pool, embedder, settings, [tmp_path])
    assert progress.documents_done == 1 and progress.documents_failed == 1
    bad = rows(db, "SELECT * FROM documents WHERE filename = %s", (name,))[0]
    assert bad["status"] == "failed" and reason.lower() in bad["error"].lower()
    assert rows(db, "SELECT count(*) AS n FROM document_chunks WHERE document_id = %s", (bad["id"],))[0]["n"] == 0


async def test_rejected_before_storage_leave_the_database_unchanged(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "huge.txt").write_bytes(b"a" * (2 * 1024 * 1024))
    (tmp_path / "image.gif").write_bytes(b"GIF89a")
    limited = settings.model_copy(update={"max_upload_mb": 1})
    registered, _ = await ingest(pool, embedder, limited, [tmp_path])
    errors = {Path(r.filename).name: r.error for r in registered}
    assert all(r.status == "rejected" for r in registered)
    assert "empty" in errors["empty.txt"]
    assert "MAX_UPLOAD_MB" in errors["huge.txt"]
    assert "unsupported" in errors["image.gif"]
    assert counts(db) == {"documents": 0, "document_chunks": 0, "document_blobs": 0}


async def test_non_utf8_text_is_decoded(pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("Le café de la gare est fermé le dimanche à Noël.".encode("latin-1"))
    _, progress = await ingest(pool, embedder, settings, [tmp_path])
    assert progress.documents_done == 1
    content = rows(db, "SELECT content FROM document_chunks")[0]["content"]
    assert "café" in content and "Noël" in content


async def test_a_folder_of_200_small_files(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    for i in range(200):
        sub = tmp_path / f"dir{i % 4}"
        sub.mkdir(exist_ok=True)
        (sub / f"note{i}.txt").write_text(f"Note {i}: the meeting about project {i} moved to room {i % 7}.")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "skip.txt").write_text("hidden")
    _, progress = await ingest(pool, embedder, settings, [tmp_path])
    assert progress.documents_done == 200 and progress.documents_failed == 0
    assert counts(db)["document_chunks"] == 200


async def test_beir_jsonl_becomes_one_document_per_record(
    pool: Any, embedder: Any, settings: Settings, db: str
) -> None:
    lines = [json.dumps({"_id": f"d{i}", "title": f"Title {i}", "text": f"Abstract number {i}."}) for i in range(5)]
    registered = await register_bytes(
        pool, LOCAL_OWNER_ID, "corpus.jsonl", "\n".join(lines).encode(), settings.ingestion
    )
    assert [r.status for r in registered] == ["queued"] * 5
    await make_pipeline(pool, embedder, settings).run()
    docs = rows(db, "SELECT title, metadata->>'source_id' AS sid, status FROM documents ORDER BY title")
    assert [(d["title"], d["sid"], d["status"]) for d in docs] == [(f"Title {i}", f"d{i}", "ready") for i in range(5)]


async def test_store_is_atomic(pool: Any, db: str) -> None:
    """A failure while writing chunks leaves no chunk of the document behind and the document not ready."""
    registered = await register_bytes(pool, LOCAL_OWNER_ID, "a.txt", b"some text", Settings(_env_file=None).ingestion)  # type: ignore[call-arg]
    doc_id = registered[0].document_id
    good = chunk_store.StoredChunk(0, "ok", None, None, 1, "h0", np.ones(384, dtype=np.float32) / np.sqrt(384))
    bad = chunk_store.StoredChunk(1, "bad", None, None, 1, "h1", np.ones(10, dtype=np.float32))
    async with pool.connection() as conn, conn.transaction():
        space = await create_space(conn, "sentence-transformers", "all-MiniLM-L6-v2", 384, "active")
    with pytest.raises(ValueError, match="10-dimension"):
        async with pool.connection() as conn, conn.transaction():
            await chunk_store.store_chunks(
                conn,
                document_id=doc_id,
                owner=LOCAL_OWNER_ID,
                title="a",
                chunks=[good, bad],
                space=space,
                page_count=None,
                metadata={},
                replaces_source=None,
            )
    assert counts(db)["document_chunks"] == 0 and rows(db, "SELECT count(*) AS n FROM chunk_embeddings")[0]["n"] == 0
    assert rows(db, "SELECT status FROM documents")[0]["status"] == "queued"


async def test_two_workers_share_the_queue_without_double_processing(
    pool: Any, embedder: Any, settings: Settings, db: str
) -> None:
    import asyncio

    for i in range(20):
        await register_bytes(pool, LOCAL_OWNER_ID, f"n{i}.txt", f"Shared queue note {i}.".encode(), settings.ingestion)
    a, b = await asyncio.gather(
        make_pipeline(pool, embedder, settings).run(), make_pipeline(pool, embedder, settings).run()
    )
    assert a.documents_done + b.documents_done == 20
    assert counts(db)["document_chunks"] == 20


async def test_claim_takes_queued_and_stale_documents_in_order(pool: Any, settings: Settings) -> None:
    """Queued documents and ones a crashed worker left `processing` are claimed; live locks are not."""
    ids = []
    for name in ("a.txt", "b.txt", "c.txt", "d.txt"):
        [reg] = await register_bytes(pool, LOCAL_OWNER_ID, name, f"text of {name}".encode(), settings.ingestion)
        ids.append(reg.document_id)
    a, b, c, d = ids
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE documents SET status = 'processing', locked_at = now() - interval '1 hour' WHERE id = %s", (a,)
        )
        await conn.execute("UPDATE documents SET status = 'processing', locked_at = now() WHERE id = %s", (b,))
        only = await queue.claim(conn, limit=10, ids=[b, d])  # an explicit list: b is live, d is queued
        assert [r["id"] for r in only] == [d]
        rest = await queue.claim(conn, limit=10, stale_after_s=600)
        assert [r["id"] for r in rest] == [a, c]  # the stale one and the queued one, oldest first
        assert await queue.claim(conn, limit=10) == []
        statuses = await (await conn.execute("SELECT status, attempts FROM documents WHERE id = %s", (a,))).fetchone()
    assert statuses["status"] == "processing" and statuses["attempts"] >= 1
