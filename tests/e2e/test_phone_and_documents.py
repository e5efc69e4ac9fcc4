"""Browser tests for issue 35's page items: the phone (composer, nav menu, skip link) and documents at scale
(rename, bulk add to a collection, the Documents filters, the upload progress count)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import DESKTOP, REPO_ROOT, Pages, upload, wait_ready

pytestmark = pytest.mark.e2e

AXE = REPO_ROOT / "client" / "node_modules" / "axe-core" / "axe.min.js"
PHONE = {"width": 390, "height": 844}
PHONES = [{"width": 360, "height": 740}, PHONE, {"width": 430, "height": 932}]


def axe_violations(page: Any) -> list[str]:
    page.evaluate(Path(AXE).read_text() + "\n;undefined")
    return page.evaluate(
        """async () => (await axe.run(document)).violations.map(
               v => `${v.id}: ${v.help} (${v.nodes.map(n => n.target.join(' ')).join(', ')})`)"""
    )


def both_themes_clean(page: Any) -> None:
    for theme in ("light", "dark"):
        page.evaluate("t => { document.documentElement.dataset.theme = t }", theme)
        page.wait_for_timeout(50)
        assert axe_violations(page) == [], f"{page.url} in the {theme} theme"


def in_viewport(page: Any, testid: str, size: dict[str, int]) -> None:
    box = page.get_by_test_id(testid).bounding_box()
    assert box is not None, testid
    assert box["y"] >= 0 and box["y"] + box["height"] <= size["height"], f"{testid} at {box} in {size}"
    assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"], f"{testid} at {box} in {size}"


HANDBOOK = """# Staff handbook

## Holiday allowance

Every full-time employee gets 25 days of paid holiday per calendar year, plus public holidays.

## Remote work policy

You may work from home up to three days a week. Core hours are 10:00 to 15:00.

## Travel expenses

Travel must be booked through the travel desk. Meals are reimbursed up to 35 euros a day.

## Equipment

Every employee receives a laptop, a headset and a monitor on the first day. Broken equipment is replaced by the
service desk within two working days; lost equipment is reported to the service desk and to security at once.

## Training

Each employee has five training days a year. Courses are chosen with the manager at the yearly review and booked
through the learning portal; travel to a course follows the travel expenses rules above.

## Working hours

The standard week is 38 hours. Overtime is agreed with the manager beforehand and taken back as time off within
three months, or paid at the end of the quarter when it cannot be taken.

## Sick leave

