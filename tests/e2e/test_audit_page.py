"""The admin's Audit log tab in Chromium (AUTH=on): rows written by real actions, filters, paging, the export
link, keyboard tabs, and no axe violations in the light and the dark theme."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Pages, screenshot
from tests.e2e.test_accounts_page import ADMIN, axe_violations, log_in

pytestmark = pytest.mark.e2e


def test_the_audit_tab_filters_pages_and_exports(live_app: Any, pages: Pages) -> None:
    server = live_app(auth="on", rate_login_per_min=0)
    with httpx.Client(base_url=server.url, timeout=60) as admin:
        assert admin.post("/api/auth/setup", json={"username": ADMIN[0], "password": ADMIN[1]}).status_code == 201
        for i in range(55):  # more than a page of 50
            assert admin.put("/api/preferences", json={"theme": "dark" if i % 2 else "light"}).status_code == 200
        token = admin.post("/api/auth/tokens", json={"name": "deploy script"}).json()
        assert admin.delete(f"/api/auth/tokens/{token['id']}").status_code == 204

    for scheme in ("light", "dark"):
        page = pages.new(color_scheme=scheme)
        page.goto(server.url)
        log_in(page, ADMIN)
        page.get_by_test_id("nav-admin").click()
        users_tab = page.get_by_role("tab", name="Users")
        expect(users_tab).to_have_attribute("aria-selected", "true")
        users_tab.focus()
        page.keyboard.press("ArrowRight")  # the keyboard moves between the tabs
        audit_tab = page.get_by_role("tab", name="Audit log")
        expect(audit_tab).to_have_attribute("aria-selected", "true")
        expect(audit_tab).to_be_focused()
        rows = page.get_by_test_id("audit-row")
        expect(rows).to_have_count(50)
        expect(rows.first).to_have_attribute("data-action", "auth.sign_in")  # this sign-in, newest first
        assert axe_violations(page) == [], scheme
        screenshot(page, f"admin-audit-{scheme}")

        everything = page.request.get(server.url + "/api/admin/audit/export").text().count("\n")
        assert 59 <= everything <= 100  # 55 preferences, setup, token create and revoke, sign-ins
        page.get_by_test_id("audit-more").click()
        expect(rows).to_have_count(everything)
        expect(page.get_by_test_id("audit-more")).to_have_count(0)

        page.get_by_label("Action").select_option("token.revoke")
        page.get_by_label("Actor").fill("ADMIN")
        page.get_by_test_id("audit-apply").click()
        expect(rows).to_have_count(1)
        expect(rows.first).to_contain_text(f"token {token['id']}")
        href = page.get_by_test_id("audit-export").get_attribute("href")
        assert href == "/api/admin/audit/export?actor=ADMIN&action=token.revoke"
        export = page.request.get(server.url + href)
        assert export.ok and export.headers["content-type"].startswith("application/x-ndjson")
        assert export.text().count("\n") == 1 and token["id"] in export.text()

        page.get_by_label("From (UTC)").fill("2999-01-01")
        page.get_by_test_id("audit-apply").click()
        expect(page.get_by_test_id("audit-table").locator("caption")).to_have_text("No matching entries")
        page.get_by_test_id("audit-clear").click()
        expect(rows).to_have_count(50)
