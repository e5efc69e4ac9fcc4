"""A scan shown as the scan (issue 46, item 6), in Chromium: a photo of a page read by the real OCR engine opens at a
cited passage as the image with the passage's lines boxed over it (on the drawn lines, scaled with the image, also
at phone width), the OCR text beside it on a desktop and under it on a phone, the cited lines reachable by keyboard;
axe finds nothing at both sizes in both themes. Writes docs/screenshots/scan-viewer.png."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import DESKTOP, Pages, screenshot, wait_ready
from tests.e2e.test_phone_and_documents import PHONE, axe_violations
from tests.support.scans import png, text_page

pytestmark = pytest.mark.e2e

LINES = [
    "Harbour board minutes, spring session",
    "The board approved a new crane for the eastern quay.",
    "Dredging of the western channel resumes in May.",
    "The fender budget stays at 48,000 EUR this year.",
]
SIZE = 34
LEFT = 40  # scans.text_page draws every line from x = 40
CASES = [(DESKTOP, "light"), (DESKTOP, "dark"), (PHONE, "light"), (PHONE, "dark")]


def _open(pages: Pages, size: dict[str, int], scheme: str) -> Any:
    phone = size == PHONE
    return pages.new(viewport=size, is_mobile=phone, has_touch=phone, color_scheme=scheme)


def test_a_scanned_page_shows_the_image_with_the_passage_boxed(live_app: Any, pages: Pages) -> None:
    # OCR of a page takes seconds on a quiet machine, minutes on a busy one: its budget is not what is tested here
    server = live_app(ingest_workers=1, ocr_page_timeout_s=1200.0, ocr_time_budget_s=2400.0)
    photo = text_page(LINES, size=SIZE, width=1100)
    r = httpx.post(
        f"{server.url}/api/documents", files=[("files", ("minutes.png", png(photo), "image/png"))], timeout=30
    )
    assert r.status_code == 201, r.text
    doc_id = r.json()["results"][0]["document"]["id"]
    wait_ready(server.url, 1, timeout=1800)
    chunk = httpx.get(f"{server.url}/api/documents/{doc_id}/chunks", timeout=10).json()["chunks"][0]
    ocr = httpx.get(f"{server.url}/api/documents/{doc_id}/pages/1/ocr", timeout=10).json()
    assert len(ocr["lines"]) == len(LINES)

    for size, scheme in CASES:
        where = f"{'phone' if size == PHONE else 'desktop'}, {scheme}"
        page = _open(pages, size, scheme)
        page.goto(f"{server.url}/documents/{doc_id}?chunk={chunk['id']}")
        view = page.get_by_test_id("scan-view")
        expect(view).to_be_visible()
        image = page.get_by_test_id("scan-image")
        expect(image).to_have_attribute("alt", "Page 1 of minutes, as scanned. Its text, read by OCR, follows.")
        page.wait_for_function("el => el.complete && el.naturalWidth > 0", arg=image.element_handle())
        assert image.evaluate("el => [el.naturalWidth, el.naturalHeight]") == list(photo.size), where
        expect(page.get_by_test_id("scan-hits")).to_contain_text("The cited passage is highlighted")

        # every line of the passage boxed on the line drawn there, at the scale the image is shown
        shown = image.bounding_box()
        assert shown is not None and shown["width"] <= size["width"], where
        scale = shown["width"] / photo.width
        boxes = page.get_by_test_id("scan-box")
        expect(boxes).to_have_count(len(LINES))
        for i in range(len(LINES)):
            box = boxes.nth(i).bounding_box()
            assert box is not None
            centre = 20 + SIZE + i * int(SIZE * 1.7) + SIZE * 0.6  # where text_page drew line i
            top, bottom = (box["y"] - shown["y"]) / scale, (box["y"] + box["height"] - shown["y"]) / scale
            assert top <= centre <= bottom, (where, i, box, shown)
            assert abs((box["x"] - shown["x"]) / scale - LEFT) < 15, (where, i, box, shown)

        # the text beside the image on a desktop, under it on a phone
        text = page.get_by_test_id("scan-text").bounding_box()
        assert text is not None
        if size == PHONE:
            assert text["y"] >= shown["y"] + shown["height"] - 1, (where, text, shown)
        else:
            assert text["x"] >= shown["x"] + shown["width"] - 1, (where, text, shown)

        # by keyboard: a cited line takes the focus, and its box is outlined
        cited = page.get_by_test_id("scan-text").locator(".scan-line.cited").first
        cited.focus()
        expect(cited).to_be_focused()
        expect(boxes.first).to_have_class("scan-box active")
        page.keyboard.press("Tab")
        expect(page.get_by_test_id("scan-text").locator(".scan-line.cited").nth(1)).to_be_focused()

        assert axe_violations(page) == [], where
        if (size, scheme) == (DESKTOP, "light"):
            page.evaluate("() => window.scrollTo(0, 0)")
            screenshot(page, "scan-viewer")
