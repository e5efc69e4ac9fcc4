"""One rule for ids a caller cannot read (issue 33, item 5): a `document_ids` / `collection_ids` entry that is
someone else's (not shared) or nobody's is a 404 `not_found` naming the kind and the ids, with the same body
either way, on every route that takes them. (It used to be 200 with empty results on /api/chat, /api/search and
/api/rag's collections, and 404 elsewhere.) The owner's same request is not a 404."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from tests.support.accounts import add_user, setup_admin, signed_in, upload

Ids = dict[str, list[str]]
Route = Callable[[dict[str, Any], str, Ids], Awaitable[tuple[int, str, Any]]]


async def _http(who: dict[str, Any], method: str, path: str, **kw: Any) -> tuple[int, str, Any]:
    async with httpx.AsyncClient(base_url=who["url"], headers=who["auth"], timeout=60) as client:
        async with client.stream(method, path, **kw) as r:
            body = await r.aread()
    if r.status_code >= 400:
        data = json.loads(body)
        assert set(data) == {"status_code", "code", "detail", "extra", "request_id"}, data
        return r.status_code, data["detail"], (data["code"], data["extra"])
    return r.status_code, "", None


async def chat(who: dict[str, Any], _: str, ids: Ids) -> tuple[int, str, Any]:
    return await _http(who, "POST", "/api/chat", json={"message": "what is in it?", **ids})


async def search_get(who: dict[str, Any], _: str, ids: Ids) -> tuple[int, str, Any]:
    return await _http(who, "GET", "/api/search", params={"q": "volcano", **ids})


async def search_post(who: dict[str, Any], _: str, ids: Ids) -> tuple[int, str, Any]:
    return await _http(who, "POST", "/api/search", json={"query": "volcano", "filters": ids})


async def rag(who: dict[str, Any], _: str, ids: Ids) -> tuple[int, str, Any]:
    return await _http(who, "POST", "/api/rag", json={"query": "volcano", "filters": ids})


async def thread_patch(who: dict[str, Any], _: str, ids: Ids) -> tuple[int, str, Any]:
    return await _http(who, "PATCH", f"/api/threads/{who['thread']}", json={"settings": ids})


def mcp_tool(tool: str, args: dict[str, Any]) -> Route:
    async def call(who: dict[str, Any], _: str, ids: Ids) -> tuple[int, str, Any]:
        async with (
            httpx2.AsyncClient(headers=who["auth"], timeout=httpx2.Timeout(30, read=60)) as http,
            streamable_http_client(f"{who['url']}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool(tool, {**args, **ids})
        text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
        text = text.removeprefix(f"Error executing tool {tool}: ")  # the SDK's framing of a tool's error
        return (404, text, None) if result.is_error else (200, "", None)

    return call


ROUTES: dict[str, Route] = {
    "POST /api/chat": chat,
    "GET /api/search": search_get,
    "POST /api/search": search_post,
    "POST /api/rag": rag,
    "PATCH /api/threads/{id}": thread_patch,
    "MCP search_documents": mcp_tool("search_documents", {"query": "volcano"}),
    "MCP ask": mcp_tool("ask", {"question": "where is the volcano?"}),
}


async def first_thread(client: httpx.AsyncClient) -> str:
    async with client.stream("POST", "/api/chat", json={"message": "hello"}) as r:
        assert r.status_code == 200
        async for line in r.aiter_lines():
            if line.startswith("data:") and "thread_id" in line:
                return str(json.loads(line[5:])["thread_id"])
    raise AssertionError("no thread event")


@pytest.mark.parametrize("route", list(ROUTES))
async def test_an_unreadable_id_is_the_same_404_on_every_route(
    route: str, live_app: Callable[..., Any], fake_ollama: Any
) -> None:
    fake_ollama.responder = lambda body: '{"score": 0.5}' if body.get("format") else "Nothing about that [1]."
    server = live_app(auth="on", ingest_workers=0, ollama_host=fake_ollama.url, rate_chat_per_min=100)
    admin = await setup_admin(server.url)
    await add_user(admin, "bob")
    bob = await signed_in(server.url, "bob")
    bob_doc = await upload(bob, "secret.txt", "Bob's notes: the volcano expedition leaves on Tuesday.")
    bob_coll = (await bob.post("/api/collections", json={"name": "private"})).json()["id"]
    callers = {}
    for name, client in (("admin", admin), ("bob", bob)):
        token = (await client.post("/api/auth/tokens", json={"name": "t"})).json()["token"]
        callers[name] = {"url": server.url, "auth": {"Authorization": f"Bearer {token}"}}
        callers[name]["thread"] = await first_thread(client)
    nobody_doc, nobody_coll = str(uuid.uuid4()), str(uuid.uuid4())
    call = ROUTES[route]

    seen: dict[str, set[str]] = {"document": set(), "collection": set()}
    for kind, key, others, nobodys in (
        ("document", "document_ids", bob_doc, nobody_doc),
        ("collection", "collection_ids", bob_coll, nobody_coll),
    ):
        for missing in (others, nobodys):
            status, detail, extra = await call(callers["admin"], kind, {key: [missing]})
            assert status == 404, (route, kind, detail)
            assert detail == f"{kind} {missing} not found", detail  # MCP's tool error says the same words
            if extra is not None:
                assert extra == ("not_found", {"kind": kind, "ids": [missing]})
            seen[kind].add(detail.replace(missing, "<id>"))
        # the owner's request with the same id is not refused
        status, detail, _ = await call(callers["bob"], kind, {key: [others]})
        assert status == 200, (route, kind, detail)
    # someone else's id and nobody's read the same: nothing says which exists
    assert all(len(details) == 1 for details in seen.values()), seen
    # several at once: all named, the kind first that has any
    status, detail, extra = await call(callers["admin"], "", {"document_ids": [bob_doc, nobody_doc]})
    assert status == 404 and detail == f"documents not found: {bob_doc}, {nobody_doc}"
    await admin.aclose()
    await bob.aclose()
