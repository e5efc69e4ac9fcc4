"""Single sign-on's identity rules and re-checks (issue 43, items 3 and 4), over real HTTP against a real OpenID
Connect provider (`oidc-provider-mock`) and the scriptable one (tests/fakes/oidc_provider.py).

Rules (docs/ACCOUNTS.md, "Single sign-on"): an account is matched by the provider's (issuer, sub) stored at the
first link, or (OIDC_LINK_BY_EMAIL) by an email that the provider vouches for with the JSON `true`, that parses
as an ASCII address and equals an account's username after lower-casing ASCII letters; never a bare username, a
Kelvin sign folded into a `k`, `email_verified: 1`, `"true"` or a missing claim. A user the provider refuses
(revoked at the provider) loses their sessions and API tokens within OIDC_RECHECK_S.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from oidc_provider_mock import User, run_server_in_thread

from tests.fakes.oidc_provider import FakeProvider, fake_provider
from tests.integration.test_oidc import sign_in_fake, sign_in_mock, sso_app, sso_error, whoami
from tests.support.accounts import PASSWORD, add_user, setup_admin

NOT_AN_ADDRESS = User(sub="root-sub", claims={"email": "admin", "email_verified": True})
KELVIN = User(sub="kelvin-sub", claims={"email": "\u212aate@corp.test", "email_verified": True})
VERIFIED_ONE = User(sub="one-sub", claims={"email": "kate@corp.test", "email_verified": 1})
VERIFIED_TEXT = User(sub="text-sub", claims={"email": "kate@corp.test", "email_verified": "true"})
NO_VERIFIED = User(sub="none-sub", claims={"email": "kate@corp.test"})
KATE_UPPER = User(sub="kate-sub", claims={"email": "Kate@Corp.TEST", "email_verified": True})
KATE_AGAIN = User(sub="kate-2-sub", claims={"email": "kate@corp.test", "email_verified": True})
ALICE = User(sub="alice-sub", claims={"email": "alice@example.com", "email_verified": True})
USERS = [NOT_AN_ADDRESS, KELVIN, VERIFIED_ONE, VERIFIED_TEXT, NO_VERIFIED, KATE_UPPER, KATE_AGAIN, ALICE]
NO_MATCH = "no ragchat account matches"


@pytest.fixture
def issuer() -> Iterator[str]:
    with run_server_in_thread(require_nonce=True, user_claims=USERS) as server:
        yield f"http://localhost:{server.server_port}"


async def test_only_a_verified_address_or_the_subject_matches_an_account(
    live_app: Callable[..., Any], issuer: str
) -> None:
    server = sso_app(live_app, issuer)
    admin = await setup_admin(server.url)  # the local "admin"
    kate_id = await add_user(admin, "kate@corp.test")
    admin_id = (await whoami(admin) or {})["id"]

    # never a username, a Kelvin sign folded into "k", a 1, a "true", a missing email_verified
    for user in (NOT_AN_ADDRESS, KELVIN, VERIFIED_ONE, VERIFIED_TEXT, NO_VERIFIED):
        client, done = await sign_in_mock(server, user.sub)
        assert NO_MATCH in (sso_error(done) or ""), user
        assert await whoami(client) is None, user
        await client.aclose()

    # the one normalisation: ASCII letters lower-cased ("Kate@Corp.TEST" is kate@corp.test), then linked by sub
    kate, done = await sign_in_mock(server, KATE_UPPER.sub)
    assert sso_error(done) is None and (await whoami(kate) or {})["id"] == kate_id
    # another subject of the same provider with the same verified address: the account is linked to someone else
    other, done = await sign_in_mock(server, KATE_AGAIN.sub)
    assert NO_MATCH in (sso_error(done) or "") and await whoami(other) is None

    # with OIDC_AUTO_CREATE the strangers get new accounts of their own, never the admin's or kate's
    open_door = sso_app(live_app, issuer, oidc_auto_create=True)
    for user in (NOT_AN_ADDRESS, KELVIN, VERIFIED_ONE):
        client, done = await sign_in_mock(open_door, user.sub)
        assert sso_error(done) is None, user
        me = await whoami(client) or {}
        assert me["id"] not in (admin_id, kate_id) and me["is_admin"] is False, (user, me)
        assert me["username"].startswith("sso-"), me  # no verified address, no preferred_username
        await client.aclose()
    for c in (admin, kate, other):
        await c.aclose()


async def test_linking_by_email_can_be_turned_off(live_app: Callable[..., Any], issuer: str) -> None:
    server = sso_app(live_app, issuer, oidc_link_by_email=False)
    admin = await setup_admin(server.url)
    await add_user(admin, "alice@example.com")
    client, done = await sign_in_mock(server, ALICE.sub)
    assert NO_MATCH in (sso_error(done) or "") and await whoami(client) is None
    for c in (admin, client):
        await c.aclose()


async def _wait_past(seconds: float) -> None:
    await asyncio.sleep(seconds + 0.3)


async def test_a_user_revoked_at_the_provider_loses_session_and_tokens(
    live_app: Callable[..., Any], issuer: str
) -> None:
    server = sso_app(live_app, issuer, oidc_recheck_s=1.0)
    admin = await setup_admin(server.url)
    alice_id = await add_user(admin, "alice@example.com")  # with a password too
    alice, done = await sign_in_mock(server, ALICE.sub)
    assert sso_error(done) is None
    made = await alice.post("/api/auth/tokens", json={"name": "script"})
    assert made.status_code == 201, made.text
    script = httpx.AsyncClient(
        base_url=server.url, timeout=30, headers={"Authorization": f"Bearer {made.json()['token']}"}
    )

    # past the interval the provider is asked (a refresh grant) and says yes: both go on
    await _wait_past(1.0)
    assert (await alice.get("/api/documents")).status_code == 200
    await _wait_past(1.0)
    assert (await script.get("/api/documents")).status_code == 200

    # disabled at the provider (its sessions and tokens revoked there): within OIDC_RECHECK_S both stop
    async with httpx.AsyncClient(timeout=10) as idp:
        assert (await idp.post(f"{issuer}/users/{ALICE.sub}/revoke-tokens")).status_code == 204
    await _wait_past(1.0)
    refused = await script.get("/api/documents")
    assert refused.status_code == 401, refused.text
    assert refused.json()["detail"] == "the identity provider no longer accepts this user: sign in through it again"
    assert (await alice.get("/api/documents")).status_code == 401
    assert await whoami(alice) is None
    # the account's own password does not get around it (the same answer as a wrong password)
    r = await alice.post("/api/auth/login", json={"username": "alice@example.com", "password": PASSWORD})
    assert r.status_code == 401 and r.json()["detail"] == "wrong username or password"

    log = (await admin.get("/api/admin/audit", params={"action": "auth.sign_out_everywhere"})).json()["entries"]
    assert log[0]["target_id"] == alice_id and log[0]["actor_name"] == "identity provider"
    assert "invalid_grant" in log[0]["details"]["reason"]

    # a sign-in the provider accepts again (re-enabled there) lifts it: the token works again
    again, done = await sign_in_mock(server, ALICE.sub)
    assert sso_error(done) is None and (await whoami(again) or {})["id"] == alice_id
    assert (await script.get("/api/documents")).status_code == 200
    for c in (admin, alice, script, again):
        await c.aclose()


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with fake_provider(claims={"sub": "f-1", "email": "frank@example.com", "email_verified": True}) as provider:
        yield provider


async def test_without_a_refresh_token_userinfo_decides(live_app: Callable[..., Any], fake: FakeProvider) -> None:
    """The fake provider issues no refresh token: the access token at its userinfo endpoint is the re-check."""
    server = sso_app(live_app, fake.url, oidc_auto_create=True, oidc_recheck_s=1.0)
    client, done = await sign_in_fake(server)
    assert sso_error(done) is None
    asked = fake.userinfo_requests
    assert (await client.get("/api/documents")).status_code == 200
    assert fake.userinfo_requests == asked  # not due yet: the provider is not asked on every request
    await _wait_past(1.0)
    assert (await client.get("/api/documents")).status_code == 200
    assert fake.userinfo_requests == asked + 1
    fake.revoke()
    await _wait_past(1.0)
    assert (await client.get("/api/documents")).status_code == 401
    await client.aclose()
