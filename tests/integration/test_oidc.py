"""Single sign-on over real HTTP: the real app against a real OpenID Connect provider started by the test
(`oidc-provider-mock`), and against a small scriptable one (tests/fakes/oidc_provider.py) for the ID tokens the
mock will not make (another client's audience, expired, a bad signature, a wrong nonce, rotated keys).

Every hostile case must end in a redirect to the login page with the reason (which the page reads once from
`GET /api/auth/oidc/config`), never a 500, and in bounded time.
"""

from __future__ import annotations

import base64
import socket
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import psycopg
import pytest
from oidc_provider_mock import User, run_server_in_thread

from tests.fakes.oidc_provider import FakeProvider, _new_key, fake_provider
from tests.support.accounts import PASSWORD, add_user, setup_admin, signed_in

CLIENT_ID = "ragchat-test"
SECRET = "client-secret-1"
ALICE = User(sub="alice-sub", claims={"email": "alice@example.com", "email_verified": True, "name": "Alice"})
BOB = User(sub="bob-sub", claims={"email": "bob@example.com", "email_verified": True, "groups": ["ragchat-admins"]})
CAROL = User(sub="carol-sub", claims={"email": "carol@example.com", "email_verified": True, "groups": ["staff"]})
EVE = User(sub="eve-sub", claims={"email": "admin", "email_verified": False})


@pytest.fixture
def mock_issuer() -> Iterator[str]:
    with run_server_in_thread(require_nonce=True, user_claims=[ALICE, BOB, CAROL, EVE]) as server:
        yield f"http://localhost:{server.server_port}"


def sso_app(live_app: Callable[..., Any], issuer: str, **overrides: Any) -> Any:
    return live_app(
        auth="on",
        oidc_issuer=issuer,
        oidc_client_id=CLIENT_ID,
        oidc_client_secret=SECRET,
        oidc_display_name="Acme ID",
        **overrides,
    )


def sso_error(response: httpx.Response) -> str | None:
    """The reason the callback gave (None: it signed in). Either way it redirects to `/`; a failure's reason
    is in a short-lived HttpOnly cookie the login page's /config reads, never in the URL."""
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/"
    raw = response.cookies.get("ragchat_sso_error")
    if not raw:
        assert response.cookies.get("ragchat_session")  # signed in
        return None
    assert "ragchat_session" not in response.cookies
    return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()


async def start(client: httpx.AsyncClient) -> str:
    """GET /api/auth/oidc/login → the provider's authorization URL (and the flow cookie in `client`)."""
    r = await client.get("/api/auth/oidc/login")
    assert r.status_code == 303, r.text
    assert any(c.name == "ragchat_sso" for c in client.cookies.jar)
    return r.headers["location"]


async def approve_at_mock(authorize_url: str, sub: str) -> str:
    """The person at the mock provider's page picks `sub`: the provider answers the redirect to the callback."""
    async with httpx.AsyncClient(timeout=30) as browser_at_idp:
        r = await browser_at_idp.post(authorize_url, data={"sub": sub})
    assert r.status_code == 302, r.text
    return r.headers["location"]


async def approve_at_fake(authorize_url: str) -> str:
    async with httpx.AsyncClient(timeout=30) as browser_at_idp:
        r = await browser_at_idp.get(authorize_url)
    assert r.status_code == 302, r.text
    return r.headers["location"]


async def sign_in_mock(server: Any, sub: str) -> tuple[httpx.AsyncClient, httpx.Response]:
    client = httpx.AsyncClient(base_url=server.url, timeout=30)
    callback = await approve_at_mock(await start(client), sub)
    return client, await client.get(callback)


async def whoami(client: httpx.AsyncClient) -> dict[str, Any] | None:
    return (await client.get("/api/auth/session")).json()["user"]


