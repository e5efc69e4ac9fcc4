"""Browser tests for issue 35's page items: the phone (composer, nav menu, skip link) and documents at scale
(rename, bulk add to a collection, the Documents filters, the upload progress count)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
"""


def test_new_chat_composer_is_on_screen_on_phones(live_app: Any, fake_llm: Any, pages: Pages) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    upload(server.url, {f"handbook-{n}.md": HANDBOOK.replace("Staff", f"Staff {n}") for n in range(3)})
    wait_ready(server.url, 3)
    for size in PHONES:
        page = pages.new(viewport=size, is_mobile=True, has_touch=True)
        page.goto(server.url + "/chat")
        expect(page.get_by_test_id("empty-chat")).to_be_visible()
        expect(page.get_by_test_id("suggestion").first).to_be_visible()
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
