"""End to end with accounts (AUTH=on): first run, a second user, sharing a document through a collection.

The built web client in Chromium against the real server, embedded Postgres and the fake Ollama.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import MOBILE, REPO_ROOT, Pages, screenshot
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.e2e

AXE = REPO_ROOT / "client" / "node_modules" / "axe-core" / "axe.min.js"

ADMIN = ("admin", "admin-password-1")
BOB = ("bob", "bob-password-1")

HANDBOOK = """# Holiday policy

Every full-time employee gets 25 days of paid holiday per calendar year, plus public holidays.
Up to 5 unused holiday days can be carried over into the next year; they must be taken before the
end of March. Book holidays in the HR portal at least two weeks in advance.
"""
QUESTION = "How many holiday days do I get?"
ANSWER = "Full-time employees get 25 days of paid holiday per year [1]."


def axe_violations(page: Any) -> list[str]:
    """axe-core (from the client's devDependencies) in the page. Playwright's evaluate is not subject to the
    page's CSP, so the strict `script-src 'self'` stays in force for the app itself."""
    assert AXE.is_file(), f"{AXE} is missing: run `npm ci` in client/"
    page.evaluate(Path(AXE).read_text() + "\n;undefined")
    return page.evaluate(
        """async () => (await axe.run(document)).violations.map(
               v => `${v.id}: ${v.help} (${v.nodes.map(n => n.target.join(' ')).join(', ')})`)"""
    )


def no_horizontal_overflow(page: Any, width: int) -> None:
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    assert scroll_width <= width, f"{page.url}: the page is {scroll_width} px wide at {width} px"


def log_in(page: Any, user: tuple[str, str]) -> None:
    expect(page.get_by_test_id("login-form")).to_be_visible()
    page.get_by_test_id("login-username").fill(user[0])
    page.get_by_test_id("login-password").fill(user[1])
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_test_id("nav-user")).to_have_text(user[0])


def log_out(page: Any) -> None:
    page.get_by_test_id("nav-logout").click()
    expect(page.get_by_test_id("login-form")).to_be_visible()
    expect(page.get_by_test_id("session-expired")).to_have_count(0)
    expect(page.get_by_test_id("app-nav")).to_have_count(0)


def search(page: Any, base_url: str, query: str) -> None:
    page.goto(f"{base_url}/search?q={query}")
    expect(page.get_by_test_id("search-input")).to_have_value(query)