async def test_sign_in_matches_a_verified_email_then_the_subject(
    live_app: Callable[..., Any], mock_issuer: str
) -> None:
    server = sso_app(live_app, mock_issuer)
    admin = await setup_admin(server.url)
    alice_id = await add_user(admin, "alice@example.com")

    client, done = await sign_in_mock(server, ALICE.sub)
    assert sso_error(done) is None
    session = next(c for c in client.cookies.jar if c.name == "ragchat_session")
    assert session.has_nonstandard_attr("HttpOnly") and session.get_nonstandard_attr("SameSite", "").lower() == "lax"
    me = await whoami(client)
    assert me is not None and me["id"] == alice_id and me["is_admin"] is False
    assert (await client.get("/api/documents")).status_code == 200  # the same session a password login makes

    # linked by (issuer, subject) now: a changed email at the provider still signs in the same user
    async with httpx.AsyncClient(timeout=10) as idp:
        changed = {"email": "alice.new@example.com", "email_verified": True}
        assert (await idp.put(f"{mock_issuer}/users/{ALICE.sub}", json=changed)).status_code == 204
    again, done = await sign_in_mock(server, ALICE.sub)
    assert sso_error(done) is None and (await whoami(again) or {})["id"] == alice_id

    # an unverified email never matches an account (EVE claims the admin's username as her email)
    eve, done = await sign_in_mock(server, EVE.sub)
    assert "no ragchat account matches" in (sso_error(done) or "")
    assert await whoami(eve) is None

    # the login page reads the reason once, from the error cookie (not from the URL)
    config = (await eve.get("/api/auth/oidc/config")).json()
    assert config["error"].startswith("no ragchat account matches") and config["label"] == "Sign in with Acme ID"
    assert (await eve.get("/api/auth/oidc/config")).json()["error"] is None

    # the disabled local user cannot sign in through the provider either, and an existing session ends
    assert (await admin.patch(f"/api/admin/users/{alice_id}", json={"disabled": True})).status_code == 200
    assert await whoami(again) is None
    refused_client, done = await sign_in_mock(server, ALICE.sub)
    assert sso_error(done) == "this account is disabled: ask an admin"
    assert await whoami(refused_client) is None

    # both SSO sign-ins of alice and the two refusals are in the audit log
    log = (await admin.get("/api/admin/audit", params={"limit": 100})).json()["entries"]
    signed = [e for e in log if e["action"] == "auth.sign_in" and e["details"].get("method") == "oidc"]
    assert [e["target_id"] for e in signed] == [alice_id, alice_id]
    refused = [e for e in log if e["action"] == "auth.sign_in_failed" and e["details"].get("method") == "oidc"]
    assert len(refused) == 2 and any("disabled" in e["details"]["reason"] for e in refused)
    for c in (admin, client, again, eve, refused_client):
        await c.aclose()


async def test_auto_create_off_refuses_a_stranger_and_on_creates_admins_by_group(
    live_app: Callable[..., Any], mock_issuer: str
) -> None:
    strict = sso_app(live_app, mock_issuer, oidc_admin_group="ragchat-admins")
    admin = await setup_admin(strict.url)
    stranger, done = await sign_in_mock(strict, BOB.sub)
    assert sso_error(done) == (
        "no ragchat account matches 'bob@example.com': ask an admin to create one (or to set OIDC_AUTO_CREATE)"
    )
    assert await whoami(stranger) is None
    assert "bob@example.com" not in {u["username"] for u in (await admin.get("/api/admin/users")).json()["users"]}

    open_door = sso_app(live_app, mock_issuer, oidc_admin_group="ragchat-admins", oidc_auto_create=True)
    bob, done = await sign_in_mock(open_door, BOB.sub)
    assert sso_error(done) is None
    me = await whoami(bob)
    assert me is not None and me["username"] == "bob@example.com" and me["is_admin"] is True
    assert (await bob.get("/api/admin/users")).status_code == 200

    carol, done = await sign_in_mock(open_door, CAROL.sub)
    assert sso_error(done) is None
    me = await whoami(carol)
    assert me is not None and me["username"] == "carol@example.com" and me["is_admin"] is False
    assert (await carol.get("/api/admin/users")).status_code == 403

    # an SSO-made account has no password: nobody logs in with one
    r = await carol.post("/api/auth/login", json={"username": "carol@example.com", "password": "!sso"})
    assert r.status_code == 401

    # out of the group at the provider: no longer an admin at the next sign-in (another admin exists)
    async with httpx.AsyncClient(timeout=10) as idp:
        body = {**BOB.claims, "groups": ["staff"]}
        assert (await idp.put(f"{mock_issuer}/users/{BOB.sub}", json=body)).status_code == 204
    bob2, done = await sign_in_mock(open_door, BOB.sub)
    assert sso_error(done) is None and (await whoami(bob2) or {})["is_admin"] is False
    for c in (admin, stranger, bob, carol, bob2):
        await c.aclose()


