"""The scan viewer's API over real HTTP (issue 46, item 6): a photo of a page and a scanned PDF uploaded and read by
the real OCR engine keep their lines with boxes; GET .../pages/{n}/ocr gives them in the pixels of GET
.../pages/{n}/image; another user gets 404 for both; hostile pages a clear 4xx; a document read before the lines
were kept (none stored) still shows its image and gives no lines; deleting a document deletes its lines."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any
from uuid import UUID

import httpx
from PIL import Image

from tests.support import scans
from tests.support.accounts import add_user, setup_admin, signed_in, upload, wait_ready

PHOTO = ["Lighthouse keeper rota for August", "Night watch: Marguerite and Tobias", "Day watch: Ingrid"]
FENDER = ["Fender replacement at the northern quay", "Budget approved: 48,000 EUR in March"]
SIZE = 36


async def _upload(client: httpx.AsyncClient, name: str, data: bytes) -> str:
    r = await client.post("/api/documents", files=[("files", (name, data, "application/octet-stream"))])
    assert r.status_code == 201, r.text
    return r.json()["results"][0]["document"]["id"]


async def _lines_stored(pool: Any, document_id: str) -> int:
    async with pool.connection() as conn:
        row = await (
            await conn.execute("SELECT count(*) AS n FROM document_ocr_lines WHERE document_id = %s", (document_id,))
        ).fetchone()
    return row["n"]


def _image(response: httpx.Response) -> Image.Image:
    assert response.status_code == 200, response.text
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in response.headers["content-security-policy"]
    image = Image.open(io.BytesIO(response.content))
    assert response.headers["content-type"] == f"image/{image.format.lower()}"  # pyright: ignore[reportOptionalMemberAccess]
    return image


async def test_scan_pages_lines_boxes_images_and_scope(live_app: Callable[..., Any], pool: Any) -> None:
    # OCR of a page takes seconds on a quiet machine, minutes on a busy one: its budget is not what is tested here
    server = live_app(auth="on", ingest_workers=1, ocr_page_timeout_s=1200.0, ocr_time_budget_s=2400.0)
    admin = await setup_admin(server.url)
    await add_user(admin, "bob")
    bob = await signed_in(server.url, "bob")
    photo = scans.text_page(PHOTO, size=SIZE, width=900)
    png_id = await _upload(admin, "rota.png", scans.png(photo))
    pdf = scans.scanned_pdf(
        ["Harbour minutes.\nThe committee met on the first of April.", scans.text_page(FENDER, size=30)]
    )
    pdf_id = await _upload(admin, "minutes.pdf", pdf)
    notes_id = await upload(admin, "notes.txt", "Plain notes about the harbour, no pages to scan.")
    await wait_ready(admin, [png_id, pdf_id, notes_id], timeout_s=1800)

    # The photo: its lines in reading order, each box on the line drawn there, in the image's own pixels.
    got = (await admin.get(f"/api/documents/{png_id}/pages/1/ocr")).json()
    assert (got["page"], got["width"], got["height"], got["scanned_pages"]) == (1, *photo.size, [1])
    assert len(got["lines"]) == 3 and "lighthouse keeper" in got["lines"][0]["text"].lower()
    assert "marguerite" in got["lines"][1]["text"].lower() and "ingrid" in got["lines"][2]["text"].lower()
    for i, line in enumerate(got["lines"]):
        centre = 20 + SIZE + i * int(SIZE * 1.7) + SIZE * 0.6  # where scans.text_page drew line i
        assert line["y0"] <= centre <= line["y1"] and abs(line["x0"] - 40) < 15, (i, line)
        assert 0.6 <= line["confidence"] <= 1
    assert await _lines_stored(pool, png_id) == 3
    image = _image(await admin.get(f"/api/documents/{png_id}/pages/1/image"))
    assert image.size == photo.size and image.format == "PNG"  # a grey scan stays PNG
    assert image.convert("L").getpixel((10, 10)) == 255  # white paper

    # The scanned PDF: page 2 read by OCR, its boxes in the pixels of the page as OCR rendered it; page 1 has a
    # text layer (no lines, but an image all the same).
    page2 = (await admin.get(f"/api/documents/{pdf_id}/pages/2/ocr")).json()
    assert page2["scanned_pages"] == [2] and any("48,000" in line["text"] for line in page2["lines"])
    rendered = _image(await admin.get(f"/api/documents/{pdf_id}/pages/2/image"))
    assert rendered.size == (page2["width"], page2["height"]) and max(rendered.size) <= 2000
    assert all(0 <= ln["x0"] < ln["x1"] <= page2["width"] and ln["y1"] <= page2["height"] for ln in page2["lines"])
    page1 = (await admin.get(f"/api/documents/{pdf_id}/pages/1/ocr")).json()
    assert (page1["lines"], page1["width"], page1["scanned_pages"]) == ([], None, [2])
    assert _image(await admin.get(f"/api/documents/{pdf_id}/pages/1/image")).size == rendered.size

    # Hostile or wrong: a clear 4xx, never a 500.
    for path, status in (
        (f"{pdf_id}/pages/3/image", 404),  # past the last page
        (f"{pdf_id}/pages/3/ocr", 404),
        (f"{pdf_id}/pages/0/image", 400),
        (f"{pdf_id}/pages/-1/ocr", 400),
        (f"{pdf_id}/pages/{10**12}/ocr", 400),
        (f"{pdf_id}/pages/two/ocr", 404),
        (f"{notes_id}/pages/1/image", 404),  # a text file has no page images
        (f"{UUID(int=7)}/pages/1/ocr", 404),
        (f"{UUID(int=7)}/pages/1/image", 404),
    ):
        r = await admin.get(f"/api/documents/{path}")
        assert r.status_code == status, (path, r.status_code, r.text)
    notes = (await admin.get(f"/api/documents/{notes_id}/pages/1/ocr")).json()
    assert notes["lines"] == [] and notes["scanned_pages"] == []

    # Another user: 404 for both, as for a document that does not exist.
    for path in (
        f"{png_id}/pages/1/ocr",
        f"{png_id}/pages/1/image",
        f"{pdf_id}/pages/2/ocr",
        f"{pdf_id}/pages/2/image",
    ):
        r = await bob.get(f"/api/documents/{path}")
        assert r.status_code == 404 and r.json()["code"] == "not_found", (path, r.text)

    # A document read before lines were kept (none stored): no lines, its image and text as before.
    async with pool.connection() as conn:
        await conn.execute("DELETE FROM document_ocr_lines WHERE document_id = %s", (png_id,))
    old = (await admin.get(f"/api/documents/{png_id}/pages/1/ocr")).json()
    assert (old["lines"], old["width"], old["height"], old["scanned_pages"]) == ([], None, None, [])
    assert _image(await admin.get(f"/api/documents/{png_id}/pages/1/image")).size == photo.size
    chunks = (await admin.get(f"/api/documents/{png_id}/chunks")).json()["chunks"]
    assert "Marguerite" in chunks[0]["content"]

    # Deleting a document deletes its lines.
    assert await _lines_stored(pool, pdf_id) > 0
    assert (await admin.delete(f"/api/documents/{pdf_id}")).status_code in (200, 204)
    assert await _lines_stored(pool, pdf_id) == 0
    for client in (admin, bob):
        await client.aclose()
