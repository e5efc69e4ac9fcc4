"""Browser tests for issue 35 items 3, 6 and 7: "Not in your documents" (scripted with the fake LLM) and widening a
scoped chat, the answer-only-from-documents refusal, search facets folded with the first result in view, a thread
titled from its first exchange, and axe on every page in both themes at desktop and phone sizes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from ragchat.chat.engine.coverage import REFUSAL
from tests.e2e.conftest import DESKTOP, Pages, screenshot, wait_ready, wait_until
from tests.e2e.test_phone_and_documents import HANDBOOK, PHONE, _put, axe_violations
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.e2e

OFF_TOPIC = Reply.tool_call("search_documents", {"query": "semiconductor export tariffs Brazil"})
QUESTION = "What were the semiconductor export tariffs in Brazil last quarter?"


def _handbooks(url: str, n: int = 2) -> list[str]:
    ids = [
        _put(url, f"handbook-{i}.md", HANDBOOK.replace("Staff", f"Staff {i}"), {"team": f"Team {i}"}) for i in range(n)
    ]
    wait_ready(url, n)
    return ids


def _ask(page: Any, text: str) -> None:
    page.get_by_test_id("composer-input").fill(text)
    page.get_by_test_id("send-button").click()


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_not_in_your_documents_and_search_all(
    live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, pages: Pages, size: dict[str, int]
) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    ids = _handbooks(server.url)
    phone = size == PHONE
    page = pages.new(viewport=size, is_mobile=phone, has_touch=phone)
    page.goto(f"{server.url}/chat?document={ids[0]}")  # a chat scoped to one document
    expect(page.get_by_test_id("options-summary")).to_have_text("1 document")
    fake_ollama.enqueue(OFF_TOPIC, "Your documents don't cover export tariffs.")
    _ask(page, QUESTION)
    answer = page.get_by_test_id("message").filter(has=page.get_by_test_id("tool-indicator")).last
    expect(answer).to_have_attribute("data-status", "complete")
    note = answer.get_by_test_id("not-covered")
    expect(note).to_contain_text("Not in your documents.")
    expect(answer.get_by_test_id("confidence-chip")).to_have_attribute("data-label", "insufficient")
    widen = answer.get_by_test_id("widen-scope")
    expect(widen).to_have_text("Search all my documents")
    widen.scroll_into_view_if_needed()
    expect(widen).to_be_in_viewport()
    for theme in ("light", "dark"):
        page.evaluate("t => { document.documentElement.dataset.theme = t }", theme)
        assert axe_violations(page) == [], theme
    if not phone:
        page.evaluate("() => { document.documentElement.dataset.theme = 'light' }")
        screenshot(page, "chat-not-covered")

    # Search all my documents: the scope is cleared and the question answered again over everything.
    fake_ollama.enqueue(OFF_TOPIC, "None of your documents mention export tariffs.")
    widen.click()
    expect(page.get_by_test_id("options-summary")).to_have_count(0)
    expect(page.get_by_test_id("sibling-switcher")).to_be_visible()
    last = page.get_by_test_id("message").last
    expect(last).to_have_attribute("data-status", "complete")
    expect(last.get_by_test_id("not-covered")).to_be_visible()
    expect(last.get_by_test_id("widen-scope")).to_have_count(0)  # nothing wider to search
    thread = httpx.get(f"{server.url}/api/threads").json()["threads"][0]
    assert not thread["settings"].get("document_ids")


def test_answer_only_from_documents_refuses(
    live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, pages: Pages
) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    _handbooks(server.url, 1)
    page = pages.new(viewport=DESKTOP)
    # the user's preference, on the Settings page
    page.goto(f"{server.url}/settings")
    page.get_by_test_id("set-documents-only").check()
    page.get_by_test_id("settings-save").click()
    wait_until(lambda: httpx.get(f"{server.url}/api/preferences").json()["values"]["documents_only"], 10, "saved")

    page.goto(f"{server.url}/chat")
    fake_ollama.enqueue(OFF_TOPIC, "Brazil's tariffs were 12 percent.")  # never asked for: the answer is refused
    _ask(page, QUESTION)
    answer = page.get_by_test_id("message").last
    expect(answer).to_have_attribute("data-status", "complete")
    expect(answer.get_by_test_id("message-content")).to_have_text(REFUSAL)
    expect(answer.get_by_test_id("not-covered")).to_be_visible()
    assert len(fake_ollama.chat_requests) == 1 and fake_ollama.pending_replies == 1

    # the thread overrides it: the model may answer (and the page still says nothing matched)
    page.get_by_test_id("options-button").click()
    page.get_by_test_id("chat-documents-only").select_option("answer")
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("options-summary")).to_contain_text("May answer beyond documents")
    fake_ollama.reset()
    fake_ollama.enqueue(OFF_TOPIC, "I found nothing about tariffs in your documents.")
    _ask(page, QUESTION)
    last = page.get_by_test_id("message").last
    expect(last).to_have_attribute("data-status", "complete")
    said = "I found nothing about tariffs in your documents."
    expect(last.get_by_test_id("message-content")).to_have_text(said)  # no "no source" mark
    sent = [r for r in fake_ollama.chat_requests if r.tool_names]
    assert sent and fake_ollama.pending_replies == 0


@pytest.mark.parametrize("size", [{"width": 1280, "height": 800}, PHONE], ids=["desktop-800", "phone"])
def test_facets_are_folded_and_the_first_result_is_in_view(
    live_app: Any, fake_llm: Any, pages: Pages, size: dict[str, int]
) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    meta = {"subject": "Ports", "year": "2024", "region": "North", "owner_team": "Harbour", "status": "final"}
    for n in range(4):
        _put(
            server.url, f"harbour-{n}.txt", f"Harbour dredging minutes number {n}: the channel is 9 metres deep.", meta
        )
    _put(server.url, "tides.csv", "month,high tide\nMarch,4.2\nApril,4.0\n", {"subject": "Tides"})
    _put(server.url, "talk.vtt", "WEBVTT\n\n00:00:01.000 --> 00:00:04.000\nThe harbour dredging starts in May.\n", {})
    wait_ready(server.url, 6)
    phone = size == PHONE
    page = pages.new(viewport=size, is_mobile=phone, has_touch=phone)
    page.goto(f"{server.url}/search?q=harbour+dredging")
    first = page.get_by_test_id("search-result").first
    expect(first).to_be_visible()
    details = page.get_by_test_id("facet-details")
    expect(details).not_to_have_attribute("open", "")
    expect(page.get_by_test_id("facets-toggle")).to_contain_text("Filter by metadata")
    box = first.bounding_box()
    assert box is not None and box["y"] + min(box["height"], 80) <= size["height"], box  # the first result shows
    keys = page.get_by_test_id("facet-group").evaluate_all("els => els.map(e => e.dataset.key)")
    assert "subject" in keys and not {"encoding", "delimiter", "cues", "duration_s", "page_count"} & set(keys), keys
    for theme in ("light", "dark"):
        page.evaluate("t => { document.documentElement.dataset.theme = t }", theme)
        assert axe_violations(page) == [], theme
    page.get_by_test_id("facets-toggle").click()
    page.locator("[data-testid=facet-chip][data-key=subject][data-value=Tides]").click()
    expect(page.get_by_test_id("facet-active")).to_have_count(1)
    expect(page.get_by_test_id("search-result")).to_have_count(1)
    assert axe_violations(page) == []
    if not phone:
        page.evaluate("() => { document.documentElement.dataset.theme = 'light' }")
        page.goto(f"{server.url}/search?q=harbour+dredging")  # folded again on a new visit
        expect(page.get_by_test_id("facets-toggle")).to_contain_text("5 properties")
        expect(page.get_by_test_id("search-result").nth(3)).to_be_visible()
        screenshot(page, "search-facets-folded")


def test_a_thread_is_titled_from_its_first_exchange(
    live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, pages: Pages
) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1, chat_title_generation=True)
    _handbooks(server.url, 1)
    page = pages.new(viewport=PHONE, is_mobile=True, has_touch=True)
    page.goto(f"{server.url}/chat")
    fake_ollama.enqueue(
        Reply.tool_call("search_documents", {"query": "holiday allowance"}),
        "Every full-time employee gets 25 days of paid holiday [1].",
        Reply.json({"title": "Holiday allowance"}),
    )
    _ask(page, "How many days of paid holiday does a full-time employee get each year, not counting public ones?")
    expect(page.get_by_test_id("message").last).to_have_attribute("data-status", "complete")
    expect(page.get_by_test_id("chat-title")).to_have_text("Holiday allowance", timeout=15_000)
    page.get_by_test_id("menu-button").click()
    expect(page.get_by_test_id("thread-item").first).to_contain_text("Holiday allowance")
    assert fake_ollama.pending_replies == 0


PAGES = ["/chat", "/documents", "/search?q=holiday", "/collections", "/settings", "/account", "/evaluate", "/admin"]


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_axe_on_every_page(live_app: Any, fake_llm: Any, pages: Pages, size: dict[str, int]) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    _handbooks(server.url, 1)
    collection = httpx.post(f"{server.url}/api/collections", json={"name": "Research"}).json()["id"]
    phone = size == PHONE
    page = pages.new(viewport=size, is_mobile=phone, has_touch=phone)
    found: dict[str, list[str]] = {}
    for path in [*PAGES, f"/collections/{collection}"]:
        page.goto(server.url + path)
        page.wait_for_load_state("networkidle")
        if path.startswith("/collections/"):
            page.get_by_test_id("collection-doc-picker-search").fill("hand")  # the picker open, with an option
            expect(page.get_by_test_id("collection-doc-picker-option")).to_have_count(1)
        for theme in ("light", "dark"):
            page.evaluate("t => { document.documentElement.dataset.theme = t }", theme)
            # painted in the theme (two frames; on a busy machine 50 ms were not always enough), and still in it
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            page.wait_for_timeout(50)
            assert page.evaluate("() => document.documentElement.dataset.theme") == theme
            violations = axe_violations(page)
            if violations:
                found[f"{path} ({theme})"] = violations
    assert found == {}
