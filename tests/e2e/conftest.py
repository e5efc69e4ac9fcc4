"""Browser fixtures for the end-to-end tests: Debian's Chromium driven by (sync) Playwright.

The tests are plain `def` tests: the sync Playwright API runs its own event loop and must not be called from
inside a running one (pytest runs with `asyncio_mode=auto`, which only affects `async def` tests).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.ollama_server import FakeOllama

REPO_ROOT = Path(__file__).resolve().parents[2]
CLIENT_INDEX = REPO_ROOT / "client" / "dist" / "index.html"
SCREENSHOTS = REPO_ROOT / "docs" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-gpu",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = {"width": 1280, "height": 860}
MOBILE = {"width": 375, "height": 760}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module; fails (not skips) with a clear message when something is missing."""
    if not CLIENT_INDEX.is_file():
        pytest.fail(f"{CLIENT_INDEX} is missing: build the web client first (`make client`, i.e. `npm run build`)")
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's Chromium (`apt-get install -y chromium`)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class Pages:
    """Opens pages in fresh browser contexts and records uncaught page errors."""

    def __init__(self, browser: Any) -> None:
        self.browser = browser
        self.contexts: list[Any] = []
        self.page_errors: list[str] = []
        self.console_errors: list[str] = []

    def new(self, **context_options: Any) -> Any:
        options = {"viewport": DESKTOP, "reduced_motion": "reduce", **context_options}
        context = self.browser.new_context(**options)
        context.set_default_timeout(10_000)
        self.contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: self.page_errors.append(str(exc)))
        page.on("console", lambda m: m.type == "error" and self.console_errors.append(f"{page.url}: {m.text}"))
        return page

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture
def pages(browser: Any) -> Iterator[Pages]:
    """`pages.new(**context_options)` → a Page; the test fails if any page threw an uncaught error."""
    p = Pages(browser)
    try:
        yield p
    finally:
        p.close()
    if p.console_errors:  # shown with -s or on failure; expected ones include 4xx/5xx responses the test provoked
        print("browser console errors:", *p.console_errors, sep="\n  ")
    assert not p.page_errors, f"uncaught errors in the page: {p.page_errors}"


@pytest.fixture
def page(pages: Pages) -> Any:
    """A desktop-sized page (1280x860)."""
    return pages.new()


@pytest.fixture
def fake_llm(fake_ollama: FakeOllama) -> Callable[[], Any]:
    """The fake's URL, for `live_app(ollama_host=fake_llm())`: each live server builds its own provider."""
    return lambda: fake_ollama.url


def screenshot(page: Any, name: str, **options: Any) -> Path:
    """Save docs/screenshots/<name>.png (overwritten on every run)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), **options)
    return path


def upload(base_url: str, files: dict[str, str]) -> list[dict[str, Any]]:
    """Upload files (name → text) through the API; returns the per-file results."""
    parts = [("files", (name, text.encode(), "application/octet-stream")) for name, text in files.items()]
    response = httpx.post(f"{base_url}/api/documents", files=parts, timeout=30)
    response.raise_for_status()
    results = response.json()["results"]
    assert all(r["status"] == "queued" for r in results), results
    return results


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


def wait_ready(base_url: str, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    """Wait until `count` documents are ready (fails fast if one failed)."""

    def ready() -> list[dict[str, Any]] | None:
        docs = httpx.get(f"{base_url}/api/documents", timeout=10).json()["documents"]
        failed = [d for d in docs if d["status"] == "failed"]
        assert not failed, f"ingestion failed: {failed}"
        done = [d for d in docs if d["status"] == "ready"]
        return done if len(done) >= count else None

    return wait_until(ready, timeout, f"{count} ready document(s)")
