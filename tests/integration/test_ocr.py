"""OCR end to end over real HTTP: a scanned PDF (a text page, a scanned page, a page of noise) and a photo of
a page uploaded through the API are read by the real OCR engine in the ingestion worker, searched, and cited
by a chat answer at the right page (fake LLM); hostile images fail alone with a clear reason, in bounded time.

Pages are drawn here (tests/support/scans.py), small, so the real OCR stays a few seconds a page.
"""

from __future__ import annotations

import asyncio
import io
import struct
import time
import zipfile
import zlib
from collections.abc import Callable
from typing import Any

import httpx

from tests.fakes.ollama_server import Reply
from tests.fakes.plugin import LLMFake
from tests.support import scans
from tests.support.chat import chat, first, text_of

FENDER = ["Fender replacement at the northern quay", "Budget approved: 48,000 EUR in March"]
PHOTO = ["Lighthouse keeper rota for August", "Night watch: Marguerite and Tobias"]


async def _upload(client: httpx.AsyncClient, name: str, data: bytes) -> dict[str, Any]:
    response = await client.post("/api/documents", files=[("files", (name, data, "application/octet-stream"))])
    assert response.status_code in (201, 400, 415), response.text
    return response.json()


async def _settled(client: httpx.AsyncClient, doc_id: str, within_s: float = 240) -> tuple[dict[str, Any], set[str]]:
    """The document once ready or failed, and the progress notes seen on the way."""
    notes: set[str] = set()
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        doc = (await client.get(f"/api/documents/{doc_id}")).json()
        if doc.get("progress_note"):
            notes.add(doc["progress_note"])
        if doc["status"] in ("ready", "failed"):
            return doc, notes
        await asyncio.sleep(0.1)
    raise AssertionError(f"document {doc_id} not done within {within_s} s")


async def test_scanned_pdf_and_photo_are_searchable_and_cited_at_their_page(
    start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(ingest_workers=1)
    pdf = scans.scanned_pdf(
        [
            "Harbour minutes, spring session.\nThe committee met on the first of April and read the agenda.",
            scans.text_page(FENDER, size=30, angle=1.5, noise=0.01, width=900),
            scans.noise_page(500, 400),
        ]
    )
    photo = scans.encoded(scans.text_page(PHOTO, size=30, angle=-2, width=800, font_name=scans.FONTS[1]), "JPEG")
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        pdf_id = (await _upload(client, "minutes.pdf", pdf))["results"][0]["document"]["id"]
        photo_id = (await _upload(client, "rota.jpg", photo))["results"][0]["document"]["id"]
        doc, notes = await _settled(client, pdf_id)
        assert doc["status"] == "ready", doc["error"]
        assert doc["page_count"] == 3
        # pages 2 and 3 had no text layer: OCR'd; the noise page skipped and said so, not an error
        assert doc["metadata"]["ocr"].startswith("OCR read 1 of 2 pages"), doc["metadata"]
        assert "page 3: no text found (skipped)" in doc["metadata"]["ocr"]
        assert notes and notes <= {"OCR page 1 of 2", "OCR page 2 of 2"}  # seen while it was read
        chunks = (await client.get(f"/api/documents/{pdf_id}/chunks")).json()["chunks"]
        by_page = {c["page"]: c for c in chunks}
        assert set(by_page) == {1, 2}
        assert "committee met" in by_page[1]["content"] and by_page[1].get("location") is None  # kept as it was
        assert "48,000" in by_page[2]["content"] and "northern quay" in by_page[2]["content"].lower()
        confidence = by_page[2]["location"]["ocr_confidence"]
        assert 0.8 < confidence <= 1.0
        assert by_page[2]["location"]["label"] == f"OCR {confidence:.0%} confidence"

        photo_doc, _ = await _settled(client, photo_id)
        assert photo_doc["status"] == "ready", photo_doc["error"]
        assert photo_doc["content_type"] == "image/jpeg" and photo_doc["page_count"] == 1

        found = (await client.get("/api/search", params={"q": "lighthouse keeper night watch", "limit": 3})).json()
        top = found["chunks"][0]
        assert top["filename"] == "rota.jpg" and top["page"] == 1 and "Marguerite" in top["content"]
        found = (await client.get("/api/search", params={"q": "fender replacement budget", "limit": 3})).json()
        assert (found["chunks"][0]["filename"], found["chunks"][0]["page"]) == ("minutes.pdf", 2)

    llm.fake.enqueue(
        Reply.tool_call("search_documents", {"query": "fender replacement budget"}),
        Reply.text("The fender replacement budget is 48,000 EUR [1]."),
    )
    events = await chat(server.url, {"message": "What budget was approved for the fenders?", "document_ids": [pdf_id]})
    cited = first(events, "tool_result")["chunks"][0]
    assert (cited["filename"], cited["page"]) == ("minutes.pdf", 2)
    assert cited["location"]["ocr_confidence"] == confidence
    assert text_of(events) == "The fender replacement budget is 48,000 EUR [1]."
    assert first(events, "citations")["citations"][0]["verdict"] == "supported"


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares width × height pixels and holds one row: tiny on disk, huge if decoded."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")
    )


async def test_hostile_images_fail_alone_with_a_reason_in_bounded_time(start: Callable[..., Any]) -> None:
    server = start(ingest_workers=1)
    png = scans.png(scans.text_page(PHOTO, size=30, width=800))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("word/document.xml", "<w:document/>")
    files = {
        "huge.png": _png_header_only(20_000, 20_000),
        "corrupt.png": png[: len(png) // 3],
        "archive.png": buf.getvalue(),
        "noise.png": scans.png(scans.noise_page(400, 300)),
        "garbage.tiff": b"II*\x00" + bytes(range(256)) * 4,
    }
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        ids = {
            name: (await _upload(client, name, data))["results"][0]["document"]["id"] for name, data in files.items()
        }
        began = time.monotonic()
        errors = {}
        for name, doc_id in ids.items():
            doc, _ = await _settled(client, doc_id, within_s=120)
            assert doc["status"] == "failed", (name, doc)
            errors[name] = doc["error"]
        assert time.monotonic() - began < 120
    assert "400 megapixels" in errors["huge.png"] and "OCR_MAX_PIXELS" in errors["huge.png"]
    assert "not a valid image" in errors["corrupt.png"] or "could not decode" in errors["corrupt.png"]
    assert "looks like a Word document (.docx), not .png" in errors["archive.png"]
    assert errors["noise.png"].startswith("no text found in the image: OCR read 0 of 1 page"), errors["noise.png"]
    assert "not a valid image" in errors["garbage.tiff"] or "could not decode" in errors["garbage.tiff"]


async def test_ocr_off_refuses_images_and_says_so_for_scans(start: Callable[..., Any]) -> None:
    server = start(ingest_workers=1, ocr_enabled=False)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        refused = await client.post(
            "/api/documents", files=[("files", ("page.png", scans.png(scans.noise_page(20, 20))))]
        )
        assert refused.status_code == 415
        assert "OCR_ENABLED=false" in refused.json()["extra"]["results"][0]["error"]
        scan = scans.scanned_pdf([scans.text_page(FENDER, width=700)])
        doc_id = (await _upload(client, "scan.pdf", scan))["results"][0]["document"]["id"]
        doc, _ = await _settled(client, doc_id, within_s=60)
    assert doc["status"] == "failed"
    assert "no extractable text" in doc["error"] and "OCR_ENABLED=false" in doc["error"] and "ocrmypdf" in doc["error"]