async def test_replayed_missing_and_foreign_state_are_refused(live_app: Callable[..., Any], mock_issuer: str) -> None:
    server = sso_app(live_app, mock_issuer, oidc_auto_create=True)
    await (await setup_admin(server.url)).aclose()
    client = httpx.AsyncClient(base_url=server.url, timeout=30)
    authorize = await start(client)
    query = parse_qs(urlsplit(authorize).query)
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) == 43
    assert query["client_id"] == [CLIENT_ID] and query["scope"] == ["openid email profile"]
    assert len(query["state"][0]) >= 32 and len(query["nonce"][0]) >= 32
    assert query["redirect_uri"] == [f"{server.url}/api/auth/oidc/callback"]
    callback = await approve_at_mock(authorize, ALICE.sub)

    # the callback URL in another browser (no flow cookie): refused, and the state is spent
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as other:
        assert "started in another browser" in (sso_error(await other.get(callback)) or "")
    assert "already used" in (sso_error(await client.get(callback)) or "")

    # a completed sign-in replayed in the same browser
    callback = await approve_at_mock(await start(client), ALICE.sub)
    assert sso_error(await client.get(callback)) is None
    t0 = time.monotonic()
    replay = await client.get(callback)
    assert "already used" in (sso_error(replay) or "") and time.monotonic() - t0 < 5

    # no state, a made-up state, an over-long one, a NUL, the provider's own error
    anon = httpx.AsyncClient(base_url=server.url, timeout=30)
    assert "no state" in (sso_error(await anon.get("/api/auth/oidc/callback?code=abc")) or "")
    assert "already used" in (sso_error(await anon.get("/api/auth/oidc/callback?code=abc&state=forged")) or "")
    assert "no state" in (sso_error(await anon.get("/api/auth/oidc/callback", params={"state": "s" * 5000})) or "")
    nul = await anon.get("/api/auth/oidc/callback?state=a%00b&code=c")
    assert nul.status_code == 400 and nul.json()["code"] == "bad_request"
    flow = parse_qs(urlsplit(await start(anon)).query)["state"][0]
    denied = await anon.get("/api/auth/oidc/callback", params={"state": flow, "error": "access_denied"})
    assert "did not sign you in: access_denied" in (sso_error(denied) or "")

    # a code issued for one sign-in brought back with another sign-in's state: the nonce gives it away
    code_a = parse_qs(urlsplit(await approve_at_mock(await start(anon), ALICE.sub)).query)["code"][0]
    state_b = parse_qs(urlsplit(await start(anon)).query)["state"][0]
    swapped = await anon.get("/api/auth/oidc/callback", params={"state": state_b, "code": code_a})
    assert "nonce does not match" in (sso_error(swapped) or "")
    assert await whoami(anon) is None
    for c in (client, anon):
        await c.aclose()


async def test_two_tabs_and_a_sign_in_that_took_too_long(
    live_app: Callable[..., Any], mock_issuer: str, db: str
) -> None:
    server = sso_app(live_app, mock_issuer, oidc_auto_create=True)
    client = httpx.AsyncClient(base_url=server.url, timeout=30)
    first, second = await start(client), await start(client)  # two tabs of one browser: one flow cookie
    assert sso_error(await client.get(await approve_at_mock(first, ALICE.sub))) is None
    assert sso_error(await client.get(await approve_at_mock(second, ALICE.sub))) is None

    late = await approve_at_mock(await start(client), ALICE.sub)
    async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:  # eleven minutes pass
        await conn.execute("UPDATE oidc_flows SET expires_at = now() - interval '1 minute'")
    assert sso_error(await client.get(late)) == "this sign-in took longer than 10 minutes: start again"
    await client.aclose()


