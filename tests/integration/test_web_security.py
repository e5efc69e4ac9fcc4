"""Browser-facing protections over real HTTP: cross-origin writes, JSON-only routes, the Host allowlist,
security headers, local API docs, and the 429s of the rate limits and cost caps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support.accounts import setup_admin, upload
from tests.support.ratelimit import in_one_window

EVIL = "http://127.0.0.1:8199"


@pytest.fixture
def server(live_app: Callable[..., Any]) -> Any:
    return live_app(auth="on", ingest_workers=1)


async def test_cross_origin_writes_are_refused_with_or_without_a_session(
    server: Any, live_app: Callable[..., Any]
) -> None:
    admin = await setup_admin(server.url)
    for headers in ({"Origin": EVIL}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
        r = await admin.post("/api/documents", files={"files": ("x.txt", b"planted")}, headers=headers)
        assert r.status_code == 403 and r.json()["code"] == "cross_origin", headers
        r = await admin.post("/api/chat", json={"message": "hi"}, headers=headers)
        assert r.status_code == 403
        r = await admin.post("/api/auth/logout", headers=headers)
        assert r.status_code == 403
    assert (await admin.get("/api/documents")).json()["documents"] == []
    # the page's own requests pass
    same = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
    assert (await admin.post("/api/collections", json={"name": "ok"}, headers=same)).status_code == 201

    # AUTH=off: being on loopback is the credential, so the same rule holds
    open_server = live_app(auth="off")
    async with httpx.AsyncClient(base_url=open_server.url) as local:
        r = await local.post("/api/collections", json={"name": "x"}, headers={"Origin": EVIL})
        assert r.status_code == 403
        assert (await local.post("/api/collections", json={"name": "x"})).status_code == 201


async def test_json_routes_refuse_forms_and_text(server: Any) -> None:
    admin = await setup_admin(server.url)
    plain = await admin.post("/api/chat", content=b'{"message": "hi"}', headers={"Content-Type": "text/plain"})
    assert plain.status_code == 415 and plain.json()["code"] == "unsupported_media_type"
    form = await admin.post("/api/chat", data={"message": "hi"})
    assert form.status_code == 415
    login = await admin.post("/api/auth/login", data={"username": "admin", "password": "x"})
    assert login.status_code == 415
    text = await admin.post("/api/documents", content=b"{}", headers={"Content-Type": "text/plain"})
    assert text.status_code == 415


async def test_host_allowlist(server: Any, live_app: Callable[..., Any]) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        r = await client.get("/api/health", headers={"Host": "evil.example"})
        assert r.status_code == 400 and r.json()["code"] == "bad_host"
        r = await client.get("/", headers={"Host": "rebind.attacker.test:8000"})
        assert r.status_code == 400
        for host in ("localhost", f"127.0.0.1:{server.port}", "[::1]:8000"):
            assert (await client.get("/api/health", headers={"Host": host})).status_code == 200, host
    named = live_app(auth="on", allowed_hosts=["rag.example.org"])
    async with httpx.AsyncClient(base_url=named.url) as client:
        assert (await client.get("/api/health", headers={"Host": "rag.example.org"})).status_code == 200
        assert (await client.get("/api/health", headers={"Host": "other.example.org"})).status_code == 400


async def test_security_headers_and_local_api_docs(server: Any) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        for path in ("/", "/api/health", "/api/documents"):
            r = await client.get(path)
            csp = r.headers["content-security-policy"]
            assert (
                "script-src 'self'" in csp
                and "frame-ancestors 'none'" in csp
                and "unsafe-inline" not in csp.split("style-src")[0]
            )
            assert r.headers["x-content-type-options"] == "nosniff"
            assert r.headers["referrer-policy"] and r.headers["x-frame-options"] == "DENY"
        docs = await client.get("/schema")
        assert docs.status_code == 200
        assert "/vendor/redoc.standalone.js" in docs.text and "https://" not in docs.text
        assert "<script>" not in docs.text.replace(" ", "")  # no inline script
        assert (await client.get("/schema/openapi.json")).json()["info"]["title"] == "ragchat"


async def test_rate_limits_and_the_rerank_cost_cap(live_app: Callable[..., Any], fake_ollama: Any) -> None:
    server = live_app(
        auth="on",
        ingest_workers=1,
        ollama_host=fake_ollama.url,
        rate_search_per_min=3,
        rate_chat_per_min=1,
        rerank_max_candidates=30,
    )
    admin = await setup_admin(server.url)
    await upload(admin, "a.txt", "alpha")

    async def five_searches(_: int) -> tuple[list[int], httpx.Response]:
        codes = [(await admin.get("/api/search", params={"q": "alpha"})).status_code for _ in range(4)]
        return codes, await admin.get("/api/search", params={"q": "alpha"})

    _, (codes, r) = await in_one_window(five_searches)  # the limits count per minute
    assert codes == [200, 200, 200, 429]
    assert r.json()["code"] == "rate_limited" and 0 < int(r.headers["retry-after"]) <= 60
    assert "searches" in r.json()["detail"]

    capped = await admin.get("/api/search", params={"q": "x", "limit": 100, "rerank": "true"})
    assert capped.status_code in (400, 429)

    from tests.fakes.script import Reply

    async def two_chats(_: int) -> tuple[httpx.Response, httpx.Response]:
        fake_ollama.reset()
        fake_ollama.enqueue(Reply.text("one"), Reply.text("two"))
        first = await admin.post("/api/chat", json={"message": "hi"})
        return first, await admin.post("/api/chat", json={"message": "again"})

    _, (first, second) = await in_one_window(two_chats)
    assert first.status_code == 200
    assert second.status_code == 429 and second.json()["code"] == "rate_limited"


async def test_rerank_cost_cap(live_app: Callable[..., Any]) -> None:
    server = live_app(auth="off", rerank_max_candidates=30)
    async with httpx.AsyncClient(base_url=server.url) as client:
        r = await client.get("/api/search", params={"q": "x", "limit": 100, "rerank": "true"})
        assert r.status_code == 400 and "at most 10" in r.json()["detail"]
