"""End to end: the Settings page in Chromium against the real server and the fake Ollama. The model list
comes from the LLM server; a saved mode changes the next answer's search; the theme applies at once and
survives a reload; axe-core finds no serious or critical violation in either theme."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import MOBILE, REPO_ROOT, Pages, screenshot
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.e2e

AXE = REPO_ROOT / "client" / "node_modules" / "axe-core" / "axe.min.js"
DARK_BG = "rgb(15, 17, 21)"  # --bg of the dark theme (styles.css)
LIGHT_BG = "rgb(247, 247, 249)"


def serious_axe_violations(page: Any) -> list[str]:
    """axe-core's serious and critical violations in the page (evaluate is not subject to the page's CSP)."""
    assert AXE.is_file(), f"{AXE} is missing: run `npm ci` in client/"
    page.evaluate(Path(AXE).read_text() + "\n;undefined")
    return page.evaluate(
        """async () => (await axe.run(document)).violations
               .filter(v => v.impact === 'serious' || v.impact === 'critical')
               .map(v => `${v.id}: ${v.help} (${v.nodes.map(n => n.target.join(' ')).join(', ')})`)"""
    )


def search_mode_of_next_answer(base_url: str, fake: FakeOllama) -> str:
    """Ask through POST /api/chat (the fake searches once, then answers); the tool_result's search mode."""
    fake.enqueue(Reply.tool_call("search_documents", {"query": "holidays"}), "Nothing found.")
    event, mode = None, None
    with httpx.stream("POST", f"{base_url}/api/chat", json={"message": "Any holidays?"}, timeout=30) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event == "tool_result":
                mode = json.loads(line.split(":", 1)[1])["search_mode"]
    assert mode is not None
    return mode


def background(page: Any, expected: str | None = None) -> str:
    """The page's background colour; with `expected`, once it is that (up to 5 s: React renders the change)."""
    if expected is not None:
        script = "bg => getComputedStyle(document.body).backgroundColor === bg"
        page.wait_for_function(script, arg=expected, timeout=5000)
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


def test_settings_page(live_app: Any, fake_ollama: FakeOllama, pages: Pages) -> None:
    fake_ollama.models = ["llama3.2:latest", "qwen3:4b"]
    server = live_app(ollama_host=fake_ollama.url, search_mode="hybrid")
    page = pages.new(color_scheme="light")
    page.goto(server.url + "/")
    page.get_by_test_id("nav-settings").click()
    expect(page).to_have_url(server.url + "/settings")
    expect(page).to_have_title("Settings — ragchat")
    model = page.get_by_test_id("set-model")
    expect(model.locator("option", has_text="qwen3:4b")).to_have_count(1)
    expect(page.get_by_test_id("default-search_mode")).to_contain_text("Default: hybrid (SEARCH_MODE)")
    expect(page.get_by_test_id("restart-note")).to_contain_text("none needs a server restart")
    assert serious_axe_violations(page) == []
    assert search_mode_of_next_answer(server.url, fake_ollama) == "hybrid"

    page.get_by_test_id("set-mode").select_option("vector")
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-result")).to_contain_text("Saved.")
    assert httpx.get(f"{server.url}/api/preferences").json()["values"]["search_mode"] == "vector"
    assert search_mode_of_next_answer(server.url, fake_ollama) == "vector"  # the setting changed the answer
    screenshot(page, "settings")

    assert background(page, LIGHT_BG) == LIGHT_BG
    page.get_by_test_id("theme-dark").check()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    assert background(page, DARK_BG) == DARK_BG  # at once, before any reload
    expect(page.get_by_test_id("settings-result")).to_contain_text("Theme: dark.")
    assert serious_axe_violations(page) == []
    page.reload()
    expect(page.get_by_test_id("theme-dark")).to_be_checked()
    assert background(page, DARK_BG) == DARK_BG
    page.get_by_test_id("nav-documents").click()
    expect(page).to_have_title("Documents — ragchat")
    assert background(page, DARK_BG) == DARK_BG  # every page

    page.get_by_test_id("nav-settings").click()
    expect(page.get_by_test_id("theme-dark")).to_be_checked()  # the saved settings are in the form
    page.get_by_test_id("theme-system").check()
    expect(page.locator("html")).not_to_have_attribute("data-theme", "dark")
    assert background(page, LIGHT_BG) == LIGHT_BG  # the system (this browser) is light
    assert httpx.get(f"{server.url}/api/preferences").json()["values"]["theme"] == "system"

    phone = pages.new(viewport=MOBILE, color_scheme="dark")
    phone.goto(server.url + "/settings")
    expect(phone.get_by_test_id("set-mode")).to_have_value("vector")
    assert background(phone) == DARK_BG  # system: this phone is dark
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= MOBILE["width"], f"the settings page is {width} px wide on a phone"