async def test_an_expired_id_token_from_the_mock_is_refused(live_app: Callable[..., Any]) -> None:
    with run_server_in_thread(user_claims=[ALICE], access_token_max_age=timedelta(minutes=-10)) as idp:
        server = sso_app(live_app, f"http://localhost:{idp.server_port}", oidc_auto_create=True)
        client, done = await sign_in_mock(server, ALICE.sub)
        assert sso_error(done) == "the ID token has expired: sign in again"
        assert await whoami(client) is None
        await client.aclose()


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with fake_provider(claims={"sub": "f-1", "email": "frank@example.com", "email_verified": True}) as provider:
        yield provider


async def sign_in_fake(server: Any) -> tuple[httpx.AsyncClient, httpx.Response]:
    client = httpx.AsyncClient(base_url=server.url, timeout=30)
    callback = await approve_at_fake(await start(client))
    t0 = time.monotonic()
    done = await client.get(callback)
    assert time.monotonic() - t0 < 10
    return client, done


def _aud(c: dict[str, Any]) -> dict[str, Any]:
    return {**c, "aud": "some-other-app"}


def _exp(c: dict[str, Any]) -> dict[str, Any]:
    return {**c, "iat": c["iat"] - 3600, "exp": c["iat"] - 600}


def _nonce(c: dict[str, Any]) -> dict[str, Any]:
    return {**c, "nonce": "not-the-one"}


def _iss(c: dict[str, Any]) -> dict[str, Any]:
    return {**c, "iss": "https://evil.example"}


def _azp(c: dict[str, Any]) -> dict[str, Any]:
    return {**c, "aud": [c["aud"], "other"], "azp": "other"}


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (_aud, "the ID token was issued for another client (its audience is not this ragchat)"),
        (_azp, "the ID token was issued to another client (azp)"),
        (_exp, "the ID token has expired: sign in again"),
        (_nonce, "the ID token's nonce does not match this sign-in (a replayed or substituted token)"),
        (_iss, "the ID token was issued by 'https://evil.example'"),
        ("bad-signature", "the ID token's signature does not verify with the provider's published keys"),
    ],
)
async def test_id_tokens_that_must_not_sign_in(
    live_app: Callable[..., Any], fake: FakeProvider, tamper: Any, reason: str
) -> None:
    server = sso_app(live_app, fake.url, oidc_auto_create=True)
    if tamper == "bad-signature":
        fake.sign_with = _new_key()  # same kid in the header, another key's signature
    else:
        fake.tamper = tamper
    client, done = await sign_in_fake(server)
    assert (sso_error(done) or "").startswith(reason)
    assert await whoami(client) is None
    await client.aclose()


async def test_pkce_client_secret_and_key_rotation(live_app: Callable[..., Any], fake: FakeProvider) -> None:
    server = sso_app(live_app, fake.url, oidc_auto_create=True)
    client, done = await sign_in_fake(server)
    assert sso_error(done) is None and (await whoami(client) or {})["username"] == "frank@example.com"
    sent = fake.token_requests[-1]
    assert sent["grant_type"] == "authorization_code" and len(sent["code_verifier"]) >= 43
    assert sent["authorization"].startswith("Basic ")  # client_secret_basic
    assert fake.jwks_fetches == 1

    fake.rotate()  # a new kid: the app fetches the key set again, once, and the sign-in works
    client2, done = await sign_in_fake(server)
    assert sso_error(done) is None and (await whoami(client2) or {})["username"] == "frank@example.com"
    assert fake.jwks_fetches == 2
    client3, done = await sign_in_fake(server)  # the new key is cached
    assert sso_error(done) is None and fake.jwks_fetches == 2

    # a token signed by a key the provider does not publish, under its own kid: one refetch, then refused
    fake.sign_with, fake.signer_kid = _new_key(), True
    client4, done = await sign_in_fake(server)
    assert sso_error(done) == "the ID token's signature does not verify with the provider's published keys"
    assert fake.jwks_fetches == 3
    for c in (client, client2, client3, client4):
        await c.aclose()


