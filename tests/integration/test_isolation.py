"""Isolation between users: every route that takes an id, every retrieval arm, the chat tool, the reranker and
the BM25 statistics; then sharing through a collection opens exactly the shared documents."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse

from ragchat.settings import Settings
from tests.fakes.script import Reply
from tests.support.accounts import add_user, setup_admin, signed_in, upload, wait_ready

A_SECRET = "The zanzibar protocol requires quarterly falafel audits of the quantum ledger."
B_NOTE = "Quarterly reviews of the garden ledger happen in spring."
PUBLIC = {
    ("GET", "/api/health"),
    ("GET", "/api/auth/session"),
    ("POST", "/api/auth/setup"),
    ("POST", "/api/auth/login"),
    ("POST", "/api/auth/logout"),
    # single sign-on: the login page's SSO button, the redirect to the provider and its way back (tests/integration/
    # test_oidc.py checks forged and replayed callbacks)
    ("GET", "/api/auth/oidc/config"),
    ("GET", "/api/auth/oidc/login"),
    ("GET", "/api/auth/oidc/callback"),
}
#: A body each id route accepts, so the answer is about the id and not a 400 for the body.
BODIES = {
    ("PATCH", "/api/threads/{thread_id:uuid}"): {"title": "hijacked"},
    ("POST", "/api/threads/{thread_id:uuid}/branch"): {"message_id": "00000000-0000-0000-0000-000000000000"},
    ("PUT", "/api/messages/{message_id:uuid}/feedback"): {"rating": "up"},
    ("POST", "/api/documents/{document_id:uuid}/rechunk"): {"strategy": "line"},
    ("PATCH", "/api/collections/{collection_id:uuid}"): {"name": "hijacked"},
    ("PATCH", "/api/documents/{document_id:uuid}"): {"metadata": {"hijacked": "yes"}},
    ("PUT", "/api/collections/{collection_id:uuid}/members/{user_id:uuid}"): {"role": "write"},
    ("PATCH", "/api/admin/users/{user_id:uuid}"): {"disabled": True},
    ("POST", "/api/admin/users/{user_id:uuid}/password"): {"password": "hijacked password"},
}


def api_routes(settings: Settings) -> list[tuple[str, str]]:
    """(method, path) of every /api route in the app's route table."""
    from ragchat.app import create_app

    app = create_app(settings)
    out = []
    for route in app.routes:
        if not route.path.startswith("/api"):
            continue
        for method in sorted(getattr(route, "methods", set()) - {"HEAD", "OPTIONS"}):
            out.append((method, route.path))
    return sorted(set(out))


