"""End to end: verified citations in the page. The built client in Chromium, the real server, embedded Postgres,
the real MiniLM and the fake Ollama scripted with an answer holding a supported, an unsupported and an invented
citation. Writes docs/screenshots/citations.png."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot, upload, wait_ready
from tests.e2e.test_page import ASSISTANT, ask, open_app
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.e2e

POLICY = (
    "Holiday policy. Every full-time employee gets 25 days of paid holiday per calendar year. "
    "Book holidays in the HR portal at least two weeks in advance."
)
RIGHT = "Full-time employees get **25 days** of paid holiday per calendar year [1]."
WRONG = "The cafeteria also serves free sushi every Friday [1]."
INVENTED = "Parking is free for visitors [4]."


def test_unsupported_claim_and_missing_passage_are_marked(
    live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, page: Any
) -> None:
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    upload(server.url, {"holiday-policy.txt": POLICY})
    wait_ready(server.url, 1)
    fake_ollama.enqueue(
        Reply.tool_call("search_documents", {"query": "paid holiday days per year"}),
        Reply.text(f"{RIGHT} {WRONG} {INVENTED}"),
    )
    open_app(page, server.url)
    ask(page, "How many holiday days do I get?")
    msg = page.locator(ASSISTANT).last
    expect(msg).to_have_attribute("data-status", "complete", timeout=30_000)
    expect(msg.get_by_test_id("tool-summary")).to_have_text("Found 1 relevant chunk")

    def check_marks() -> None:
        claim = msg.get_by_test_id("claim-unsupported")
        expect(claim).to_have_count(1)
        expect(claim).to_have_text("The cafeteria also serves free sushi every Friday")
        expect(claim).to_have_attribute("title", "Passage 1 does not seem to support this")
        note_id = claim.get_attribute("aria-describedby")
        assert note_id
        note = page.locator(f"[id='{note_id}']")
        expect(note).to_have_attribute("role", "note")
        expect(note).to_have_text("⚠Passage 1 does not seem to support this")  # an icon and words
        expect(msg.get_by_test_id("citation").nth(1)).to_have_attribute("aria-describedby", note_id)
        # the supported claim is not marked; its citation still opens the source
        expect(msg.get_by_test_id("citation")).to_have_count(2)
        expect(msg.locator(".claim")).to_have_count(1)
        missing = msg.get_by_test_id("citation-missing")
        expect(missing).to_have_count(1)
        expect(missing.locator("s")).to_have_text("[4]")
        expect(missing).to_contain_text("no passage 4")
        expect(msg.get_by_test_id("citation-summary")).to_have_text(
            "⚠ 1 of 3 sentences supported by the cited passages: 1 not supported by the cited passage, 1 citing a "
            "passage that does not exist."
        )
        # not colour alone: the underline is a dotted line
        style = claim.evaluate("e => getComputedStyle(e).textDecorationStyle")
        assert style == "dotted", style

    check_marks()
    msg.get_by_test_id("citation").first.click()  # previews the passage in place
    expect(msg.get_by_test_id("cite-popover")).to_be_visible()
    msg.get_by_test_id("cite-popover-sources").click()
    expect(msg.get_by_test_id("source-card")).to_have_count(1)
    msg.get_by_test_id("claim-unsupported").hover()
    screenshot(page, "citations")

    # a reload shows the same marks, from the stored message
    page.reload()
    msg = page.locator(ASSISTANT).last
    expect(msg).to_have_attribute("data-status", "complete")
    check_marks()