Report sick to the manager before 9:00 on the first day. From the fourth day a doctor's note is needed; the days
are paid in full for the first six weeks.
"""  # over 1,000 characters: suggestions skip smaller documents (retrieval/suggestions.py)


def test_new_chat_composer_is_on_screen_on_phones(live_app: Any, fake_llm: Any, pages: Pages) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    upload(server.url, {f"handbook-{n}.md": HANDBOOK.replace("Staff", f"Staff {n}") for n in range(3)})
    wait_ready(server.url, 3)
    for size in PHONES:
        page = pages.new(viewport=size, is_mobile=True, has_touch=True)
        page.goto(server.url + "/chat")
        expect(page.get_by_test_id("empty-chat")).to_be_visible()
        expect(page.get_by_test_id("suggestion").first).to_be_visible()
        expect(page.get_by_test_id("empty-chat-library")).to_have_attribute("data-count", "3")
        expect(page.get_by_test_id("empty-chat")).not_to_contain_text("No documents yet")
        in_viewport(page, "composer-input", size)
        in_viewport(page, "send-button", size)
        assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]

        # The nav is one button naming the page; its menu lists every page and closes on Escape.
        expect(page.get_by_test_id("nav-documents")).to_be_hidden()
        toggle = page.get_by_test_id("nav-toggle")
        expect(toggle).to_have_attribute("aria-expanded", "false")
        toggle.click()
        expect(page.get_by_test_id("nav-settings")).to_be_in_viewport()
        expect(page.get_by_test_id("nav-account")).to_be_in_viewport()
        if size == PHONE:
            both_themes_clean(page)
        page.keyboard.press("Escape")
        expect(page.get_by_test_id("nav-settings")).to_be_hidden()
        toggle.click()
        page.get_by_test_id("nav-documents").click()
        expect(page).to_have_url(server.url + "/documents")
        expect(page.get_by_test_id("nav-documents")).to_be_hidden()
        expect(toggle).to_contain_text("Documents")


def test_keyboard_reaches_the_message_box(live_app: Any, fake_llm: Any, pages: Pages) -> None:
    server = live_app(ollama_host=fake_llm())
    page = pages.new(viewport=DESKTOP)
    page.goto(server.url + "/documents")
    page.get_by_test_id("nav-chat").click()
    expect(page.get_by_test_id("empty-chat")).to_be_visible()
    # The page's first two stops: "Skip to content", then "Skip to the message box".
    page.locator(".skip-link").first.focus()
    page.keyboard.press("Tab")
    expect(page.get_by_test_id("skip-to-composer")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("composer-input")).to_be_focused()

    # "New chat" hands the focus to the message box.
    page.get_by_test_id("new-thread").focus()
    page.get_by_test_id("new-thread").press("Enter")
    expect(page.get_by_test_id("composer-input")).to_be_focused()
    both_themes_clean(page)


def _put(url: str, name: str, text: str, metadata: dict[str, Any]) -> str:
    r = httpx.post(
        f"{url}/api/documents", files={"files": (name, text.encode())}, data={"metadata": json.dumps(metadata)}
    )
    assert r.status_code == 201, r.text
    return str(r.json()["results"][0]["document"]["id"])


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_rename_bulk_collection_and_filters(live_app: Any, fake_llm: Any, pages: Pages, size: dict[str, int]) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    ids = {
        name: _put(server.url, name, text, {"subject": subject})
        for name, text, subject in (
            ("scan-0001.txt", "Minutes of the harbour board about dredging.", "Ports"),
            ("scan-0002.txt", "A history of the old lighthouse and its keepers.", "History"),
            ("scan-0003.txt", "Tide tables for the spring season.", "Ports"),
        )
    }
    wait_ready(server.url, 3)
    research = httpx.post(f"{server.url}/api/collections", json={"name": "Research"}).json()["id"]

    page = pages.new(viewport=size, is_mobile=size == PHONE, has_touch=size == PHONE)
    page.goto(server.url + "/documents")
    rows = page.get_by_test_id("document-row")
    expect(rows).to_have_count(3)

    # Rename: the title changes, the file name stays.
    row = page.locator(f'[data-document-id="{ids["scan-0002.txt"]}"]')
    row.get_by_test_id("document-rename").click()
    row.get_by_test_id("document-rename-input").fill("Lighthouse history")
    row.get_by_test_id("document-rename-input").press("Enter")
    expect(row.get_by_test_id("document-title")).to_have_text("Lighthouse history")
    expect(row).to_contain_text("scan-0002.txt")
    doc = httpx.get(f"{server.url}/api/documents/{ids['scan-0002.txt']}").json()
    assert (doc["title"], doc["filename"]) == ("Lighthouse history", "scan-0002.txt")

    # Bulk add two documents to a collection.
    for name in ("scan-0001.txt", "scan-0003.txt"):
        page.locator(f'[data-document-id="{ids[name]}"]').get_by_test_id("document-select").check()
    expect(page.get_by_test_id("documents-selected")).to_have_text("2 selected")
    page.get_by_test_id("bulk-collection").select_option(label="Research")
    page.get_by_test_id("bulk-collection-add").click()
    expect(page.get_by_test_id("bulk-result")).to_contain_text("Added to Research: 2 documents")
    listed = httpx.get(f"{server.url}/api/documents", params={"collection_id": research}).json()["documents"]
    assert {d["filename"] for d in listed} == {"scan-0001.txt", "scan-0003.txt"}

    # Filters: collection, owner, metadata (each in the URL, so a reload keeps it).
    page.get_by_test_id("documents-collection-filter").select_option(label="Research")
    expect(rows).to_have_count(2)
    page.get_by_test_id("documents-collection-filter").select_option(value="")
    expect(rows).to_have_count(3)
    page.get_by_test_id("documents-owner-filter").select_option(value="others")
    expect(page.get_by_test_id("documents-none")).to_have_text("No documents match with these filters.")
    page.get_by_test_id("documents-owner-filter").select_option(value="me")
    expect(rows).to_have_count(3)
    page.get_by_test_id("documents-meta-filter").fill("subject=History")
    expect(rows).to_have_count(1)
    expect(rows.first.get_by_test_id("document-title")).to_have_text("Lighthouse history")
    assert "meta=subject%3DHistory" in page.url
    page.reload()
    expect(rows).to_have_count(1)
    expect(page.get_by_test_id("documents-meta-filter")).to_have_value("subject=History")
    assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
    both_themes_clean(page)


def test_upload_progress_counts_only_ready_documents(live_app: Any, fake_llm: Any, pages: Pages) -> None:
    # No ingestion worker: the uploads stay queued. The page shows only failed documents, so the batch's
    # documents are not on it: they are still in progress, never "Done".
    server = live_app(ollama_host=fake_llm(), ingest_workers=0)
    page = pages.new(viewport=PHONE, is_mobile=True, has_touch=True)
    page.goto(server.url + "/documents?status=failed")
    page.locator('input[type="file"]').set_input_files(
        [{"name": f"note-{n}.txt", "mimeType": "text/plain", "buffer": f"Note number {n}.".encode()} for n in range(3)]
    )
    text = page.get_by_test_id("batch-progress-text")
    expect(text).to_contain_text("3 files uploaded")
    page.wait_for_timeout(2500)  # two polls of the batch's documents
    expect(text).to_contain_text("0 of 3 ready · 3 in progress")
    expect(page.get_by_test_id("batch-progress")).to_have_attribute("data-done", "false")
    expect(text).not_to_contain_text("Done")