async def test_a_provider_that_hangs_mid_sign_in_or_names_another_issuer(
    live_app: Callable[..., Any], fake: FakeProvider
) -> None:
    server = sso_app(live_app, fake.url, oidc_auto_create=True, oidc_timeout_s=1.0)
    fake.token_delay_s = 15.0  # far beyond the 1 s limit, so a busy machine's slower sign-in still tells them apart
    t0 = time.monotonic()
    client, done = await sign_in_fake(server)
    assert sso_error(done) == "the identity provider's token endpoint did not answer within 1 s"
    assert time.monotonic() - t0 < 12 and await whoami(client) is None
    await client.aclose()

    fake.token_delay_s, fake.discovery_issuer = 0.0, "https://impostor.example"
    other = sso_app(live_app, fake.url, oidc_auto_create=True)
    async with httpx.AsyncClient(base_url=other.url, timeout=30) as anon:
        config = (await anon.get("/api/auth/oidc/config")).json()
        assert config["unavailable"] == (
            f"the provider's discovery document names the issuer 'https://impostor.example', not {fake.url!r}"
        )
        assert config["unavailable"] in (sso_error(await anon.get("/api/auth/oidc/login")) or "")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers (a provider that hangs)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield s.getsockname()[1]


async def test_provider_down_leaves_local_login_working(live_app: Callable[..., Any], silent_port: int) -> None:
    server = sso_app(live_app, f"http://127.0.0.1:{silent_port}", oidc_timeout_s=1.0)
    admin = await setup_admin(server.url)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as anon:
        t0 = time.monotonic()
        config = (await anon.get("/api/auth/oidc/config")).json()
        assert time.monotonic() - t0 < 3
        assert config["sso"] is True and config["label"] == "Sign in with Acme ID" and config["local_login"] is True
        assert "did not answer within 1 s" in config["unavailable"]
        t0 = time.monotonic()
        r = await anon.get("/api/auth/oidc/login")
        assert "did not answer within 1 s" in (sso_error(r) or "") and time.monotonic() - t0 < 3
    local = await signed_in(server.url, "admin", PASSWORD)
    assert (await whoami(local) or {})["username"] == "admin"
    for c in (admin, local):
        await c.aclose()


async def test_local_login_off(live_app: Callable[..., Any], mock_issuer: str) -> None:
    server = sso_app(live_app, mock_issuer, local_login_enabled=False, oidc_auto_create=True)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as anon:
        session = (await anon.get("/api/auth/session")).json()
        assert session["setup_required"] is False  # the first admin comes through single sign-on
        config = (await anon.get("/api/auth/oidc/config")).json()
        assert config == {
            "sso": True,
            "label": "Sign in with Acme ID",
            "unavailable": None,
            "local_login": False,
            "error": None,
        }
        for path in ("/api/auth/login", "/api/auth/setup"):
            r = await anon.post(path, json={"username": "admin", "password": PASSWORD})
            assert r.status_code == 403 and "sign in with Acme ID" in r.json()["detail"]
    client, done = await sign_in_mock(server, ALICE.sub)
    assert sso_error(done) is None and (await whoami(client) or {})["username"] == "alice@example.com"
    await client.aclose()


async def test_sso_off_by_default(live_app: Callable[..., Any]) -> None:
    server = live_app(auth="on")
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as anon:
        assert (await anon.get("/api/auth/oidc/config")).json() == {
            "sso": False,
            "label": None,
            "unavailable": None,
            "local_login": True,
            "error": None,
        }
        assert (await anon.get("/api/auth/oidc/login")).status_code == 404
        assert (await anon.get("/api/auth/oidc/callback?state=x&code=y")).status_code == 404
