"""Single sign-on end to end: Chromium clicks "Sign in with …" on ragchat's login page, picks a user on the real
OpenID Connect provider's page (`oidc-provider-mock`, started by the test on `localhost`, another site than the
app on 127.0.0.1), and lands in ragchat signed in. A refusal at the provider comes back as a message on the login
page, and the password form still works.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from oidc_provider_mock import User, run_server_in_thread
from playwright.sync_api import expect

from tests.e2e.conftest import Pages, screenshot

pytestmark = pytest.mark.e2e

ALICE = User(
    sub="alice-sub",
    claims={"email": "alice@example.com", "email_verified": True, "groups": ["ragchat-admins"]},
)


@pytest.fixture
def provider() -> Iterator[str]:
    with run_server_in_thread(require_nonce=True, user_claims=[ALICE]) as server:
        yield f"http://localhost:{server.server_port}"


def test_sign_in_with_the_identity_provider(live_app: Any, fake_llm: Any, provider: str, pages: Pages) -> None:
    server = live_app(
        auth="on",
        ollama_host=fake_llm(),
        oidc_issuer=provider,
        oidc_client_id="ragchat-e2e",
        oidc_client_secret="e2e-secret",
        oidc_display_name="Acme ID",
        oidc_auto_create=True,
        oidc_admin_group="ragchat-admins",
    )
    r = httpx.post(f"{server.url}/api/auth/setup", json={"username": "admin", "password": "admin-password-1"})
    assert r.status_code == 201, r.text

    page = pages.new()
    page.goto(server.url)
    button = page.get_by_test_id("sso-login")
    expect(button).to_have_text("Sign in with Acme ID")
    expect(page.get_by_test_id("login-form")).to_be_visible()  # LOCAL_LOGIN_ENABLED defaults to true
    screenshot(page, "login-sso")
    button.click()

    # the provider's own page, on another site: pick the user
    page.wait_for_url(f"{provider}/oauth2/authorize**")
    expect(page.get_by_role("heading", name="Authorize Client")).to_be_visible()
    page.get_by_role("button", name=ALICE.sub).click()

    # back in ragchat, signed in as the (new) admin, with the session cookie a password login sets
    expect(page.get_by_test_id("nav-user")).to_have_text("alice@example.com")
    expect(page.get_by_test_id("nav-admin")).to_be_visible()
    assert page.url.rstrip("/") == server.url
    cookies = {c["name"]: c for c in page.context.cookies() if c["domain"] == "127.0.0.1"}
    assert cookies["ragchat_session"]["httpOnly"] and cookies["ragchat_session"]["sameSite"] == "Lax"
    assert cookies["ragchat_sso"]["path"] == "/api/auth/oidc" and cookies["ragchat_sso"]["httpOnly"]

    # a refusal at the provider: the login page says so, and the password form still signs in
    other = pages.new()
    other.goto(server.url)
    other.get_by_test_id("sso-login").click()
    other.wait_for_url(f"{provider}/oauth2/authorize**")
    other.get_by_role("button", name="Deny").click()
    refused = "the identity provider did not sign you in: access_denied"
    expect(other.get_by_test_id("sso-error")).to_contain_text(refused)
    assert other.url.rstrip("/") == server.url  # the reason is not in the URL (nobody can write one there)
    other.get_by_test_id("login-username").fill("admin")
    other.get_by_test_id("login-password").fill("admin-password-1")
    other.get_by_test_id("login-submit").click()
    expect(other.get_by_test_id("nav-user")).to_have_text("admin")
