"""End to end: the document viewer and the documents page at scale. The built client in Chromium, the real server,
embedded Postgres, the real MiniLM and the fake Ollama. Writes docs/screenshots/viewer-pdf.png, viewer-text.png
and documents.png."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from ragchat.settings import Settings
from tests.e2e.conftest import MOBILE, REPO_ROOT, screenshot, upload, wait_until
from tests.support.services import register_many
from tests.unit.test_parsers import make_pdf

pytestmark = pytest.mark.e2e

AXE = REPO_ROOT / "client" / "node_modules" / "axe-core" / "axe.min.js"

PAGES = [
    ["Harbour operations manual", "", "Chapter one describes the tides and the moorings of the small boats."],
    [
        "The lighthouse keeper logs every passing ship in the harbour ledger,",
        "with its name, its flag and the hour it passed the breakwater.",
        "The ledger is kept for seven years in the harbour office.",
    ],
    ["Chapter three lists the fees for berths, cranes and fresh water."],
]

GUIDE = "\n\n".join(
    f"## Section {i}\n\n" + f"Paragraph {i} is about the ordinary routine of the garden in month {i}. " * 12
    for i in range(1, 13)
).replace(
    "## Section 9\n\n",
    "## Section 9\n\nCompost heaps must be turned every fortnight so the worms keep them warm and airy. ",
)


def serious_axe(page: Any) -> list[str]:
    """axe-core's serious and critical violations (Playwright's evaluate is not bound by the page's CSP)."""
    page.evaluate(Path(AXE).read_text() + "\n;undefined")
    found = page.evaluate(
        """async () => (await axe.run(document)).violations.map(
               v => [v.impact, `${v.id}: ${v.help} (${v.nodes.map(n => n.target.join(' ')).join(', ')})`])"""
    )
    return [text for impact, text in found if impact in ("serious", "critical")]


def wait_all_ready(base_url: str, count: int, timeout: float = 90.0) -> None:
    def ready() -> bool:
        docs = httpx.get(f"{base_url}/api/documents", params={"limit": 200}, timeout=10).json()["documents"]
        assert not [d for d in docs if d["status"] == "failed"], docs
        return len([d for d in docs if d["status"] == "ready"]) >= count

    wait_until(ready, timeout, f"{count} ready documents")


