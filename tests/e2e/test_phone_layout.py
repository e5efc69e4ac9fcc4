"""Browser tests for issue 46's page items (1, 2, 7): a citation preview never under the composer (a sheet on a
phone), Escape and Tab in a pinned preview, the Options popover by the message box, Export in a menu, the Documents
page starting with documents on a phone, the stale "Chat unavailable" banner, badges that explain themselves; axe
at both sizes in both themes. Writes docs/screenshots/phone-chat.png, phone-citation.png, phone-options.png,
phone-documents.png and phone-settings.png."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import DESKTOP, Pages, screenshot, upload, wait_ready
from tests.e2e.test_page import ASSISTANT, HANDBOOK, ask, ask_via_api, open_app
from tests.e2e.test_phone_and_documents import PHONE, axe_violations
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.e2e

SIZES = [(DESKTOP, "light"), (DESKTOP, "dark"), (PHONE, "light"), (PHONE, "dark")]
IDS = ["desktop-light", "desktop-dark", "phone-light", "phone-dark"]
# A long answer: its last [1] sits at the bottom of the message list, right above the composer.
LONG_ANSWER = "\n\n".join(f"Paragraph {n}: the handbook covers holidays and remote work." for n in range(12))
LONG_ANSWER += "\n\nFull-time employees get 25 days of paid holiday per calendar year [1]."


def new_page(pages: Pages, size: dict[str, int], scheme: str = "light") -> Any:
    phone = size == PHONE
    return pages.new(viewport=size, is_mobile=phone, has_touch=phone, color_scheme=scheme)


def uncovered(page: Any, locator: Any, owner: Any) -> None:
    """The element is on screen and what the page shows at its centre belongs to `owner` (nothing covers it)."""
    expect(locator).to_be_visible()
    box = locator.bounding_box()
    assert box is not None
    size = page.viewport_size
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    assert 0 <= x <= size["width"] and 0 <= y <= size["height"], f"centre {(x, y)} off screen {size}"
    inside = owner.evaluate(
        "(el, [x, y]) => { const hit = document.elementFromPoint(x, y); return !!hit && el.contains(hit) }", [x, y]
    )
    assert inside, f"something covers {locator} at {(x, y)}"


def both_themes_clean(page: Any, what: str) -> None:
    for theme in ("light", "dark"):
        page.evaluate("t => { document.documentElement.dataset.theme = t }", theme)
        page.wait_for_timeout(50)
        assert axe_violations(page) == [], f"{what} in the {theme} theme"
    page.evaluate("() => { delete document.documentElement.dataset.theme }")


def thread_with_citation(server: Any, fake_ollama: FakeOllama, title: str) -> str:
    fake_ollama.enqueue(Reply.tool_call("search_documents", {"query": "paid holiday days"}), Reply.text(LONG_ANSWER))
    thread_id = ask_via_api(server.url, "How many holiday days do I get?")
    r = httpx.patch(f"{server.url}/api/threads/{thread_id}", json={"title": title}, timeout=10)
    assert r.status_code == 200, r.text
    return thread_id


def served_thread(live_app: Any, fake_ollama: FakeOllama, fake_llm: Any) -> tuple[Any, str]:
    """A server with the handbook and a thread whose answer cites it, titled "Vacation Days Policy"."""
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    upload(server.url, {"handbook.md": HANDBOOK})
    wait_ready(server.url, 1)
    return server, thread_with_citation(server, fake_ollama, "Vacation Days Policy")


def open_answer(page: Any, url: str) -> tuple[Any, Any]:
    """The thread's finished answer on `page`: (the answer, its last citation, scrolled into view)."""
    open_app(page, url)
    msg = page.locator(ASSISTANT).last
    expect(msg).to_have_attribute("data-status", "complete")
    cite = msg.get_by_test_id("citation").last
    cite.scroll_into_view_if_needed()
    return msg, cite


