"""Issue 46 item 4 in the browser: "Select all" means the page, and "Select all N matching" means every document
the filter matches, across pages, with the count in the button, the selection line and the confirmation; a bulk
action then reaches all of them (60 notes, 50 a page: the 10 of page 2 were silently left out before), at desktop
and phone size, in light and dark."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import DESKTOP, Pages
from tests.e2e.test_phone_and_documents import PHONE, axe_violations
from tests.support.documents import seed_ready

pytestmark = pytest.mark.e2e

N = 60  # notes matching "note"; 5 other documents do not match


def seed(db: str) -> None:
    seed_ready(db, "note", N, digits=2)
    seed_ready(db, "report", 5)  # matches no "note"


@pytest.mark.parametrize(("size", "scheme"), [(DESKTOP, "light"), (PHONE, "dark")], ids=["desktop-light", "phone-dark"])
def test_select_all_matching_reaches_every_page(
    live_app: Any, fake_llm: Any, pages: Pages, db: str, size: dict[str, int], scheme: str
) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=0)
    seed(db)
    collection = httpx.post(f"{server.url}/api/collections", json={"name": "Notes"}).json()["id"]
    phone = size == PHONE
    page = pages.new(viewport=size, is_mobile=phone, has_touch=phone, color_scheme=scheme)
    page.goto(f"{server.url}/documents?q=note")
    rows = page.get_by_test_id("document-row")
    expect(rows).to_have_count(50)

    page.get_by_test_id("documents-select-all").check()
    selected = page.get_by_test_id("documents-selected")
    expect(selected).to_have_text("50 selected")  # the page, and it says so
    matching = page.get_by_test_id("documents-select-matching")
    expect(matching).to_have_text(f"Select all {N} matching")
    matching.click()
    expect(selected).to_have_text(f"All {N} matching selected")
    assert axe_violations(page) == []

    page.get_by_test_id("bulk-collection").select_option(collection)
    page.get_by_test_id("bulk-collection-add").click()
    expect(page.get_by_test_id("bulk-result")).to_contain_text(str(N))
    detail = httpx.get(f"{server.url}/api/collections/{collection}").json()
    assert detail["document_count"] == N  # all 60 notes, page 2 included; no report
    listed = httpx.get(f"{server.url}/api/documents", params={"collection_id": collection, "limit": 100}).json()
    assert sorted(d["title"] for d in listed["documents"]) == [f"note {i:02d}" for i in range(N)]

    page.get_by_test_id("documents-select-all").check()
    page.get_by_test_id("documents-select-matching").click()
    page.get_by_test_id("bulk-delete").click()
    confirm = page.get_by_test_id("bulk-delete-confirm")
    expect(confirm).to_have_text(f"Delete all {N} matching documents")  # the count in the confirmation
    page.get_by_test_id("bulk-delete-cancel").click()
    assert httpx.get(f"{server.url}/api/documents", params={"limit": 1}).json()["total"] == N + 5  # cancelled
