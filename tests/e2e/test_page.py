"""End to end: the built web client in Chromium against the real server, embedded Postgres and a fake Ollama."""

from __future__ import annotations

import json
import re
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import MOBILE, Pages, screenshot, upload, wait_ready, wait_until
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.e2e

HANDBOOK = """# Staff handbook

## Holidays

Every full-time employee gets 25 days of paid holiday per calendar year, plus public holidays.
Part-time staff get a pro-rata share of the 25 days. Up to 5 unused holiday days can be carried
over into the next year; they must be taken before the end of March or they are lost. Book holidays
in the HR portal at least two weeks in advance and tell your team lead.

## Remote work

You may work from home up to three days a week. Core hours are 10:00 to 15:00 in your local time
zone; be reachable on chat during core hours. The company pays a one-off home office allowance of
400 euros for a desk, a chair or a monitor.

## Expenses

Travel must be booked through the travel desk. Train journeys under six hours are preferred over
flights. Submit receipts within 30 days in the expenses tool; meals are reimbursed up to 35 euros a day.

## Sick leave

If you are ill, tell your team lead before 10:00 on the first day. From the fourth day of illness a
doctor's note is needed. Sick days do not count against your holiday allowance.
"""

# Tokens of the scripted answer; " [1" + "]" arrive separately, so the citation only forms mid-stream.
ANSWER_TOKENS = [
    "Full",
    "-time",
    " employees",
    " get",
    " **25",
    " days**",
    " of",
    " paid",
    " holiday",
    " per",
    " calendar",
    " year",
    " [1",
    "].",
    " Up",
    " to",
    " 5",
    " unused",
    " days",
    " can",
    " be",
    " carried",
    " over",
    ",",
    " but",
    " they",
    " must",
    " be",
    " taken",
    " before",
    " the",
    " end",
    " of",
    " March",
    " [1",
    "].",
]
ANSWER_TEXT = "".join(ANSWER_TOKENS)
QUESTION = "How many holiday days do I get?"
SEARCH_ARGS = {"query": "annual paid holiday days"}

XSS_NOTE = (
    "Security test note\n\n"
    "This inert snippet must never run in the browser: "
    '<img src=x onerror="window.__xss=1"> and <script>window.__xss=2</script> end of the payload.\n'
)

TALL = {"width": 1280, "height": 1200}
MSG = '[data-testid="message"]'
ASSISTANT = '[data-testid="message"][data-role="assistant"]'
CONTENT = '[data-testid="message-content"]'


def assistant(page: Any) -> Any:
    return page.locator(ASSISTANT).last


def show_in_sources(msg: Any, citation: Any) -> None:
    """Click [n]: its passage is previewed in place; the preview's "Show in sources" opens that source card."""
    citation.click()
    msg.get_by_test_id("cite-popover").get_by_test_id("cite-popover-sources").click()


def open_app(page: Any, url: str, *, healthy: bool = True) -> dict[str, Any]:
    """Open a page and wait for its first health check; a healthy server shows no banner."""
    with page.expect_response(lambda r: urlsplit(r.url).path == "/api/health") as info:
        page.goto(url)
    health = info.value.json()
    if healthy:
        assert health["llm"]["reachable"] and health["llm"]["model_available"], health
        page.wait_for_timeout(50)
        expect(page.get_by_test_id("health-banner")).to_have_count(0)
    return health


def ask(page: Any, question: str) -> None:
    box = page.get_by_test_id("composer-input")
    expect(box).to_be_enabled()
    box.fill(question)
    page.get_by_test_id("send-button").click()


def ask_via_api(base_url: str, question: str) -> str:
    """Ask through POST /api/chat (SSE) and read the stream to its end; returns the thread id."""
    thread_id, last = None, None
    with httpx.stream("POST", f"{base_url}/api/chat", json={"message": question}, timeout=30) as response:
        assert response.status_code == 200, response.read()
        event = None
        for line in response.iter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event:
                data = json.loads(line.split(":", 1)[1])
                if event == "thread":
                    thread_id = data["thread_id"]
                last = event
    assert last == "done", f"the stream ended with {last!r}"
    assert thread_id
    return thread_id