def test_citation_preview_is_never_under_the_composer(
    live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, pages: Pages
) -> None:
    server, thread_id = served_thread(live_app, fake_ollama, fake_llm)
    for (size, scheme), name in zip(SIZES, IDS, strict=True):
        page = new_page(pages, size, scheme)
        msg, cite = open_answer(page, f"{server.url}/chat/{thread_id}")
        cite.click()  # a tap on a phone
        pop = msg.get_by_test_id("cite-popover")
        uncovered(page, pop.get_by_test_id("cite-popover-passage"), pop)
        uncovered(page, pop.get_by_test_id("cite-popover-open"), pop)
        composer = page.get_by_test_id("composer").bounding_box()
        link = pop.get_by_test_id("cite-popover-open").bounding_box()
        assert composer and link
        if size == PHONE:  # a sheet over the composer, its link in the thumb's reach (the lower part of the screen)
            assert link["y"] > size["height"] / 2, link
            assert link["height"] >= 44, link
        else:  # above the composer, not under it
            assert link["y"] + link["height"] <= composer["y"], (link, composer)
        # the thread's title is whole: Export is one button
        title = page.get_by_test_id("chat-title")
        assert title.evaluate("e => e.scrollWidth <= e.clientWidth"), title.bounding_box()
        expect(title).to_have_text("Vacation Days Policy")
        if name == "phone-light":
            screenshot(page, "phone-citation")
        assert axe_violations(page) == [], f"preview open, {name}"

        # Export in a menu
        page.get_by_test_id("export-button").click()
        expect(page.get_by_test_id("export-markdown")).to_be_focused()
        uncovered(page, page.get_by_test_id("export-json"), page.get_by_test_id("chat-export"))
        page.keyboard.press("Escape")
        expect(page.get_by_test_id("export-markdown")).to_have_count(0)
        expect(page.get_by_test_id("export-button")).to_be_focused()
        if name == "phone-light":
            screenshot(page, "phone-chat")


def test_a_pinned_preview_takes_the_keyboard_at_every_size(
    live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, pages: Pages
) -> None:
    """A tap (a real touch on a phone), a click and Enter each pin the preview with the focus in it; Escape
    closes it and gives the focus back to its [n]; Tab past its last button closes it, uncovering the focus.
    On a phone the mouse-down of a tap focuses [n]: a focus preview opened there was a sheet over [n], which
    took the release, so the click never reached [n] and nothing was pinned."""
    server, thread_id = served_thread(live_app, fake_ollama, fake_llm)
    for (size, scheme), name in zip(SIZES, IDS, strict=True):
        page = new_page(pages, size, scheme)
        msg, cite = open_answer(page, f"{server.url}/chat/{thread_id}")
        pop = msg.get_by_test_id("cite-popover")
        link = pop.get_by_test_id("cite-popover-open")
        composer = page.get_by_test_id("composer-input")
        for how in ["tap", "click"] if size == PHONE else ["click"]:
            composer.focus()  # as when the page opened: the press moves the focus to [n]
            uncovered(page, cite, cite)  # what a press at its centre hits is [n] itself
            if how == "tap":
                box = cite.bounding_box()
                assert box is not None
                page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            else:
                cite.click()
            expect(link, f"{how}, {name}").to_be_focused()
            page.keyboard.press("Escape")
            expect(pop).to_have_count(0)
            expect(cite).to_be_focused()
        # the keyboard: Enter on the focused [n] pins it; Tab past its last button closes it
        page.keyboard.press("Enter")
        expect(link, f"Enter, {name}").to_be_focused()
        for _ in range(3):  # Show in sources, Close, out
            page.keyboard.press("Tab")
        expect(pop).to_have_count(0)
        focused = page.locator(":focus")
        expect(focused).to_have_count(1)
        uncovered(page, focused, focused)


