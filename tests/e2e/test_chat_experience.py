"""End to end (issue 21): the chat page people expect. The built client in Chromium, the real server, embedded
Postgres, the real MiniLM and the fake Ollama (slow answers where the test needs one in progress).

Answers that survive navigation, reloads and a second tab; Esc stops; the document picker scopes a chat; copy,
regenerate, continue, edit (branches), feedback, export; the citation preview; the character counter; axe-core
with no serious or critical violation. Writes docs/screenshots/chat.png, chat-actions.png, chat-controls.png."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import MOBILE, REPO_ROOT, screenshot, upload, wait_ready, wait_until
from tests.e2e.test_page import HANDBOOK, QUESTION, SEARCH_ARGS, open_app
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.e2e

AXE = REPO_ROOT / "client" / "node_modules" / "axe-core" / "axe.min.js"
ASSISTANT = '[data-testid="message"][data-role="assistant"]'
USER = '[data-testid="message"][data-role="user"]'
CONTENT = '[data-testid="message-content"]'
THREAD_URL = re.compile(r"/chat/[0-9a-f-]{36}$")

RECIPES = """# Team recipes

Grandma's apple cake needs four apples, 200 g of flour and an hour in the oven at 180 degrees.
The office chili is made on Fridays with black beans and smoked paprika.
"""


def slow_words(tag: str, n: int = 40, delay: float = 0.12) -> Reply:
    return Reply.tokens([f" {tag}{i}" for i in range(n)], token_delay=delay)


def serious_axe(page: Any) -> list[str]:
    """axe-core's serious and critical violations (its script evaluated outside the page's CSP), with the pointer
    out of the way and transitions settled."""
    page.mouse.move(1, 1)
    page.wait_for_timeout(300)
    # a loaded machine can still be fading a button in (measured at part opacity): wait for every finite CSS
    # transition or animation to end (spinners, which never end, are left running)
    page.wait_for_function(
        """() => document.getAnimations().every(a => a.playState !== 'running'
               || !isFinite(a.effect ? a.effect.getComputedTiming().endTime : 0))""",
        timeout=10_000,
    )
    page.evaluate(Path(AXE).read_text() + "\n;undefined")
    return page.evaluate(
        """async () => (await axe.run(document)).violations
               .filter(v => v.impact === 'serious' || v.impact === 'critical')
               .map(v => `${v.id}: ${v.help} (${v.nodes.map(n => `${n.html.slice(0, 200)}: ${n.failureSummary}`)})`)"""
    )


def thread_of(page: Any) -> str:
    expect(page).to_have_url(THREAD_URL)
    return page.url.rsplit("/", 1)[-1]


def stored(base: str, thread_id: str) -> dict[str, Any]:
    response = httpx.get(f"{base}/api/threads/{thread_id}", timeout=10)
    response.raise_for_status()
    return response.json()


def ask(page: Any, question: str) -> None:
    box = page.get_by_test_id("composer-input")
    box.fill(question)
    page.get_by_test_id("send-button").click()


def test_answers_survive_navigation_reload_and_a_second_tab(
    live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, page: Any
) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    upload(server.url, {"handbook.md": HANDBOOK})
    wait_ready(server.url, 1)
    fake_ollama.responder = lambda body: Reply.text("A default answer.")

    # 1. Leave for Documents mid-answer, come back to Chat: the same thread, the whole answer.
    fake_ollama.enqueue(Reply.tool_call("search_documents", SEARCH_ARGS), slow_words("nav", 30, 0.1))
    open_app(page, server.url)
    ask(page, QUESTION)
    msg = page.locator(ASSISTANT).last
    expect(msg.locator(CONTENT)).to_contain_text("nav2")
    expect(page.get_by_test_id("chat-live")).to_have_text("Generating an answer.")
    assert serious_axe(page) == [], "axe while an answer streams"
    thread_id = thread_of(page)
    page.get_by_role("link", name="Documents", exact=True).click()
    expect(page).to_have_url(re.compile(r"/documents"))
    page.wait_for_timeout(500)
    page.get_by_role("link", name="Chat", exact=True).click()
    expect(page).to_have_url(re.compile(f"/chat/{thread_id}$"))
    msg = page.locator(ASSISTANT).last
    expect(msg).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(msg.locator(CONTENT)).to_contain_text("nav0 nav1")
    expect(msg.locator(CONTENT)).to_contain_text("nav29")
    expect(page.locator(ASSISTANT)).to_have_count(1)
    saved = stored(server.url, thread_id)["messages"][-1]
    assert saved["status"] == "complete" and "nav29" in saved["content"], saved
    expect(page).to_have_title(re.compile(re.escape(QUESTION[:20])))

    # 2. Reload mid-answer: the page re-attaches and shows the answer to its end.
    fake_ollama.enqueue(Reply.tool_call("search_documents", SEARCH_ARGS), slow_words("re", 30, 0.1))
    ask(page, "And how many can I carry over?")
    msg = page.locator(ASSISTANT).last
    expect(msg.locator(CONTENT)).to_contain_text("re3")
    page.reload()
    msg = page.locator(ASSISTANT).last
    expect(msg).to_have_attribute("data-status", "streaming")
    expect(msg).to_have_attribute("data-status", "complete", timeout=20_000)
    text = msg.locator(CONTENT).inner_text()
    answer = text.split("⚠")[0]  # an uncited answer carries its "no source" note after it
    assert text.startswith("re0 re1 re2") and answer.rstrip().endswith("re29"), text
    assert text.count("re5 ") == 1, "replayed tokens were shown twice"

    # 3. Two tabs on the thread: both show the answer in progress; the second's question gets the busy message.
    other = page.context.new_page()
    other.goto(f"{server.url}/chat/{thread_id}")
    expect(other.locator(ASSISTANT)).to_have_count(2)
    fake_ollama.enqueue(Reply.tool_call("search_documents", SEARCH_ARGS), slow_words("two", 60, 0.12))
    ask(page, "What about part-time staff?")
    expect(page.locator(ASSISTANT).last.locator(CONTENT)).to_contain_text("two2")
    other_msg = other.locator(ASSISTANT).nth(2)
    expect(other_msg).to_have_attribute("data-status", "streaming", timeout=10_000)
    expect(other_msg.locator(CONTENT)).to_contain_text("two4")
    box = other.get_by_test_id("composer-input")
    expect(box).to_be_enabled()
    box.fill("A parallel question")
    other.get_by_test_id("send-button").click()
    expect(other.get_by_test_id("composer-notice")).to_contain_text("An answer is being generated")
    expect(box).to_have_value("A parallel question")
    expect(other.locator(USER)).to_have_count(3)

    # 4. Esc stops it (in the first tab); both tabs end with the stopped answer; the draft stays.
    page.get_by_test_id("composer-input").fill("my next draft")
    page.keyboard.press("Escape")
    msg = page.locator(ASSISTANT).last
    expect(msg).to_have_attribute("data-status", "incomplete")
    expect(msg.get_by_test_id("message-incomplete")).to_be_visible()
    expect(page.get_by_test_id("composer-input")).to_have_value("my next draft")
    expect(page.get_by_test_id("composer-input")).to_be_focused()
    expect(other_msg).to_have_attribute("data-status", "incomplete", timeout=10_000)
    saved = stored(server.url, thread_id)
    assert saved["messages"][-1]["status"] == "incomplete"
    assert not saved.get("running_message_id")
    expect(page.get_by_test_id("edit-message").last).to_be_enabled()  # the page has left its running state
    assert serious_axe(page) == [], "axe after Stop"

    # 5. A thread created in one tab appears in the other's list.
    fake_ollama.enqueue(Reply.tool_call("search_documents", SEARCH_ARGS), Reply.text("Thirty minutes [1]."))
    other.get_by_test_id("new-thread").click()
    ask(other, "How long is lunch?")
    expect(other.locator(ASSISTANT).last).to_have_attribute("data-status", "complete")
    expect(page.get_by_test_id("thread-item")).to_have_count(2)


def test_picker_actions_preview_and_counter(live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, pages: Any) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    results = upload(server.url, {"handbook.md": HANDBOOK, "recipes.md": RECIPES})
    wait_ready(server.url, 2)
    recipes_id = next(r["document"]["id"] for r in results if r["filename"] == "recipes.md")
    fake_ollama.responder = lambda body: Reply.text("A default answer.")
    page = pages.new(viewport={"width": 1280, "height": 1000}, permissions=["clipboard-read", "clipboard-write"])

    # The viewer's "Ask about this document": the chat is scoped to it (chip), and the search returns only it.
    fake_ollama.enqueue(
        Reply.tool_call("search_documents", {"query": "holiday days apples"}),
        Reply.text("Use **four apples** [1].\n\n```python\ndef bake(apples: int) -> str:\n    return 'cake'\n```"),
    )
    open_app(page, f"{server.url}/chat?document={recipes_id}")
    # The options are one button by the message box; what differs from the defaults shows as a chip.
    expect(page.get_by_test_id("options-summary")).to_have_text("1 document")
    page.get_by_test_id("options-button").click()
    chip = page.get_by_test_id("scope-chip")
    expect(chip).to_have_count(1)
    expect(chip).to_contain_text("recipes")
    page.get_by_test_id("chat-mode").select_option("keyword")
    expect(page.get_by_test_id("chat-model").locator("option")).not_to_have_count(1)
    page.get_by_test_id("scope-button").click()
    page.get_by_test_id("scope-search").fill("hand")
    expect(page.get_by_test_id("scope-option")).to_have_count(1)
    expect(page.get_by_test_id("scope-option")).to_contain_text("handbook")
    assert serious_axe(page) == [], "axe with the picker open"
    screenshot(page, "chat-controls")
    page.get_by_test_id("scope-done").click()
    expect(chip).to_have_count(1)
    page.get_by_test_id("options-done").click()
    expect(page.get_by_test_id("options-summary")).to_have_text("1 document · Keyword")
    ask(page, "How many apples go into the cake?")
    msg = page.locator(ASSISTANT).last
    expect(msg).to_have_attribute("data-status", "complete", timeout=20_000)
    thread_id = thread_of(page)
    detail = stored(server.url, thread_id)
    chunks = [c for r in detail["messages"][-1]["tool_results"] for c in r["chunks"]]
    assert chunks and {c["document_id"] for c in chunks} == {recipes_id}, chunks
    assert detail.get("settings", {}).get("document_ids") == [recipes_id], detail.get("settings")

    # Code: highlighted, with a copy button; the message's copy button.
    code = msg.locator("pre code.hljs.language-python")
    expect(code.locator(".hljs-keyword").first).to_have_text("def")
    msg.get_by_test_id("code-copy").click()
    assert page.evaluate("navigator.clipboard.readText()").startswith("def bake(apples: int)")
    msg.get_by_test_id("copy-message").click()
    expect(msg.get_by_test_id("copy-message")).to_have_text("Copied")
    assert "four apples" in page.evaluate("navigator.clipboard.readText()")

    # The citation preview: in place, no scroll, links to the viewer.
    before = page.evaluate("document.querySelector('.messages-scroll').scrollTop")
    msg.get_by_test_id("citation").first.hover()
    pop = msg.get_by_test_id("cite-popover")
    expect(pop).to_be_visible()
    expect(pop.get_by_test_id("cite-popover-passage")).to_contain_text("apple")
    href = pop.get_by_test_id("cite-popover-open").get_attribute("href") or ""
    assert href.startswith(f"/documents/{recipes_id}?chunk="), href
    assert page.evaluate("document.querySelector('.messages-scroll').scrollTop") == before
    expect(msg.get_by_test_id("source-list")).to_have_count(0)
    page.mouse.move(5, 5)
    expect(pop).to_have_count(0)
    msg.get_by_test_id("citation").first.click()  # a click (a tap) pins it, and its link takes the focus
    expect(pop.get_by_test_id("cite-popover-open")).to_be_focused()
    assert serious_axe(page) == [], "axe with the citation preview open"
    expect(pop).to_be_visible()
    page.keyboard.press("Escape")
    expect(pop).to_have_count(0)
    expect(msg.get_by_test_id("citation").first).to_be_focused()

    # Feedback with a note, stored.
    msg.get_by_test_id("thumbs-up").click()
    msg.get_by_test_id("feedback-note").fill("exactly right")
    msg.get_by_test_id("feedback-save").click()
    wait_until(
        lambda: (stored(server.url, thread_id)["messages"][-1].get("feedback") or {}).get("note") == "exactly right",
        10,
        "the stored feedback",
    )
    expect(msg.get_by_test_id("thumbs-up")).to_have_attribute("aria-pressed", "true")

    # Regenerate: a second answer, "2/2", and back to the first.
    fake_ollama.enqueue(Reply.tool_call("search_documents", {"query": "apples"}), Reply.text("Four apples, again [1]."))
    msg.get_by_test_id("regenerate").click()
    msg = page.locator(ASSISTANT).last
    expect(msg).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(msg.locator(CONTENT)).to_contain_text("Four apples, again")
    expect(msg.get_by_test_id("sibling-position")).to_have_text("2/2")
    msg.get_by_test_id("sibling-prev").click()
    expect(page.locator(ASSISTANT).last.locator(CONTENT)).to_contain_text("Use four apples")
    expect(page.locator(ASSISTANT).last.get_by_test_id("sibling-position")).to_have_text("1/2")

    # Edit the question: a new branch of the question ("2/2" on it) with its own answer.
    fake_ollama.enqueue(Reply.tool_call("search_documents", {"query": "chili"}), Reply.text("Chili is on Fridays [1]."))
    question = page.locator(USER).last
    question.get_by_test_id("edit-message").click()
    question.get_by_test_id("edit-input").fill("When is the chili made?")
    question.get_by_test_id("edit-send").click()
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(page.locator(USER).last.locator(CONTENT)).to_have_text("When is the chili made?")
    expect(page.locator(USER).last.get_by_test_id("sibling-position")).to_have_text("2/2")

    # Stop mid-answer, then Continue: the same message grows.
    fake_ollama.enqueue(Reply.tool_call("search_documents", {"query": "oven"}), slow_words("part", 60, 0.1))
    ask(page, "How hot is the oven?")
    msg = page.locator(ASSISTANT).last
    expect(msg.locator(CONTENT)).to_contain_text("part2")
    page.get_by_test_id("stop-button").click()
    expect(msg).to_have_attribute("data-status", "incomplete")
    expect(msg.get_by_test_id("continue")).to_be_enabled()
    partial = len(msg.locator(CONTENT).inner_text())
    fake_ollama.enqueue(Reply.text(" and the rest."))
    msg.get_by_test_id("continue").click()
    expect(msg).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(msg.locator(CONTENT)).to_contain_text("and the rest.")
    assert len(msg.locator(CONTENT).inner_text()) > partial
    expect(page.locator(ASSISTANT)).to_have_count(2)
    screenshot(page, "chat-actions")

    # Export: Markdown and JSON downloads with the thread's questions.
    page.get_by_test_id("export-button").click()
    with page.expect_download() as info:
        page.get_by_test_id("export-markdown").click()
    download = info.value
    assert download.suggested_filename.endswith(".md"), download.suggested_filename
    assert "How hot is the oven?" in Path(download.path()).read_text()
    page.get_by_test_id("export-button").click()
    with page.expect_download() as info:
        page.get_by_test_id("export-json").click()
    assert info.value.suggested_filename.endswith(".json")

    # The character counter warns before the limit and Send is disabled over it; the text is kept.
    box = page.get_by_test_id("composer-input")
    box.fill("x" * 7000)
    expect(page.get_by_test_id("char-count")).to_contain_text("7,000 / 8,000")
    box.fill("y" * 8100)
    expect(page.get_by_test_id("char-count")).to_contain_text("100 too many")
    expect(page.get_by_test_id("send-button")).to_be_disabled()
    box.press("Enter")
    expect(box).to_have_value("y" * 8100)
    assert serious_axe(page) == [], "axe over the limit"
    box.fill("")

    # Targets are at least 24 px.
    small = page.evaluate(
        """() => [...document.querySelectorAll('.chat-main button, .chat-main a, .chat-main select')]
              .filter(e => e.offsetParent !== null && !e.closest('.markdown p, .markdown li'))
              .map(e => [e.dataset.testid || e.textContent.trim().slice(0, 20), e.getBoundingClientRect()])
              .filter(([, r]) => r.width < 24 || r.height < 24).map(([n, r]) => `${n} ${r.width}x${r.height}`)"""
    )
    assert small == [], small

    # The thread page, for the README.
    page.locator(ASSISTANT).first.get_by_test_id("citation").first.click()
    page.wait_for_timeout(200)
    screenshot(page, "chat")

    # On a phone the controls and actions wrap: nothing is wider than the screen.
    page.set_viewport_size(MOBILE)
    page.wait_for_timeout(200)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= MOBILE["width"], f"the chat page is {width} px wide on a phone"
