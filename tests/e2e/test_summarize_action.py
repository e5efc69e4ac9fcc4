"""End to end: the Summarise action. From the viewer, "Summarise" opens a chat that reads the whole PDF part by
part (the fake Ollama records the map call and the answer), shows the summary's progress and parts, and the
answer's [1] opens the viewer at the part's page. The built client in Chromium, the real server and Postgres."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from ragchat.chat.engine.summarize import MAP_PROMPT
from tests.fakes.script import Reply
from tests.unit.test_parsers import make_pdf

pytestmark = pytest.mark.e2e

PAGES = [
    ["Harbour operations manual", "", "Chapter one describes the tides and the moorings of the small boats."],
    ["The lighthouse keeper logs every passing ship in the harbour ledger."],
    ["Chapter three lists the fees for berths, cranes and fresh water."],
]


def test_summarise_from_the_viewer(live_app: Any, fake_ollama: Any, page: Any) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        if body["messages"][0]["content"] == MAP_PROMPT:
            return Reply.text("Moorings, the ship ledger and the harbour fees.")
        return Reply.text("The manual covers moorings, the ship ledger and the fees [1].")

    fake_ollama.responder = respond
    server = live_app(ollama_host=fake_ollama.url, ingest_workers=1)
    pdf = make_pdf(PAGES, title="Harbour operations manual")
    r = httpx.post(f"{server.url}/api/documents", files={"files": ("harbour.pdf", pdf, "application/pdf")}, timeout=30)
    assert r.status_code == 201, r.text
    doc_id = r.json()["results"][0]["document"]["id"]
    for _ in range(600):
        if httpx.get(f"{server.url}/api/documents/{doc_id}", timeout=10).json()["status"] == "ready":
            break
        page.wait_for_timeout(100)

    page.goto(f"{server.url}/documents/{doc_id}")
    page.get_by_test_id("viewer-summarize").click()
    expect(page).to_have_url(re.compile(r"/chat/[0-9a-f-]+$"), timeout=20_000)
    expect(page.get_by_test_id("tool-summary")).to_have_text("Summarised 1 part", timeout=30_000)
    expect(page.get_by_text("The manual covers moorings, the ship ledger and the fees")).to_be_visible()
    bodies = [rec.body for rec in fake_ollama.chat_requests]
    assert bodies[0]["messages"][0]["content"] == MAP_PROMPT and "lighthouse keeper" in str(bodies[0])
    assert len(bodies) == 2 and not bodies[1].get("tools")
    # once, not again on a reload of the thread
    page.reload()
    expect(page.get_by_test_id("tool-summary")).to_have_text("Summarised 1 part", timeout=20_000)
    assert len(fake_ollama.chat_requests) == 2
