"""Token policy (issue 33): an admin's reset, disabling a user, "log out everywhere" and a password change revoke
the user's API tokens; tokens may expire (refused with 401 and listed as expired)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.support.accounts import PASSWORD, add_user, setup_admin, signed_in


@pytest.fixture
def server(live_app: Callable[..., Any]) -> Any:
    return live_app(auth="on", ingest_workers=0, rate_login_per_min=100)


async def new_token(client: httpx.AsyncClient, name: str = "script", **extra: Any) -> dict[str, Any]:
    r = await client.post("/api/auth/tokens", json={"name": name, **extra})
    assert r.status_code == 201, r.text
    return r.json()


async def works(url: str, token: str) -> int:
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"}) as script:
        return (await script.get("/api/documents")).status_code


async def test_admin_reset_revokes_the_users_tokens(server: Any) -> None:
    """The probe's reproduction: after a compromise the admin resets the password; the attacker's token dies."""
    admin = await setup_admin(server.url)
    uid = await add_user(admin, "bob")
    bob = await signed_in(server.url, "bob")
    stolen = (await new_token(bob, "attacker's"))["token"]
    assert await works(server.url, stolen) == 200
    r = await admin.post(f"/api/admin/users/{uid}/password", json={"password": "a brand new password"})
    assert r.status_code == 204
    assert await works(server.url, stolen) == 401
    assert (await bob.get("/api/documents")).status_code == 401  # sessions ended too
    bob2 = await signed_in(server.url, "bob", "a brand new password")
    assert (await bob2.get("/api/auth/tokens")).json()["tokens"] == []  # revoked tokens are gone from the list


async def test_disabling_a_user_revokes_tokens_for_good(server: Any) -> None:
    admin = await setup_admin(server.url)
    uid = await add_user(admin, "carol")
    carol = await signed_in(server.url, "carol")
    token = (await new_token(carol))["token"]
    assert (await admin.patch(f"/api/admin/users/{uid}", json={"disabled": True})).status_code == 200
    assert await works(server.url, token) == 401
    assert (await admin.patch(f"/api/admin/users/{uid}", json={"disabled": False})).status_code == 200
    assert await works(server.url, token) == 401  # enabling again does not bring the token back


async def test_logout_everywhere_revokes_tokens_unless_asked_not_to(server: Any) -> None:
    admin = await setup_admin(server.url)
    kept = (await new_token(admin, "kept"))["token"]
    assert (await admin.post("/api/auth/logout-all", params={"revoke_tokens": "false"})).status_code == 204
    assert await works(server.url, kept) == 200
    assert (await admin.get("/api/documents")).status_code == 401

    again = await signed_in(server.url, "admin")
    assert (await again.post("/api/auth/logout-all")).status_code == 204  # the default revokes
    assert await works(server.url, kept) == 401

    third = await signed_in(server.url, "admin")
    token = (await new_token(third))["token"]
    assert (await third.post("/api/auth/logout-all", params={"revoke_tokens": "true"})).status_code == 204
    assert await works(server.url, token) == 401
    fourth = await signed_in(server.url, "admin")
    for hostile in ("maybe", "\x00", "1" * 5000):
        bad = await fourth.post("/api/auth/logout-all", params={"revoke_tokens": hostile})
        assert bad.status_code == 400, bad.text
    assert (await fourth.get("/api/documents")).status_code == 200  # nothing happened


async def test_password_change_revokes_other_tokens(server: Any) -> None:
    admin = await setup_admin(server.url)
    old = (await new_token(admin, "old"))["token"]
    via = (await new_token(admin, "via"))["token"]
    # changed with a token: that token stays, the others are revoked
    async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {via}"}) as script:
        r = await script.post("/api/auth/password", json={"current_password": PASSWORD, "new_password": "second pass"})
        assert r.status_code == 204
    assert await works(server.url, old) == 401
    assert await works(server.url, via) == 200
    assert (await admin.get("/api/documents")).status_code == 401  # and every session ended
    # changed in a session: that session stays, every token is revoked
    admin = await signed_in(server.url, "admin", "second pass")
    r = await admin.post("/api/auth/password", json={"current_password": "second pass", "new_password": "third pass"})
    assert r.status_code == 204
    assert await works(server.url, via) == 401
    assert (await admin.get("/api/documents")).status_code == 200


async def test_tokens_expire(server: Any) -> None:
    admin = await setup_admin(server.url)
    month = await new_token(admin, "month", expires_in_days=30)
    left = datetime.fromisoformat(month["expires_at"]) - datetime.now(UTC)
    assert timedelta(days=29, hours=23) < left <= timedelta(days=30) and month["expired"] is False
    forever = await new_token(admin, "forever")
    assert forever["expires_at"] is None and forever["expired"] is False
    soon = await new_token(admin, "soon", expires_at=(datetime.now(UTC) + timedelta(seconds=2)).isoformat())
    assert await works(server.url, soon["token"]) == 200
    await asyncio.sleep(2.5)
    async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {soon['token']}"}) as s:
        r = await s.get("/api/documents")
    assert r.status_code == 401 and r.json()["code"] == "unauthorized" and "expired" in r.json()["detail"]
    assert await works(server.url, month["token"]) == 200 and await works(server.url, forever["token"]) == 200
    listed = {t["name"]: t for t in (await admin.get("/api/auth/tokens")).json()["tokens"]}
    assert listed["soon"]["expired"] is True and listed["month"]["expired"] is False
    assert listed["forever"]["expires_at"] is None
    # an expired token can still be revoked (and then leaves the list)
    assert (await admin.delete(f"/api/auth/tokens/{soon['id']}")).status_code == 204


@pytest.mark.parametrize(
    "extra",
    [
        {"expires_in_days": 0},
        {"expires_in_days": -5},
        {"expires_in_days": 10**12},
        {"expires_in_days": "soon"},
        {"expires_at": "2001-01-01T00:00:00Z"},  # the past
        {"expires_at": "9999-12-31T23:59:59Z"},  # too far
        {"expires_at": "2030-01-01T00:00:00"},  # no time zone
        {"expires_at": "2030-01-01T00:00:00\u0000Z"},
        {"expires_at": "not a date"},
        {"expires_in_days": 5, "expires_at": "2030-01-01T00:00:00Z"},  # both
    ],
)
async def test_hostile_expiry_is_a_400(server: Any, extra: dict[str, Any]) -> None:
    admin = await setup_admin(server.url)
    r = await admin.post("/api/auth/tokens", json={"name": "x", **extra})
    assert r.status_code == 400 and r.json()["code"] in ("bad_request", "validation_error"), r.text
    assert (await admin.get("/api/auth/tokens")).json()["tokens"] == []
