"""End to end: the Evaluate page runs a small generated evaluation (fake LLM writing the questions) against the real
server, embedded Postgres and embedding model, draws its charts, and compares two runs."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot, upload, wait_ready
from tests.e2e.test_phone_and_documents import axe_violations
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.e2e

DOCS = {
    "volcano.txt": "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.",
    "bread.txt": "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.",
    "tides.txt": "Ocean tides are caused by the gravitational pull of the moon and the sun on the oceans.",
}


def writer(body: dict[str, Any]) -> Reply:
    user = body["messages"][-1]["content"]
    if "How relevant" in user:
        return Reply.json({"score": 0.5})
    words = re.findall(r"[A-Za-z]+", user.split('"""')[1])[:6]
    return Reply.json({"question": f"What about {' '.join(words)}?"})


def test_generated_eval_from_the_page(live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, page: Any) -> None:
    fake_ollama.responder = writer
    server = live_app(ollama_host=fake_llm(), ingest_workers=1)
    upload(server.url, DOCS)
    wait_ready(server.url, 3)

    page.goto(f"{server.url}/evaluate")
    expect(page.get_by_test_id("nav-evaluate")).to_have_attribute("aria-current", "page")
    page.get_by_label("Questions").fill("3")
    page.get_by_role("checkbox").check()
    page.get_by_role("button", name="Start evaluation").click()
    current = page.get_by_test_id("eval-current")
    expect(current.get_by_role("heading")).to_have_text(re.compile(r"Run \d+: done"), timeout=60_000)
    charts = page.get_by_test_id("eval-chart")
    expect(charts).to_have_count(2)
    bars = page.get_by_test_id("eval-bar")
    # 6 configurations (3 modes, with and without rerank) × (5 metrics + 2 latency percentiles)
    expect(bars).to_have_count(6 * 7)
    heights = [float(bars.nth(i).get_attribute("height") or 0) for i in range(6 * 7)]
    assert any(h > 0 for h in heights)
    # every bar says its value; the labels use the text colour, so both themes pass axe
    values = page.get_by_test_id("eval-value")
    expect(values).to_have_count(6 * 7)
    assert all(re.fullmatch(r"\d+(\.\d\d)?", values.nth(i).text_content() or "") for i in range(6 * 7))
    for theme in ("light", "dark"):
        page.evaluate("t => { document.documentElement.dataset.theme = t }", theme)
        assert axe_violations(page) == [], theme
        fill = page.evaluate("() => getComputedStyle(document.querySelector('[data-testid=eval-value]')).fill")
        text = page.evaluate("() => getComputedStyle(document.body).color")
        assert fill == text, (theme, fill, text)
    expect(page.get_by_test_id("eval-runs").locator("tr")).to_have_count(1)
    # the questions it asked are listed, each with its document
    asked = page.get_by_test_id("eval-question")
    expect(asked).to_have_count(3)
    assert all((asked.nth(i).text_content() or "").startswith("What about ") for i in range(3))
    expect(page.get_by_test_id("eval-questions")).to_contain_text(re.compile(r"\((Volcanic|Sourdough|Ocean) "))
    screenshot(page, "evaluate", full_page=True)

    # a second run, then compare it with the first
    page.get_by_label("Questions").fill("2")
    page.get_by_role("checkbox").uncheck()
    page.get_by_role("button", name="Start evaluation").click()
    expect(current.get_by_role("heading")).to_have_text(re.compile(r"Run \d+: done"), timeout=60_000)
    expect(page.get_by_test_id("eval-runs").locator("tr")).to_have_count(2)
    page.get_by_test_id("eval-runs").locator("tr").nth(1).get_by_role("button", name="Compare with shown").click()
    table = page.get_by_test_id("eval-compare")
    expect(table).to_be_visible()
    expect(table.locator("tbody tr")).to_have_count(3 * 5)  # the modes both runs have × 5 metrics
    screenshot(page, "evaluate-compare", full_page=True)