def test_accounts_sharing_flow(live_app: Any, fake_ollama: FakeOllama, fake_llm: Any, pages: Pages) -> None:
    server = live_app(auth="on", ollama_host=fake_llm(), ingest_workers=1)
    page = pages.new()

    # 1. First visit: the app asks for the admin account (the page has a strict CSP and no inline script).
    response = page.goto(server.url)
    assert response is not None
    csp = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src", 1)[1].split(";")[0], csp
    expect(page.get_by_test_id("setup-form")).to_be_visible()
    expect(page.get_by_role("heading", name="Create the admin account")).to_be_visible()
    assert axe_violations(page) == []
    page.get_by_test_id("setup-username").fill(ADMIN[0])
    page.get_by_test_id("setup-password").fill(ADMIN[1])
    page.get_by_test_id("setup-confirm").fill(ADMIN[1])
    page.get_by_test_id("setup-submit").click()
    expect(page.get_by_test_id("nav-user")).to_have_text(ADMIN[0])
    expect(page.get_by_test_id("nav-admin")).to_be_visible()

    # 2. Upload a small text document through the page and wait until it is ready.
    page.get_by_test_id("nav-documents").click()
    expect(page.get_by_test_id("documents-empty")).to_be_visible()
    page.get_by_test_id("upload-input").set_input_files(
        files=[{"name": "handbook.md", "mimeType": "text/markdown", "buffer": HANDBOOK.encode()}]
    )
    row = page.get_by_test_id("document-row")
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-status", "ready", timeout=60_000)
    expect(row.get_by_test_id("doc-access")).to_have_count(0)  # mine
    expect(row.get_by_test_id("document-delete")).to_be_visible()

    # 3. Ask a question: the fake model searches, then answers.
    fake_ollama.enqueue(Reply.tool_call("search_documents", {"query": "paid holiday days"}), Reply.text(ANSWER))
    page.get_by_test_id("nav-chat").click()
    box = page.get_by_test_id("composer-input")
    expect(box).to_be_enabled()
    box.fill(QUESTION)
    page.get_by_test_id("send-button").click()
    answer = page.locator('[data-testid="message"][data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(answer.get_by_test_id("message-content")).to_contain_text("25 days of paid holiday")
    expect(answer.get_by_test_id("tool-summary")).to_contain_text("Found")

    # 4. The admin adds a second user.
    page.get_by_test_id("nav-admin").click()
    expect(page.get_by_test_id("admin-user-row")).to_have_count(1)
    page.get_by_test_id("admin-add-username").fill(BOB[0])
    page.get_by_test_id("admin-add-password").fill(BOB[1])
    page.get_by_test_id("admin-add-submit").click()
    bob_row = page.locator(f'[data-testid="admin-user-row"][data-username="{BOB[0]}"]')
    expect(bob_row).to_have_attribute("data-admin", "false")
    # The server refuses to let the admin disable themself, and the page says why.
    page.locator(f'[data-testid="admin-user-row"][data-username="{ADMIN[0]}"]').get_by_test_id("admin-disable").click()
    expect(page.get_by_test_id("admin-error")).to_contain_text("yourself")
    screenshot(page, "accounts-admin")

    # 5. Bob sees nothing of the admin's.
    log_out(page)
    assert axe_violations(page) == []
    screenshot(page, "accounts-login")
    log_in(page, BOB)
    expect(page.get_by_test_id("nav-admin")).to_have_count(0)
    page.get_by_test_id("nav-documents").click()
    expect(page.get_by_test_id("documents-empty")).to_be_visible()
    search(page, server.url, "holiday")
    expect(page.get_by_test_id("search-empty")).to_be_visible()
    expect(page.get_by_test_id("search-result")).to_have_count(0)
    page.goto(f"{server.url}/admin")
    expect(page.get_by_test_id("admin-forbidden")).to_be_visible()

    # 6. The admin shares the document with bob (read) through a collection.
    log_out(page)
    log_in(page, ADMIN)
    page.get_by_test_id("nav-collections").click()
    expect(page.get_by_test_id("collections-empty")).to_be_visible()
    page.get_by_test_id("collection-name").fill("Handbooks")
    page.get_by_test_id("collection-create").click()
    expect(page.get_by_test_id("collection-title")).to_have_text("Handbooks")
    collection_id = urlsplit(page.url).path.rsplit("/", 1)[1]
    page.get_by_test_id("collection-doc-picker-search").fill("holiday")  # a searchable picker of my documents
    expect(page.get_by_test_id("collection-doc-picker-option")).to_have_count(1)
    page.get_by_test_id("collection-doc-picker-option").filter(has_text="Holiday policy").click()
    expect(page.get_by_test_id("collection-doc-row")).to_have_count(1)
    expect(page.get_by_test_id("collection-member-user").locator("option", has_text=BOB[0])).to_have_count(1)
    page.get_by_test_id("collection-member-user").select_option(label=BOB[0])
    page.get_by_test_id("collection-member-role").select_option("read")
    page.get_by_test_id("collection-member-add").click()
    member = page.get_by_test_id("collection-member-row")
    expect(member).to_have_count(1)
    expect(member).to_have_attribute("data-role", "read")
    screenshot(page, "accounts-collection")

    # 7. Bob now finds the document in his documents and in search, read-only.
    log_out(page)
    log_in(page, BOB)
    page.get_by_test_id("nav-documents").click()
    shared = page.get_by_test_id("document-row")
    expect(shared).to_have_count(1)
    expect(shared.get_by_test_id("document-title")).to_have_text("Holiday policy")
    expect(shared.get_by_test_id("doc-access")).to_have_text("Shared · read")
    expect(shared.get_by_test_id("doc-owner")).to_contain_text(ADMIN[0])
    expect(shared.get_by_test_id("doc-collections")).to_contain_text("Handbooks")
    expect(shared.get_by_test_id("document-delete")).to_have_count(0)
    search(page, server.url, "holiday")
    expect(page.get_by_test_id("search-result").first).to_contain_text("Holiday policy")
    # Narrowed to the collection (collection_ids=…): still found.
    page.get_by_test_id("search-collection").select_option(collection_id)
    expect(page).to_have_url(f"{server.url}/search?q=holiday&collection={collection_id}")
    expect(page.get_by_test_id("search-result").first).to_contain_text("Holiday policy")
    page.get_by_test_id("nav-collections").click()
    expect(page.get_by_test_id("collection-row")).to_have_attribute("data-role", "read")

    # The top bar and the shared document fit a phone's width.
    phone = pages.new(viewport=MOBILE, storage_state=page.context.storage_state())
    phone.goto(f"{server.url}/documents")
    expect(phone.get_by_test_id("document-row")).to_have_count(1)
    expect(phone.get_by_test_id("nav-logout")).to_be_visible()
    no_horizontal_overflow(phone, MOBILE["width"])
    screenshot(phone, "accounts-mobile-documents")

    # 8. Logging out ends the session on the server too.
    log_out(page)
    status = page.evaluate("fetch('/api/documents').then(r => r.status)")
    assert status == 401
    page.reload()
    expect(page.get_by_test_id("login-form")).to_be_visible()
    csp_errors = [e for e in pages.console_errors if "Content Security Policy" in e]
    assert not csp_errors, csp_errors