def no_horizontal_overflow(page: Any, width: int) -> None:
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    if scroll_width > width:
        wide = page.evaluate(
            """(w) => [...document.querySelectorAll('body *')]
                 .filter(e => e.getBoundingClientRect().right > w + 0.5)
                 .slice(0, 5).map(e => `${e.tagName}.${e.className} (${e.dataset.testid || ''})
                   right=${Math.round(e.getBoundingClientRect().right)}`)""",
            width,
        )
        raise AssertionError(f"{page.url}: scrollWidth {scroll_width} > {width}; widest elements: {wide}")


def xss_clean(page: Any) -> None:
    assert page.evaluate("typeof window.__xss") == "undefined", "an injected script ran"
    assert page.locator("img[onerror]").count() == 0
    assert page.locator(f"{CONTENT} script, {CONTENT} img, [data-testid=source-passage] img").count() == 0


# ---------------------------------------------------------------------------------------------------------------
# 0. The server serves the built client so that a browser renders it


def test_server_serves_the_client(live_app: Any) -> None:
    server = live_app()
    problems: list[str] = []

    def check(path: str, want: str) -> httpx.Response:
        r = httpx.get(server.url + path, timeout=10)
        ctype = r.headers.get("content-type", "")
        disposition = r.headers.get("content-disposition", "")
        if r.status_code != 200 or not ctype.startswith(want) or disposition.startswith("attachment"):
            problems.append(f"GET {path}: {r.status_code} {ctype!r} {disposition!r} (want 200 {want}, not attachment)")
        return r

    check("/", "text/html")
    for path in ("/documents", "/search?q=x", "/chat/00000000-0000-0000-0000-000000000000", "/no/such/page"):
        check(path, "text/html")
    index = httpx.get(f"{server.url}/index.html", timeout=10).text
    assets = re.findall(r'(?:src|href)="(/assets/[^"]+)"', index)
    assert any(a.endswith(".js") for a in assets), index
    for asset in assets:
        check(asset, "text/javascript" if asset.endswith(".js") else "text/css")
    api = httpx.get(f"{server.url}/api/no-such-route", timeout=10)
    assert api.status_code == 404 and api.headers["content-type"].startswith("application/json")
    assert not problems, "the web client is not served correctly:\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------------------------------
# 1. Documents page: upload, ingestion, duplicates and rejected files


def test_upload_document_becomes_ready(live_app: Any, fake_llm: Any, page: Any) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    page.goto(f"{server.url}/documents")
    expect(page.get_by_test_id("nav-documents")).to_have_attribute("aria-current", "page")
    expect(page.get_by_test_id("documents-empty")).to_be_visible()

    page.get_by_test_id("upload-input").set_input_files(
        [
            {"name": "handbook.md", "mimeType": "text/markdown", "buffer": HANDBOOK.encode()},
            {"name": "security-note.txt", "mimeType": "text/plain", "buffer": XSS_NOTE.encode()},
        ]
    )
    rows = page.get_by_test_id("document-row")
    expect(rows).to_have_count(2)
    for i in range(2):
        expect(rows.nth(i)).to_have_attribute("data-status", "ready", timeout=30_000)
        expect(rows.nth(i).get_by_test_id("document-status")).to_have_text("Ready")
        expect(rows.nth(i).get_by_test_id("document-progress")).to_have_count(0)
    handbook = rows.filter(has_text="Staff handbook")
    expect(handbook.get_by_test_id("document-title")).to_have_text("Staff handbook")
    expect(handbook.get_by_test_id("document-chunks")).to_have_text(re.compile(r"^\d+ chunks?$"))
    assert page.evaluate("typeof window.__xss") == "undefined"
    screenshot(page, "documents-upload")

    # The same file again is a duplicate; an unsupported one is rejected with a reason.
    page.get_by_test_id("upload-input").set_input_files(
        [
            {"name": "handbook.md", "mimeType": "text/markdown", "buffer": HANDBOOK.encode()},
            {"name": "tool.exe", "mimeType": "application/octet-stream", "buffer": b"MZ\x90\x00"},
        ]
    )
    results = page.get_by_test_id("upload-result")
    expect(results).to_have_count(2)
    expect(page.locator('[data-testid="upload-result"][data-status="duplicate"]')).to_contain_text("already uploaded")
    expect(page.locator('[data-testid="upload-result"][data-status="rejected"]')).to_contain_text("tool.exe")
    expect(rows).to_have_count(2)

    # Still there after a reload (the list comes from the server).
    page.reload()
    expect(page.get_by_test_id("document-row")).to_have_count(2)
    expect(page.locator('[data-testid="document-row"][data-status="ready"]')).to_have_count(2)