async def events_of(client: httpx.AsyncClient, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    async with aconnect_sse(client, "POST", "/api/chat", json=body) as source:
        assert source.response.status_code == 200
        return [(e.event, e.json()) async for e in source.aiter_sse() if e.event and e.event != "message"]


@pytest.fixture
def server(live_app: Callable[..., Any], fake_ollama: Any) -> Any:
    return live_app(auth="on", ingest_workers=1, ollama_host=fake_ollama.url)


async def test_every_route_needs_a_caller(server: Any, settings: Settings) -> None:
    await (await setup_admin(server.url)).aclose()
    routes = api_routes(settings)
    assert len(routes) > 20
    async with httpx.AsyncClient(base_url=server.url) as anon:
        for method, path in routes:
            if (method, path) in PUBLIC:
                continue
            url = re.sub(r"\{[a-z_]+:uuid\}", "00000000-0000-0000-0000-00000000abcd", path)
            url = re.sub(r"\{[a-z_]+:int\}", "1", url)
            if (method, path) == ("POST", "/api/documents"):
                r = await anon.post(url, files={"files": ("x.txt", b"x")})
            else:
                r = await anon.request(method, url, json={} if method in ("POST", "PUT", "PATCH") else None)
            assert r.status_code == 401, (method, path, r.status_code, r.text)
            assert r.json()["code"] == "unauthorized"


async def test_user_b_gets_404_for_every_object_of_user_a(server: Any, settings: Settings, fake_ollama: Any) -> None:
    a = await setup_admin(server.url, "alice")
    b_id = await add_user(a, "bob")
    b = await signed_in(server.url, "bob")
    doc = await upload(a, "secret.txt", A_SECRET)
    fake_ollama.enqueue(Reply.text("Hello Alice."))
    started = next(d for e, d in await events_of(a, {"message": "hi"}) if e == "thread")
    thread, answer = started["thread_id"], started["message_id"]
    collection = (await a.post("/api/collections", json={"name": "alice only"})).json()["id"]
    token = (await a.post("/api/auth/tokens", json={"name": "alice's"})).json()
    a_id = (await a.get("/api/auth/session")).json()["user"]["id"]
    ids = {
        "document_id": doc,
        "thread_id": thread,
        "collection_id": collection,
        "token_id": token["id"],
        "user_id": a_id,
        "message_id": answer,
    }

    checked = 0
    for method, path in api_routes(settings):
        params = re.findall(r"\{([a-z_]+):uuid\}", path)
        if not params:
            continue
        assert set(params) <= set(ids), f"{path}: a new kind of id; add it to this test"
        url = path
        for name in params:
            url = url.replace(f"{{{name}:uuid}}", ids[name])
        r = await b.request(method, url, json=BODIES.get((method, path)))
        expected = 403 if path.startswith("/api/admin/") else 404
        assert r.status_code == expected, (method, path, r.status_code, r.text)
        checked += 1
    assert checked >= 15

    # ids inside bodies and queries: the same answer
    fake_ollama.enqueue(Reply.text("nothing"))
    assert (await b.post("/api/chat", json={"message": "x", "thread_id": thread})).status_code == 404
    mine = (await b.post("/api/collections", json={"name": "bob's"})).json()["id"]
    assert (await b.put(f"/api/collections/{mine}/documents/{doc}")).status_code == 404
    assert (await b.get("/api/documents", params={"collection_id": collection})).json()["documents"] == []
    into = await b.post("/api/documents", files={"files": ("x.txt", b"x")}, data={"collection_id": collection})
    assert into.status_code == 404
    found = await b.get("/api/search", params={"q": "zanzibar falafel", "document_ids": doc})
    assert found.status_code == 404 and found.json()["detail"] == f"document {doc} not found"

    # and nothing of A's changed
    assert (await a.get(f"/api/documents/{doc}")).status_code == 200
    assert (await a.get(f"/api/threads/{thread}")).json()["title"] != "hijacked"
    assert (await a.get(f"/api/collections/{collection}")).json()["name"] == "alice only"
    members = (await a.get(f"/api/collections/{collection}")).json()["members"]
    assert [m["user"]["id"] for m in members] == [a_id] and b_id not in str(members)
    async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {token['token']}"}) as t:
        assert (await t.get("/api/documents")).status_code == 200


def _rerank_or_chat(body: dict[str, Any]) -> Reply:
    if body.get("format") or body.get("response_format"):
        return Reply.json({"score": 0.5})
    if body["messages"][-1]["role"] == "tool":
        return Reply.text("Here is what I found [1].")
    return Reply.tool_call("search_documents", {"query": "quarterly ledger audits"})


async def test_retrieval_never_crosses_users_until_a_collection_shares(server: Any, fake_ollama: Any) -> None:
    a = await setup_admin(server.url, "alice")
    await add_user(a, "bob")
    b = await signed_in(server.url, "bob")
    a_docs = [await upload(a, f"a{i}.txt", f"{A_SECRET} Ledger entry {i} about quarterly audits.") for i in range(12)]
    b_docs = [await upload(b, f"b{i}.txt", f"{B_NOTE} Note {i}.") for i in range(3)]
    await wait_ready(a, a_docs)
    await wait_ready(b, b_docs)
    b_set = set(b_docs)

    before = {}
    fake_ollama.responder = _rerank_or_chat
    for mode in ("vector", "keyword", "hybrid"):
        r = (await b.get("/api/search", params={"q": "quarterly ledger audits", "mode": mode, "limit": 3})).json()
        got = {c["document_id"] for c in r["chunks"]}
        assert got <= b_set and len(r["chunks"]) == 3, (mode, r["chunks"])  # `limit` still comes back
        before[mode] = [(c["id"], c["trace"]["keyword_score"]) for c in r["chunks"]]
        reranked = (await b.get("/api/search", params={"q": "falafel ledger", "mode": mode, "rerank": "true"})).json()
        assert {c["document_id"] for c in reranked["chunks"]} <= b_set
    prompts = " ".join(str(r.body) for r in fake_ollama.chat_requests)
    assert "zanzibar" not in prompts.lower() and fake_ollama.chat_requests  # rerank prompts saw only B's text

    events = await events_of(b, {"message": "What about the quarterly ledger audits?"})
    result = next(d for e, d in events if e == "tool_result")
    assert result["chunks"] and {c["document_id"] for c in result["chunks"]} <= b_set
    assert "zanzibar" not in " ".join(str(r.body) for r in fake_ollama.chat_requests).lower()

    # A's corpus grows: B's BM25 statistics, and so B's keyword scores, do not move
    more = [await upload(a, f"more{i}.txt", f"Quarterly ledger quarterly ledger {i}.") for i in range(5)]
    await wait_ready(a, more)
    for mode in ("keyword", "hybrid"):
        r = (await b.get("/api/search", params={"q": "quarterly ledger audits", "mode": mode, "limit": 3})).json()
        assert [(c["id"], c["trace"]["keyword_score"]) for c in r["chunks"]] == before[mode]

    # shared read-only through a collection: exactly those documents appear, in every arm
    shared = (await a.post("/api/collections", json={"name": "audits"})).json()["id"]
    for d in a_docs[:2]:
        assert (await a.put(f"/api/collections/{shared}/documents/{d}")).status_code == 204
    bob = next(u for u in (await a.get("/api/users")).json()["users"] if u["username"] == "bob")
    assert (await a.put(f"/api/collections/{shared}/members/{bob['id']}", json={"role": "read"})).status_code == 204
    listed = {d["id"]: d for d in (await b.get("/api/documents")).json()["documents"]}
    assert set(listed) == b_set | set(a_docs[:2])
    assert listed[a_docs[0]]["access"] == "read" and listed[a_docs[0]]["owner"]["username"] == "alice"
    for mode in ("vector", "keyword", "hybrid"):
        r = (await b.get("/api/search", params={"q": "zanzibar falafel quantum", "mode": mode, "limit": 10})).json()
        got = {c["document_id"] for c in r["chunks"]}
        assert got & set(a_docs[:2]), mode
        assert got <= b_set | set(a_docs[:2]), mode
        narrowed = await b.get("/api/search", params={"q": "ledger", "mode": mode, "collection_ids": shared})
        assert {c["document_id"] for c in narrowed.json()["chunks"]} <= set(a_docs[:2])
    # a reader cannot delete or re-share; leaving the collection closes it again
    assert (await b.delete(f"/api/documents/{a_docs[0]}")).status_code == 403
    assert (await b.delete(f"/api/collections/{shared}/documents/{a_docs[0]}")).status_code == 403
    assert (await b.delete(f"/api/collections/{shared}/members/{bob['id']}")).status_code == 204
    r = (await b.get("/api/search", params={"q": "zanzibar falafel quantum", "limit": 10})).json()
    assert {c["document_id"] for c in r["chunks"]} <= b_set


async def test_writers_add_their_own_documents_to_a_shared_collection(server: Any) -> None:
    a = await setup_admin(server.url, "alice")
    bob_id = await add_user(a, "bob")
    await add_user(a, "carol")
    b = await signed_in(server.url, "bob")
    c = await signed_in(server.url, "carol")
    team = (await a.post("/api/collections", json={"name": "team"})).json()["id"]
    await a.put(f"/api/collections/{team}/members/{bob_id}", json={"role": "write"})
    carol_id = next(u["id"] for u in (await a.get("/api/users")).json()["users"] if u["username"] == "carol")
    await a.put(f"/api/collections/{team}/members/{carol_id}", json={"role": "read"})

    doc = await upload(b, "plan.txt", "The launch plan moves to March.", collection_id=team)
    await wait_ready(b, [doc])
    assert doc in {d["id"] for d in (await c.get("/api/documents")).json()["documents"]}
    readonly = await c.post("/api/documents", files={"files": ("c.txt", b"carol")}, data={"collection_id": team})
    assert readonly.status_code == 403 and readonly.json()["code"] == "forbidden"  # a reader sees it, cannot add
    assert "c.txt" not in {d["filename"] for d in (await c.get("/api/documents")).json()["documents"]}
    stranger = await a.post("/api/collections", json={"name": "alice only"})
    hidden = await c.post(
        "/api/documents", files={"files": ("c.txt", b"carol")}, data={"collection_id": stranger.json()["id"]}
    )
    assert hidden.status_code == 404  # not a member: the collection is not there for carol
    assert (await c.put(f"/api/collections/{team}/members/{carol_id}", json={"role": "write"})).status_code == 403
    hits = (await c.get("/api/search", params={"q": "launch plan March"})).json()["chunks"]
    assert hits and hits[0]["document_id"] == doc

    # names come from the accounts domain (core/ownership.py): the owner first, then by name
    detail = (await c.get(f"/api/collections/{team}")).json()
    listed = (await c.get("/api/documents", params={"collection_id": team})).json()["documents"]
    assert detail["owner"]["username"] == "alice" and [d["owner"]["username"] for d in listed] == ["bob"]
    assert detail["document_count"] == 1 and "documents" not in detail  # the list pages them (issue 46)
    assert [(m["user"]["username"], m["role"]) for m in detail["members"]] == [
        ("alice", "owner"), ("bob", "write"), ("carol", "read"),
    ]  # fmt: skip
    assert [x["owner"]["username"] for x in (await c.get("/api/collections")).json()["collections"]] == ["alice"]
    nobody = await a.put(f"/api/collections/{team}/members/{uuid.uuid4()}", json={"role": "read"})
    assert nobody.status_code == 404 and "user" in nobody.json()["detail"]
    dave_id = await add_user(a, "dave")
    assert (await a.patch(f"/api/admin/users/{dave_id}", json={"disabled": True})).status_code == 200
    disabled = await a.put(f"/api/collections/{team}/members/{dave_id}", json={"role": "read"})
    assert disabled.status_code == 404  # a disabled user is given nothing
    assert (await a.delete(f"/api/collections/{team}")).status_code == 204  # the collection goes, the document stays
    assert (await b.get(f"/api/documents/{doc}")).status_code == 200
    assert (await c.get(f"/api/documents/{doc}")).status_code == 404