def test_options_popover_and_badges(live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, pages: Pages) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    upload(server.url, {"handbook.md": HANDBOOK})
    wait_ready(server.url, 1)
    r = httpx.put(f"{server.url}/api/preferences", json={"search_mode": "keyword"}, timeout=10)
    assert r.status_code == 200, r.text
    for size in (DESKTOP, PHONE):
        page = new_page(pages, size)
        open_app(page, f"{server.url}/chat")
        button = page.get_by_test_id("options-button")
        expect(button).to_have_attribute("aria-expanded", "false")
        expect(page.get_by_test_id("chat-mode")).to_have_count(0)  # collapsed: no knobs by the message box
        box = page.get_by_test_id("composer").bounding_box()
        assert box and box["height"] < 130, box  # the input and Send, not a quarter of the screen
        # keyboard: open, the focus inside; Escape closes, the focus back on the button
        button.focus()
        page.keyboard.press("Enter")
        panel = page.get_by_role("dialog", name="Search options for this chat")
        expect(panel).to_be_visible()
        expect(page.get_by_test_id("chat-mode")).to_contain_text("Default: Words (keyword)")  # the user's Settings
        assert panel.evaluate("p => p.contains(document.activeElement)")
        uncovered(page, page.get_by_test_id("options-done"), panel)
        if size == PHONE:
            screenshot(page, "phone-options")
        both_themes_clean(page, f"options open at {size}")
        page.get_by_test_id("chat-mode").select_option("vector")
        page.keyboard.press("Escape")
        expect(panel).to_have_count(0)
        expect(button).to_be_focused()
        expect(page.get_by_test_id("options-summary")).to_have_text("Meaning")

        fake_ollama.enqueue(Reply.tool_call("search_documents", {"query": "holiday"}), Reply.text("25 days [1]."))
        ask(page, "How many holiday days?")
        msg = page.locator(ASSISTANT).last
        expect(msg).to_have_attribute("data-status", "complete", timeout=30_000)
        body = fake_ollama.chat_requests[-1]
        assert body, "the model was asked"
        badge = msg.get_by_test_id("search-mode-badge")
        expect(badge).to_have_text("Vector")
        tip = msg.get_by_test_id("search-mode-badge-explained")
        expect(tip).to_be_hidden()
        badge.click()  # a tap explains it, in plain words
        expect(tip).to_be_visible()
        expect(tip).to_contain_text("say the same thing as your question")
        uncovered(page, tip, tip)
        page.keyboard.press("Escape")
        expect(tip).to_be_hidden()
        chip = msg.get_by_test_id("confidence-chip")
        if chip.count():
            chip.hover() if size == DESKTOP else chip.click()
            expect(msg.get_by_test_id("confidence-chip-explained")).to_contain_text("How closely the best passage")
        assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
        both_themes_clean(page, f"chat at {size}")


def test_documents_start_with_documents_on_a_phone(live_app: Any, fake_llm: Any, pages: Pages) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    upload(server.url, {f"note-{n}.txt": f"Note number {n} about the harbour." for n in range(4)})
    wait_ready(server.url, 4)
    page = new_page(pages, PHONE)
    page.goto(server.url + "/documents")
    rows = page.get_by_test_id("document-row")
    expect(rows).to_have_count(4)
    first = rows.first.bounding_box()
    assert first and first["y"] + first["height"] <= PHONE["height"], f"the first document at {first}"
    # uploading is one tap away
    expect(page.get_by_test_id("upload-button")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(page, "phone-documents")
    both_themes_clean(page, "documents on a phone")

    # a duplicate-only upload says so instead of "Done: 0 of 0 ready"
    page.locator('input[type="file"]').set_input_files(
        [
            {
                "name": f"note-{n}.txt",
                "mimeType": "text/plain",
                "buffer": f"Note number {n} about the harbour.".encode(),
            }
            for n in range(2)
        ]
    )
    text = page.get_by_test_id("batch-progress-text")
    expect(text).to_have_text("Already uploaded: all 2 files are in your documents, nothing new to process.")

    page.goto(server.url + "/settings")
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()
    expect(page.get_by_test_id("settings-error")).to_have_count(0)
    page.wait_for_timeout(200)
    screenshot(page, "phone-settings")
    both_themes_clean(page, "settings on a phone")


def test_stale_chat_unavailable_banner_clears_when_the_llm_is_back(live_app: Any, pages: Pages) -> None:
    llm = FakeOllama().start()
    try:
        llm.stop()  # down when the page opens
        server = live_app(ollama_host=llm.url, llm_status_refresh_s=0.5)
        page = new_page(pages, DESKTOP)
        open_app(page, server.url + "/chat", healthy=False)
        banner = page.get_by_test_id("health-banner")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("Chat unavailable")
        llm.start()  # back: the page looks again by itself, no reload
        expect(banner).to_have_count(0, timeout=25_000)
        expect(page.get_by_test_id("options-button")).to_be_visible()
    finally:
        llm.stop()
