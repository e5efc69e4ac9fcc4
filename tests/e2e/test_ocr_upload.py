"""Scans through the page (issue 32): a photo of a page and a scanned PDF picked in the Documents page's file input
become ready, and the search page finds their text with the OCR label on the passage (Chromium)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.scans import png, scanned_pdf, text_page

pytestmark = pytest.mark.e2e

PHOTO = ["The tide table for the western pier lists high water at 06:40.", "Low water follows six hours later."]
SCAN = ["Minutes of the harbour board meeting.", "The board approved a new crane for the eastern quay."]


def test_a_photo_and_a_scanned_pdf_uploaded_through_the_page_are_found(live_app: Any, fake_llm: Any, page: Any) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    page.goto(f"{server.url}/documents")
    page.get_by_test_id("upload-input").set_input_files(
        [
            {"name": "tide-photo.png", "mimeType": "image/png", "buffer": png(text_page(PHOTO, angle=1.5))},
            {"name": "minutes.pdf", "mimeType": "application/pdf", "buffer": scanned_pdf([text_page(SCAN)])},
        ]
    )
    rows = page.get_by_test_id("document-row")
    expect(rows).to_have_count(2)
    for i in range(2):
        expect(rows.nth(i)).to_have_attribute("data-status", "ready", timeout=240_000)

    for query, name in (("western pier high water", "tide-photo.png"), ("crane eastern quay", "minutes.pdf")):
        page.goto(f"{server.url}/search?q={query.replace(' ', '+')}")
        page.get_by_test_id("search-tab-chunks").click()
        first = page.get_by_test_id("results-by-chunk").get_by_test_id("search-result").first
        expect(first).to_contain_text(name)
        expect(first.get_by_test_id("source-location")).to_contain_text(re.compile(r"OCR \d+% confidence"))