# ---------------------------------------------------------------------------------------------------------------
# 2. Chat: tool indicator, streaming, sources, citations, reload


def test_chat_streams_answer_with_sources_and_citations(
    live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, pages: Pages, page: Any
) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    upload(server.url, {"handbook.md": HANDBOOK})
    wait_ready(server.url, 1)
    fake_ollama.enqueue(
        Reply.tool_call("search_documents", SEARCH_ARGS),
        # the model "thinks" 0.4 s after the search, then streams
        Reply.hang(0.4, then=Reply.tokens(ANSWER_TOKENS, token_delay=0.05)),
    )

    open_app(page, server.url)
    expect(page.get_by_test_id("empty-chat")).to_be_visible()
    expect(page.get_by_test_id("threads-empty")).to_be_visible()
    ask(page, QUESTION)

    # Tokens arrive progressively: sample the answer's length while it streams.
    msg = assistant(page)
    lengths: list[int] = []
    saw_streaming = saw_stop_button = saw_thinking = False
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        state = page.evaluate(
            """() => {
                const m = [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].pop();
                const c = m?.querySelector('[data-testid="message-content"]');
                const tool = m?.querySelector('[data-testid="tool-indicator"]');
                return {status: m?.dataset.status ?? null, len: c ? c.textContent.length : 0,
                        stop: !!document.querySelector('[data-testid="stop-button"]'),
                        thinking: !!m?.querySelector('[data-testid="thinking"], [data-testid="reading"]')
                                  && tool?.dataset.status === "done"};
            }"""
        )
        saw_streaming |= state["status"] == "streaming"
        saw_stop_button |= state["stop"]
        saw_thinking |= state["thinking"] and not state["len"]
        if state["len"] and (not lengths or lengths[-1] != state["len"]):
            lengths.append(state["len"])
        if state["status"] not in (None, "streaming"):
            break
        time.sleep(0.02)
    expect(msg).to_have_attribute("data-status", "complete")
    assert saw_streaming and saw_stop_button
    assert saw_thinking, "no typing dots or reading note between the search result and the first token"
    assert len(lengths) >= 5, f"the answer did not grow token by token: {lengths}"
    assert lengths == sorted(lengths), lengths

    # URL now names the thread; the sidebar lists it.
    expect(page).to_have_url(re.compile(r"/chat/[0-9a-f-]{36}$"))
    thread_url = page.url
    expect(page.get_by_test_id("thread-item")).to_have_count(1)
    expect(page.get_by_test_id("thread-item")).to_have_attribute("data-active", "true")
    expect(page.get_by_test_id("chat-title")).to_have_text(QUESTION)
    expect(page.get_by_test_id("stop-button")).to_have_count(0)
    expect(page.get_by_test_id("message-list")).to_have_attribute("aria-busy", "false")

    # The tool indicator, the badge and the rendered answer.
    tool = msg.get_by_test_id("tool-indicator")
    expect(tool).to_have_attribute("data-status", "done")
    summary = msg.get_by_test_id("tool-summary")
    expect(summary).to_have_text(re.compile(r"^Found \d+ relevant chunks?$"))
    n_chunks = int(summary.inner_text().split()[1])
    assert n_chunks >= 2
    expect(msg.get_by_test_id("search-mode-badge")).to_have_text("Hybrid")
    content = msg.locator(CONTENT)
    expect(content).to_contain_text("25 days of paid holiday")
    expect(content.locator("strong")).to_have_text("25 days")
    citations = content.get_by_test_id("citation")
    expect(citations).to_have_count(2)
    expect(citations.first).to_have_attribute("data-cite", "1")
    answer_text = content.inner_text()
    assert "[1]" in answer_text and "**" not in answer_text

    # Open the sources, then one card.
    toggle = msg.get_by_test_id("sources-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    cards = msg.get_by_test_id("source-card")
    expect(cards).to_have_count(n_chunks)
    first = msg.locator('[data-testid="source-card"][data-index="1"]')
    expect(first.get_by_test_id("source-title")).to_have_text("Staff handbook")
    expect(first.get_by_test_id("source-passage")).to_contain_text("25 days of paid holiday")
    expect(first.get_by_test_id("score-label")).to_have_text("Hybrid score")
    expect(first.get_by_test_id("score-value")).to_have_text(re.compile(r"^\d{1,3}%$"))
    second = msg.locator('[data-testid="source-card"][data-index="2"]')
    second.get_by_test_id("source-card-toggle").click()
    expect(second).to_have_attribute("data-expanded", "true")
    second.get_by_test_id("why-toggle").click()
    expect(second.get_by_test_id("chunk-trace")).to_contain_text("Vector rank")

    # Collapse the list; clicking [1] previews passage 1 in place, and "Show in sources" opens the list, expands
    # card 1 and brings it into view.
    toggle.click()
    expect(msg.get_by_test_id("source-list")).to_have_count(0)
    show_in_sources(msg, citations.first)
    expect(msg.get_by_test_id("source-list")).to_be_visible()
    expect(first).to_have_attribute("data-expanded", "true")
    expect(first).to_be_in_viewport()
    expect(first).to_be_focused()

    # What the model was sent: the tool, then the numbered passages.
    chat_calls = fake_ollama.chat_requests
    assert len(chat_calls) == 2
    assert chat_calls[0].body["tools"][0]["function"]["name"] == "search_documents"
    assert any(m["role"] == "tool" and "[1]" in m["content"] for m in chat_calls[1].messages)

    # Reload the thread URL: answer, badge and sources come back from the server.
    page.reload()
    msg = assistant(page)
    expect(msg).to_have_attribute("data-status", "complete")
    expect(page.locator(MSG)).to_have_count(2)
    expect(page.locator('[data-testid="message"][data-role="user"]').locator(CONTENT)).to_have_text(QUESTION)
    expect(msg.locator(CONTENT)).to_have_text(answer_text)
    expect(msg.get_by_test_id("search-mode-badge")).to_have_text("Hybrid")
    expect(msg.get_by_test_id("tool-summary")).to_have_text(summary.inner_text())
    show_in_sources(msg, msg.get_by_test_id("citation").first)
    expect(msg.get_by_test_id("source-card")).to_have_count(n_chunks)
    expect(msg.locator('[data-testid="source-card"][data-index="1"]')).to_have_attribute("data-expanded", "true")
    page.set_viewport_size(TALL)  # answer and sources both in view
    page.wait_for_timeout(300)  # let the highlight settle
    screenshot(page, "chat-sources")

    # Dark mode, same thread.
    dark = pages.new(color_scheme="dark", viewport=TALL)
    dark.goto(thread_url)
    dmsg = assistant(dark)
    expect(dmsg).to_have_attribute("data-status", "complete")
    show_in_sources(dmsg, dmsg.get_by_test_id("citation").first)
    expect(dmsg.locator('[data-testid="source-card"][data-index="1"]')).to_have_attribute("data-expanded", "true")
    background = dark.evaluate("getComputedStyle(document.body).backgroundColor")
    rgb = [int(x) for x in re.findall(r"\d+", background)[:3]]
    assert sum(rgb) < 3 * 90, f"dark mode background is not dark: {background}"
    dark.wait_for_timeout(300)
    screenshot(dark, "chat-dark")


# ---------------------------------------------------------------------------------------------------------------
# 3. Search mode badge (vector) and reranking (relevance scores)


def rerank_responder(body: dict[str, Any]) -> Reply:
    """Rerank requests (with `format`) get a score; chat gets a search, then (after the tool answer) an answer."""
    if body.get("format"):
        prompt = body["messages"][-1]["content"]
        passage = prompt.split('"""')[1]
        # slow scoring keeps the search running long enough to see its indicator
        return Reply.hang(0.3, then=Reply.json({"score": 0.93 if "25 days" in passage else 0.12}))
    if any(m.get("role") == "tool" for m in body.get("messages", [])):
        return Reply.text("You get 25 days of paid holiday per year [1].")
    return Reply.tool_call("search_documents", SEARCH_ARGS)


def test_search_mode_badge_vector_and_reranked(
    live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, page: Any
) -> None:
    vector = live_app(ollama_host=fake_llm(), ingest_workers=1, search_mode="vector")
    upload(vector.url, {"handbook.md": HANDBOOK})
    wait_ready(vector.url, 1)

    fake_ollama.enqueue(Reply.tool_call("search_documents", SEARCH_ARGS), Reply.text("25 days a year [1]."))
    open_app(page, vector.url)
    ask(page, QUESTION)
    msg = assistant(page)
    expect(msg).to_have_attribute("data-status", "complete")
    expect(msg.get_by_test_id("search-mode-badge")).to_have_text("Vector")
    msg.get_by_test_id("sources-toggle").click()
    labels = msg.get_by_test_id("score-label")
    expect(labels.first).to_be_visible()
    assert set(labels.all_inner_texts()) == {"Similarity"}

    # Same database, a server with reranking on (and the default hybrid mode).
    reranked = live_app(ollama_host=fake_llm(), rerank_enabled=True)
    fake_ollama.responder = rerank_responder
    open_app(page, reranked.url)
    ask(page, QUESTION)
    msg = assistant(page)
    running = msg.locator('[data-testid="tool-indicator"][data-status="running"]')
    expect(running).to_have_text(f"Searching documents for '{SEARCH_ARGS['query']}'…")
    expect(running.get_by_test_id("spinner")).to_be_visible()
    expect(page.get_by_test_id("stop-button")).to_be_visible()
    expect(msg).not_to_have_attribute("data-status", "streaming")
    assert msg.get_attribute("data-status") == "complete", msg.inner_text()
    expect(msg.get_by_test_id("search-mode-badge")).to_have_text("Hybrid + Reranked")
    show_in_sources(msg, msg.get_by_test_id("citation").first)
    first = msg.locator('[data-testid="source-card"][data-index="1"]')
    expect(first).to_have_attribute("data-expanded", "true")
    expect(first.get_by_test_id("source-passage")).to_contain_text("25 days")
    expect(first.get_by_test_id("score-value")).to_have_text("93%")
    labels = msg.get_by_test_id("score-label")
    assert set(labels.all_inner_texts()) == {"Relevance"}
    expect(msg.locator('[data-testid="source-card"][data-index="2"]').get_by_test_id("score-value")).to_have_text("12%")
    scored = [r for r in fake_ollama.chat_requests if r.body.get("format")]
    assert scored, "the reranker never asked the model"
    screenshot(page, "chat-reranked")

    # The Search page follows the server's defaults when the URL does not say.
    page.goto(f"{reranked.url}/search?q=holiday")
    expect(page.get_by_test_id("search-mode-badge")).to_have_text("Hybrid + Reranked")
    expect(page.get_by_test_id("rerank-toggle")).to_be_checked()


# ---------------------------------------------------------------------------------------------------------------
# 4. Stop mid-stream


def test_stop_keeps_partial_answer(live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, page: Any) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    upload(server.url, {"handbook.md": HANDBOOK})
    wait_ready(server.url, 1)
    slow = [f" word{i}" for i in range(80)]
    fake_ollama.enqueue(Reply.tool_call("search_documents", SEARCH_ARGS), Reply.tokens(slow, token_delay=0.15))

    open_app(page, server.url)
    ask(page, QUESTION)
    msg = assistant(page)
    content = msg.locator(CONTENT)
    expect(content).to_contain_text("word2")
    expect(msg).to_have_attribute("data-status", "streaming")
    page.get_by_test_id("stop-button").click()

    expect(msg).to_have_attribute("data-status", "incomplete")
    expect(msg.get_by_test_id("message-incomplete")).to_have_text("Stopped — this answer is incomplete.")
    expect(page.get_by_test_id("stop-button")).to_have_count(0)
    expect(page.get_by_test_id("composer-input")).to_be_enabled()
    expect(msg.get_by_test_id("error-box")).to_have_count(0)
    # The server stopped the answer and cancelled the Ollama request.
    record = fake_ollama.wait_for_disconnect(timeout=5)
    assert record is not None and record.disconnected, "the fake never saw the disconnect"
    assert record.tokens_sent < len(slow)
    # The page shows what the server saved at Stop (a few tokens may land between the click and the stop), then
    # nothing more arrives.
    page.wait_for_timeout(400)
    partial = content.inner_text()
    assert partial.startswith("word0 word1 word2")
    page.wait_for_timeout(400)
    assert content.inner_text() == partial, "text kept arriving after Stop"

    # …and saved the partial answer as incomplete.
    thread_id = page.url.rsplit("/", 1)[-1]

    def saved() -> dict[str, Any] | None:
        messages = httpx.get(f"{server.url}/api/threads/{thread_id}", timeout=10).json()["messages"]
        return next((m for m in messages if m["role"] == "assistant"), None)

    stored = wait_until(saved, 10, "the saved assistant message")
    assert stored["status"] == "incomplete"
    assert stored["content"].strip() and "word0 word1" in stored["content"]
    screenshot(page, "chat-stopped")

    page.reload()
    msg = assistant(page)
    expect(msg).to_have_attribute("data-status", "incomplete")
    expect(msg.get_by_test_id("message-incomplete")).to_be_visible()
    expect(msg.locator(CONTENT)).to_contain_text("word0 word1")


# ---------------------------------------------------------------------------------------------------------------
# 5. Ollama down


def test_ollama_down_shows_error_and_banner(live_app: Any, closed_ollama_url: str, page: Any) -> None:
    server = live_app(ollama_host=closed_ollama_url)
    health = open_app(page, server.url, healthy=False)
    assert health["llm"]["reachable"] is False
    banner = page.get_by_test_id("health-banner")
    expect(banner).to_be_visible()
    expect(banner).to_have_attribute("data-kind", "ollama")
    expect(banner).to_contain_text("ollama serve")

    ask(page, QUESTION)
    msg = assistant(page)
    expect(msg).to_have_attribute("data-status", "error")
    box = msg.get_by_test_id("error-box")
    expect(box).to_have_attribute("data-code", "llm_unreachable")
    expect(box).to_contain_text("ollama serve")
    expect(box.locator("code").filter(has_text="ollama serve")).to_have_count(1)
    expect(msg.get_by_test_id("retry-button")).to_have_count(0)
    expect(page.get_by_test_id("composer-input")).to_be_enabled()
    screenshot(page, "chat-ollama-down")


# ---------------------------------------------------------------------------------------------------------------
# 6. Search page, and untrusted document text in search results and in chat


def test_search_page_and_sanitizer(live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, page: Any) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    upload(server.url, {"handbook.md": HANDBOOK, "security-note.txt": XSS_NOTE})
    wait_ready(server.url, 2)

    page.goto(f"{server.url}/search")
    expect(page.get_by_test_id("nav-search")).to_have_attribute("aria-current", "page")
    page.get_by_test_id("search-input").fill("holiday days")
    expect(page).to_have_url(re.compile(r"/search\?q=holiday\+days$"))
    by_doc = page.get_by_test_id("results-by-document")
    expect(by_doc).to_be_visible()
    expect(page.get_by_test_id("search-tab-documents")).to_have_attribute("aria-selected", "true")
    results = by_doc.get_by_test_id("search-result")
    expect(results.first).to_have_attribute("data-kind", "document")
    expect(results.first).to_contain_text("Staff handbook")
    expect(results.first.locator("mark").first).to_be_visible()
    expect(page.get_by_test_id("search-mode-badge")).to_have_text("Hybrid")
    expect(page.get_by_test_id("search-mode-hybrid")).to_have_attribute("aria-checked", "true")
    expect(page.get_by_test_id("search-timing")).to_have_text(re.compile(r"^\d+ results? in \d+ ms$"))
    screenshot(page, "search")

    page.get_by_test_id("search-tab-chunks").click()
    by_chunk = page.get_by_test_id("results-by-chunk")
    expect(by_chunk).to_be_visible()
    expect(page.get_by_test_id("search-tab-chunks")).to_have_attribute("aria-selected", "true")
    chunk_results = by_chunk.get_by_test_id("search-result")
    expect(chunk_results.first).to_have_attribute("data-kind", "chunk")
    chunk_results.first.get_by_test_id("why-toggle").click()
    expect(chunk_results.first.get_by_test_id("chunk-trace")).to_contain_text("Keyword rank")
    screenshot(page, "search-chunks")

    page.get_by_test_id("search-mode-vector").click()
    expect(page).to_have_url(re.compile(r"[?&]mode=vector(&|$)"))
    expect(page.get_by_test_id("search-mode-vector")).to_have_attribute("aria-checked", "true")
    expect(page.get_by_test_id("search-mode-badge")).to_have_text("Vector")
    page.get_by_test_id("search-mode-keyword").click()
    expect(page).to_have_url(re.compile(r"[?&]mode=keyword(&|$)"))
    expect(page.get_by_test_id("search-mode-badge")).to_have_text("Keyword")
    page.reload()  # the URL carries the state
    expect(page.get_by_test_id("search-input")).to_have_value("holiday days")
    expect(page.get_by_test_id("search-mode-keyword")).to_have_attribute("aria-checked", "true")
    expect(page.get_by_test_id("search-tab-documents")).to_have_attribute("aria-selected", "true")

    # Untrusted text in results: shown as text, never run.
    page.get_by_test_id("search-input").fill("inert snippet payload")
    note = page.get_by_test_id("search-result").filter(has_text="Security test note")
    expect(note).to_have_count(1)
    expect(note).to_contain_text('<img src=x onerror="window.__xss=1">')
    page.get_by_test_id("search-tab-chunks").click()
    expect(page.get_by_test_id("search-result").filter(has_text="<script>window.__xss=2</script>")).to_have_count(1)
    xss_clean(page)

    # …and in chat: the passage in the source cards and the same HTML in the model's answer.
    fake_ollama.enqueue(
        Reply.tool_call("search_documents", {"query": "inert snippet payload"}),
        Reply.text(
            'The note contains <img src=x onerror="window.__xss=1"> and <script>window.__xss=2</script> [1] '
            "and a [link](javascript:window.__xss=3)."
        ),
    )
    open_app(page, server.url)
    ask(page, "What does the security note contain?")
    msg = assistant(page)
    expect(msg).to_have_attribute("data-status", "complete")
    content = msg.locator(CONTENT)
    expect(content).to_contain_text("onerror")
    msg.get_by_test_id("sources-toggle").click()
    for toggle in msg.get_by_test_id("source-card-toggle").all():
        toggle.click()
    expect(msg.get_by_test_id("source-passage").filter(has_text="<script>window.__xss=2</script>")).to_have_count(1)
    for link in content.locator("a").all():
        assert not (link.get_attribute("href") or "").lower().startswith("javascript:")
    page.wait_for_timeout(200)
    xss_clean(page)
    page.reload()
    expect(assistant(page)).to_have_attribute("data-status", "complete")
    assistant(page).get_by_test_id("sources-toggle").click()
    page.wait_for_timeout(200)
    xss_clean(page)


# ---------------------------------------------------------------------------------------------------------------
# 7. Narrow screens


def test_mobile_chat_has_no_horizontal_overflow(
    live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, pages: Pages
) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    upload(server.url, {"handbook.md": HANDBOOK})
    wait_ready(server.url, 1)
    fake_ollama.enqueue(Reply.tool_call("search_documents", SEARCH_ARGS), Reply.tokens(ANSWER_TOKENS), "Glad to help.")
    thread_id = ask_via_api(server.url, QUESTION)

    page = pages.new(viewport=MOBILE, is_mobile=True, has_touch=True, device_scale_factor=2)
    width = MOBILE["width"]
    open_app(page, server.url)
    expect(page.get_by_test_id("empty-chat")).to_be_visible()
    no_horizontal_overflow(page, width)

    page.goto(f"{server.url}/chat/{thread_id}")
    msg = assistant(page)
    expect(msg).to_have_attribute("data-status", "complete")
    expect(page.get_by_test_id("sidebar")).not_to_be_in_viewport()
    no_horizontal_overflow(page, width)
    show_in_sources(msg, msg.get_by_test_id("citation").first)
    expect(msg.locator('[data-testid="source-card"][data-index="1"]')).to_have_attribute("data-expanded", "true")
    msg.locator('[data-testid="source-card"][data-index="1"]').get_by_test_id("why-toggle").click()
    no_horizontal_overflow(page, width)
    page.wait_for_timeout(300)
    screenshot(page, "chat-mobile")

    # A follow-up question from the phone: composer works and the page still fits.
    ask(page, "And can I carry days over? " + "x" * 120)
    expect(assistant(page)).to_have_attribute("data-status", "complete")
    expect(assistant(page).locator(CONTENT)).to_have_text("Glad to help.")
    no_horizontal_overflow(page, width)

    page.get_by_test_id("menu-button").click()
    expect(page.get_by_test_id("menu-button")).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_test_id("sidebar")).to_be_in_viewport()
    expect(page.get_by_test_id("thread-item")).to_have_count(1)
    no_horizontal_overflow(page, width)
    page.wait_for_timeout(300)
    screenshot(page, "chat-mobile-menu")
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("menu-button")).to_have_attribute("aria-expanded", "false")

    for path in ("/documents", "/search?q=holiday%20days"):
        page.goto(server.url + path)
        expect(page.locator('[data-testid="document-row"], [data-testid="search-result"]').first).to_be_visible()
        no_horizontal_overflow(page, width)