def test_viewer_opens_a_pdf_at_the_cited_page_and_a_text_at_its_chunk(live_app: Any, fake_llm: Any, page: Any) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    pdf = make_pdf(PAGES, title="Harbour operations manual")
    r = httpx.post(f"{server.url}/api/documents", files={"files": ("harbour.pdf", pdf, "application/pdf")}, timeout=30)
    assert r.status_code == 201, r.text
    pdf_id = r.json()["results"][0]["document"]["id"]
    upload(server.url, {"garden-guide.md": GUIDE})
    wait_all_ready(server.url, 2)

    # 1. From a search result to the PDF, at page 2 with the passage highlighted on the rendered page.
    page.goto(f"{server.url}/search?q=lighthouse keeper ledger passing ship")
    result = page.locator(f'[data-testid="search-result"][data-document-id="{pdf_id}"]')
    expect(result).to_be_visible(timeout=20_000)
    result.get_by_test_id("result-open").click()
    expect(page).to_have_url(re.compile(rf"/documents/{pdf_id}\?chunk=\d+&page=2$"))
    viewer = page.get_by_test_id("document-viewer")
    expect(viewer.get_by_test_id("viewer-title")).to_have_text("Harbour operations manual")
    expect(page.get_by_test_id("pdf-page")).to_have_attribute("data-page", "2", timeout=20_000)
    expect(page.get_by_test_id("pdf-page-label")).to_have_text("Page 2 of 3")
    highlights = page.locator('[data-testid="pdf-page"] .textLayer .pdf-hl')
    expect(highlights.first).to_be_visible()
    marked = " ".join(highlights.all_text_contents())
    assert "lighthouse keeper logs every passing ship" in marked, marked
    assert "Chapter" not in marked  # nothing of the other pages' text
    expect(page.get_by_test_id("pdf-hits")).to_have_text("The cited passage is highlighted.")
    expect(page.get_by_test_id("viewer-cited")).to_contain_text("harbour ledger")
    canvas_size = page.locator('[data-testid="pdf-page"] canvas').evaluate("c => [c.width, c.height]")
    assert canvas_size[0] > 300 and canvas_size[1] > 300, canvas_size  # a page was drawn, not an empty box
    expect(page.get_by_test_id("viewer-ask")).to_have_attribute("href", f"/chat?document={pdf_id}")
    assert page.title().startswith("Harbour operations manual")
    assert serious_axe(page) == []
    screenshot(page, "viewer-pdf")

    # Paging through the PDF: the next page is drawn and the URL follows.
    page.get_by_test_id("pdf-next").click()
    expect(page.get_by_test_id("pdf-page")).to_have_attribute("data-page", "3")
    expect(page.get_by_test_id("pdf-page-label")).to_have_text("Page 3 of 3")
    assert parse_qs(urlsplit(page.url).query)["page"] == ["3"]
    expect(page.get_by_test_id("pdf-next")).to_be_disabled()

    # 2. A text document opened at a chunk: that chunk highlighted, scrolled into view, with its section.
    chunks = httpx.get(f"{server.url}/api/documents", timeout=10).json()["documents"]
    guide_id = next(d["id"] for d in chunks if d["filename"] == "garden-guide.md")
    listed = httpx.get(f"{server.url}/api/documents/{guide_id}/chunks", params={"limit": 500}, timeout=10).json()
    compost = next(c for c in listed["chunks"] if "Compost heaps" in c["content"])
    page.goto(f"{server.url}/documents/{guide_id}?chunk={compost['id']}")
    cited = page.locator('[data-testid="viewer-chunk"][data-cited="true"]')
    expect(cited).to_have_count(1)
    expect(cited).to_contain_text("Compost heaps must be turned every fortnight")
    expect(cited).to_contain_text("§ Section 9")
    expect(cited).to_be_in_viewport()
    assert page.get_by_test_id("viewer-chunk").count() == listed["total"]  # a short guide: all of it, in order
    assert serious_axe(page) == []
    screenshot(page, "viewer-text")

    # The documents page opens the same viewer; a missing document says so.
    page.goto(f"{server.url}/documents")
    page.locator(f'[data-document-id="{guide_id}"]').get_by_test_id("document-title").click()
    expect(page).to_have_url(re.compile(rf"/documents/{guide_id}$"))
    expect(page.get_by_test_id("viewer-chunk").first).to_be_visible()
    page.goto(f"{server.url}/documents/00000000-0000-0000-0000-00000000beef")
    expect(page.get_by_test_id("viewer-error")).to_contain_text("Document not found")


async def _register(settings: Settings) -> None:
    from ragchat.db.pool import make_pool

    assert settings.database.database_url
    pool = make_pool(settings.database.database_url, min_size=1, max_size=2)
    await pool.open(wait=True)
    try:
        await register_many(
            pool, {f"report {i:02d}.txt": f"report {i}".encode() * (i + 1) for i in range(54)}, status="ready"
        )
        await register_many(
            pool,
            {f"scan {i:02d}.pdf": f"scan {i}".encode() for i in range(10)},
            status="failed",
            error="PDF has no extractable text (scanned or image-only?); run OCR first, e.g. `ocrmypdf in.pdf "
            "out.pdf`, and upload the result",
        )
    finally:
        await pool.close()


