"""Issue 46 item 4 in the browser: a collection with more than one page of documents, at desktop and phone size:
the count, the pager, sort, search, and Remove on a searched page (rows inserted with SQL, added to the collection
by the API's "every matching" bulk action)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import DESKTOP, Pages
from tests.e2e.test_phone_and_documents import PHONE, axe_violations
from tests.support.documents import seed_ready

pytestmark = pytest.mark.e2e

N = 120


def seed(db: str, url: str) -> str:
    seed_ready(db, "paper", N)
    collection = httpx.post(f"{url}/api/collections", json={"name": "Papers"}).json()["id"]
    added = httpx.post(
        f"{url}/api/documents/bulk",
        json={"action": "add_to_collection", "collection_id": collection, "filter": {"q": "paper"}},
    ).json()
    assert added["done"] == N, added
    return collection


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_collection_pages_searches_and_removes(
    live_app: Any, fake_llm: Any, pages: Pages, db: str, size: dict[str, int]
) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=0)
    collection = seed(db, server.url)
    phone = size == PHONE
    page = pages.new(viewport=size, is_mobile=phone, has_touch=phone)
    page.goto(f"{server.url}/collections/{collection}")
    rows = page.get_by_test_id("collection-doc-row")
    count = page.get_by_test_id("collection-doc-count")
    pager = page.get_by_test_id("documents-range")
    expect(rows).to_have_count(50)
    expect(count).to_have_text(f"{N} documents")
    expect(pager).to_have_text(f"1–50 of {N} · page 1 of 3")
    expect(rows.first).to_contain_text("paper 000")  # newest first

    page.get_by_test_id("collection-doc-sort").select_option("title:desc")
    expect(rows.first).to_contain_text("paper 119")
    page.get_by_test_id("documents-next").click()
    expect(pager).to_have_text(f"51–100 of {N} · page 2 of 3")
    expect(rows.first).to_contain_text("paper 069")
    page.get_by_test_id("documents-next").click()
    expect(pager).to_have_text(f"101–120 of {N} · page 3 of 3")
    expect(rows).to_have_count(20)
    expect(rows.last).to_contain_text("paper 000")
    page.get_by_test_id("documents-prev").click()
    expect(pager).to_have_text(f"51–100 of {N} · page 2 of 3")

    # Search narrows to one page (no pager), from the first page.
    page.get_by_test_id("collection-doc-search").fill("paper 11")
    expect(count).to_have_text(f"10 documents of {N} match “paper 11”")
    expect(rows).to_have_count(10)
    expect(page.get_by_test_id("documents-pager")).to_have_count(0)
    expect(rows.first).to_contain_text("paper 119")

    # Remove one of the found: gone from the page, the collection and the count; the search stays.
    row = rows.filter(has_text="paper 115")
    row.get_by_test_id("collection-doc-remove").click()
    expect(page.get_by_test_id("collection-notice")).to_have_text("Removed paper 115.")
    expect(rows).to_have_count(9)
    expect(count).to_have_text(f"9 documents of {N - 1} match “paper 11”")
    listed = httpx.get(f"{server.url}/api/documents", params={"collection_id": collection, "q": "paper 115"}).json()
    assert listed["total"] == 0

    page.get_by_test_id("collection-doc-search").fill("")
    expect(count).to_have_text(f"{N - 1} documents")
    expect(pager).to_have_text(f"1–50 of {N - 1} · page 1 of 3")

    assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
    if phone:
        box = page.get_by_test_id("documents-next").bounding_box()
        assert box is not None and box["x"] + box["width"] <= size["width"]
    for theme in ("light", "dark"):
        page.evaluate("t => { document.documentElement.dataset.theme = t }", theme)
        assert axe_violations(page) == [], theme
