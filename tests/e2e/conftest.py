"""Browser fixtures for the end-to-end tests: a Chromium driven by (sync) Playwright.

Which Chromium: the system's when there is one (/usr/bin/chromium, or chromium, chromium-browser, google-chrome on
PATH); else, as root with apt-get, Debian's `chromium`, installed once (under a file lock, so parallel runs don't
race); else Playwright's own (`python -m playwright install chromium`). The run's summary says which it used.

The tests are plain `def` tests: the sync Playwright API runs its own event loop and must not be called from
inside a running one (pytest runs with `asyncio_mode=auto`, which only affects `async def` tests).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.ollama_server import FakeOllama

REPO_ROOT = Path(__file__).resolve().parents[2]
CLIENT_INDEX = REPO_ROOT / "client" / "dist" / "index.html"
# The docs' screenshots are rewritten only when asked (`make screenshots`): a plain test run takes them into
# test-results/ (git-ignored), so it never leaves the checkout changed.
DOC_SCREENSHOTS = REPO_ROOT / "docs" / "screenshots"
SCREENSHOTS = (
    DOC_SCREENSHOTS if os.environ.get("UPDATE_SCREENSHOTS") == "1" else REPO_ROOT / "test-results" / "screenshots"
)
#: How long an assertion waits for the page to show what it expects, and an action for its element: bounds for a
#: busy machine (on 2 cores beside `stress-ng --cpu 4`, a streamed answer took over 5 s, Playwright's default, to
#: show its third word), not speed checks; a page that is right shows it at once and the test goes on.
EXPECT_TIMEOUT_MS = 20_000
ACTION_TIMEOUT_MS = 30_000
SYSTEM_CHROMIUMS = ["/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
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


@dataclass(frozen=True)
class Chromium:
    executable: str | None  # None: Playwright's own build
    source: str  # how it was found, for the run's summary


def _system_chromium() -> str | None:
    """The first system Chromium that starts (`--version`); a snap stub or broken install does not count."""
    for name in SYSTEM_CHROMIUMS:
        path = shutil.which(name)
        if not path:
            continue
        try:
            done = subprocess.run([path, "--version"], capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return path
    return None


@contextmanager
def _locked(name: str) -> Iterator[None]:
    """An exclusive lock on a file in the temp directory, shared by every pytest process of this machine."""
    import fcntl

    with open(Path(tempfile.gettempdir()) / name, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _run_setup(args: list[str], env: dict[str, str] | None = None) -> str | None:
    """Run an install step; None when it worked, else why not."""
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=900, check=False, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{' '.join(args)}: {exc}"
    if done.returncode != 0:
        return f"{' '.join(args)} exited {done.returncode}: {(done.stderr or done.stdout).strip()[-2000:]}"
    return None


def find_chromium() -> Chromium:
    """The system's Chromium; else Debian's, installed with apt-get as root; else Playwright's own."""
    found = _system_chromium()
    if found:
        return Chromium(found, f"system Chromium {found}")
    problems: list[str] = []
    with _locked("ragchat-e2e-chromium.lock"):
        found = _system_chromium()  # another run may have installed it while this one waited
        if found:
            return Chromium(found, f"system Chromium {found} (installed by a parallel run)")
        if sys.platform == "linux" and os.geteuid() == 0 and shutil.which("apt-get"):
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            problem = _run_setup(["apt-get", "update", "-qq"], env) or _run_setup(
                ["apt-get", "install", "-y", "-qq", "chromium"], env
            )
            found = _system_chromium()
            if found:
                return Chromium(found, f"Debian's chromium {found}, installed now with apt-get")
            problems.append(problem or "apt-get installed chromium, but no chromium starts")
        problem = _run_setup([sys.executable, "-m", "playwright", "install", "chromium"])
        if problem is None:
            return Chromium(None, "Playwright's Chromium (python -m playwright install chromium)")
        problems.append(problem)
    pytest.fail("no Chromium for the browser tests:\n" + "\n".join(problems), pytrace=False)


_CHROMIUM = pytest.StashKey[Chromium]()


@pytest.fixture(scope="session")
def chromium(pytestconfig: pytest.Config) -> Chromium:
    """Found (or installed) once per test run; the terminal summary names it."""
    found = find_chromium()
    pytestconfig.stash[_CHROMIUM] = found
    return found


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    found = config.stash.get(_CHROMIUM, None)
    if found is not None:
        terminalreporter.write_line(f"browser tests ran on: {found.source}")


@pytest.fixture(scope="module")
def browser(chromium: Chromium) -> Iterator[Any]:
    """One Chromium for the module; fails (not skips) with a clear message when something is missing."""
    if not CLIENT_INDEX.is_file():
        pytest.fail(f"{CLIENT_INDEX} is missing: build the web client first (`make client`, i.e. `npm run build`)")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium.executable, args=CHROMIUM_ARGS)
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
        context.set_default_timeout(ACTION_TIMEOUT_MS)
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
    """Save <name>.png: in docs/screenshots with UPDATE_SCREENSHOTS=1 (`make screenshots`), else in
    test-results/screenshots."""
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