def test_documents_page_with_64_documents(live_app: Any, fake_llm: Any, settings: Settings, page: Any) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=0)
    # Playwright's sync API runs an event loop in this thread: register in another one
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _register(settings)).result()
    page.goto(f"{server.url}/documents")
    rows = page.get_by_test_id("document-row")
    expect(rows).to_have_count(50)
    expect(page.get_by_test_id("documents-count")).to_have_text("64 documents")
    expect(page.get_by_test_id("documents-range")).to_have_text("1–50 of 64 · page 1 of 2")
    expect(rows.first.get_by_test_id("document-title")).to_have_text("scan 09")  # newest first
    # A failure's command shows as code, not between backticks.
    expect(rows.first.get_by_test_id("document-error").locator("code")).to_have_text("ocrmypdf in.pdf out.pdf")
    expect(rows.first.get_by_test_id("document-error")).not_to_contain_text("`")
    assert serious_axe(page) == []
    screenshot(page, "documents")

    # Page 2: the rest, and the address says so.
    page.get_by_test_id("documents-next").click()
    expect(rows).to_have_count(14)
    expect(page).to_have_url(re.compile(r"/documents\?page=2$"))
    expect(page.get_by_test_id("documents-range")).to_have_text("51–64 of 64 · page 2 of 2")
    expect(rows.last.get_by_test_id("document-title")).to_have_text("report 00")

    # Search (back to page 1), then filters and sort.
    page.get_by_test_id("documents-search").fill("report 1")
    expect(rows).to_have_count(10)
    expect(page).to_have_url(re.compile(r"/documents\?q=report\+1$"))
    page.get_by_test_id("documents-search").fill("")
    expect(rows).to_have_count(50)
    page.get_by_test_id("documents-status-filter").select_option("failed")
    expect(rows).to_have_count(10)
    page.get_by_test_id("documents-status-filter").select_option("")
    page.get_by_test_id("documents-type-filter").select_option("text")
    expect(page.get_by_test_id("documents-range")).to_have_text("1–50 of 54 · page 1 of 2")
    page.get_by_test_id("documents-sort").select_option("title:asc")
    expect(rows.first.get_by_test_id("document-title")).to_have_text("report 00")
    page.get_by_test_id("documents-sort").select_option("byte_size:desc")
    expect(rows.first.get_by_test_id("document-title")).to_have_text("report 53")
    page.get_by_test_id("documents-type-filter").select_option("")
    page.get_by_test_id("documents-sort").select_option("created_at:desc")
    expect(rows.first.get_by_test_id("document-title")).to_have_text("scan 09")
    expect(page).to_have_url(re.compile(r"/documents$"))

    # Multi-select: three rows, Delete, confirm; the count follows.
    for i in range(3):
        rows.nth(i).get_by_test_id("document-select").check()
    expect(page.get_by_test_id("documents-selected")).to_have_text("3 selected")
    page.get_by_test_id("bulk-delete").click()
    page.get_by_test_id("bulk-delete-confirm").click()
    expect(page.get_by_test_id("bulk-result")).to_have_text("Deleted 3 documents.")
    expect(page.get_by_test_id("documents-count")).to_have_text("61 documents")
    assert not page.get_by_test_id("document-title").filter(has_text=re.compile(r"^scan 0[789]$")).count()

    # Select all failed ones and retry them: queued again.
    page.get_by_test_id("documents-status-filter").select_option("failed")
    expect(rows).to_have_count(7)
    page.get_by_test_id("documents-select-all").check()
    expect(page.get_by_test_id("documents-selected")).to_have_text("7 selected")
    page.get_by_test_id("bulk-retry").click()
    expect(page.get_by_test_id("bulk-result")).to_have_text("Queued again 7 documents.")
    expect(page.get_by_test_id("documents-none")).to_be_visible()
    queued = httpx.get(f"{server.url}/api/documents", params={"status": "queued"}, timeout=10).json()
    assert queued["total"] == 7

    # On a phone: the toolbar, checkboxes and rows fit the width.
    page.set_viewport_size(MOBILE)
    page.goto(f"{server.url}/documents")
    expect(rows).to_have_count(50)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= MOBILE["width"], f"the documents page is {width} px wide on a phone"
