"""Helpers for tests with accounts: signed-in HTTP clients over a live server (no tests here)."""

from __future__ import annotations

from typing import Any

import httpx

PASSWORD = "correct horse battery"


async def signed_in(url: str, username: str, password: str = PASSWORD) -> httpx.AsyncClient:
    """An HTTP client holding `username`'s session cookie (like a browser tab, minus the Origin header)."""
    client = httpx.AsyncClient(base_url=url, timeout=60)
    r = await client.post("/api/auth/login", json={"username": username, "password": password})
    assert r.status_code == 200, r.text
    return client


async def setup_admin(url: str, username: str = "admin", password: str = PASSWORD) -> httpx.AsyncClient:
    """First visit: create the admin account; the returned client is signed in as it."""
    client = httpx.AsyncClient(base_url=url, timeout=60)
    r = await client.post("/api/auth/setup", json={"username": username, "password": password})
    assert r.status_code == 201, r.text
    return client


async def add_user(admin: httpx.AsyncClient, username: str, password: str = PASSWORD, **extra: Any) -> str:
    r = await admin.post("/api/admin/users", json={"username": username, "password": password, **extra})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def upload(client: httpx.AsyncClient, name: str, text: str, **data: str) -> str:
    r = await client.post("/api/documents", files={"files": (name, text.encode())}, data=data or None)
    assert r.status_code == 201, r.text
    result = r.json()["results"][0]
    assert result["status"] in ("queued", "duplicate"), result
    return str(result["document"]["id"])


async def wait_ready(client: httpx.AsyncClient, ids: list[str], timeout_s: float = 120) -> None:
    import asyncio
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        docs = {d["id"]: d for d in (await client.get("/api/documents")).json()["documents"]}
        states = [docs[i]["status"] for i in ids if i in docs]
        assert "failed" not in states, docs
        if len(states) == len(ids) and set(states) == {"ready"}:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"documents not ready after {timeout_s}s")
