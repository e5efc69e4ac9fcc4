"""The audit log over real HTTP and real Postgres: every recorded action, an answer's sources, the admin API's
filters, paging and export, hostile queries, concurrent writes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any
from uuid import UUID

import httpx
import pytest

from tests.fakes.ollama_server import Reply
from tests.fakes.plugin import LLMFake
from tests.support.accounts import PASSWORD, add_user, setup_admin, signed_in, upload
from tests.support.chat import all_of, chat, first

NEW_PASSWORD = "another horse battery"


@pytest.fixture
def server(live_app: Callable[..., Any]) -> Any:
    return live_app(auth="on", rate_login_per_min=0)


async def audit_rows(client: httpx.AsyncClient, **params: Any) -> list[dict[str, Any]]:
    """Every row matching `params`, oldest first, read page by page through the cursor."""
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {**params, "limit": params.get("limit", 100), **({"cursor": cursor} if cursor else {})}
        r = await client.get("/api/admin/audit", params=query)
        assert r.status_code == 200, r.text
        page = r.json()
        rows += page["entries"]
        cursor = page["next_cursor"]
        if cursor is None:
            return rows[::-1]


def one(rows: list[dict[str, Any]], action: str, **match: Any) -> dict[str, Any]:
    found = [r for r in rows if r["action"] == action and all(r.get(k) == v for k, v in match.items())]
    assert len(found) == 1, (action, match, [(r["action"], r["target_id"]) for r in rows])
    return found[0]


async def test_every_action_is_recorded_with_actor_client_target_and_request(server: Any) -> None:
    admin = await setup_admin(server.url)
    me = (await admin.get("/api/auth/session")).json()["user"]
    admin_id = me["id"]
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as anon:
        wrong = await anon.post("/api/auth/login", json={"username": "admin", "password": "not the password"})
        unknown = await anon.post("/api/auth/login", json={"username": "nobody", "password": "not the password"})
        nul = await anon.post(
            "/api/auth/login",
            content='{"username": "ev\\u0000il\\ud969", "password": "x"}',
            headers={"Content-Type": "application/json"},
        )
    assert wrong.status_code == unknown.status_code == 401 and nul.status_code in (400, 401)

    # the second admin session does the work; the first signs out at the end
    work = await signed_in(server.url, "admin")
    bob = await add_user(work, "bob")
    carol = await add_user(work, "carol", is_admin=False)
    token = (await work.post("/api/auth/tokens", json={"name": "ci script"})).json()
    assert (await work.delete(f"/api/auth/tokens/{token['id']}")).status_code == 204
    assert (await work.patch(f"/api/admin/users/{bob}", json={"disabled": True})).status_code == 200
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as anon:
        refused = await anon.post("/api/auth/login", json={"username": "bob", "password": PASSWORD})
    assert refused.status_code == 401
    assert (await work.patch(f"/api/admin/users/{bob}", json={"disabled": False})).status_code == 200
    assert (await work.patch(f"/api/admin/users/{bob}", json={"is_admin": True})).status_code == 200
    assert (await work.post(f"/api/admin/users/{bob}/password", json={"password": NEW_PASSWORD})).status_code == 204

    collection = (await work.post("/api/collections", json={"name": "Team"})).json()["id"]
    share = await work.put(f"/api/collections/{collection}/members/{carol}", json={"role": "read"})
    assert share.status_code == 204
    assert (await work.delete(f"/api/collections/{collection}/members/{carol}")).status_code == 204
    doc = await upload(work, "notes.txt", "Quarterly numbers.")
    kept = await upload(work, "kept.txt", "Filed into a collection at upload.", collection_id=collection)
    assert (await work.put(f"/api/collections/{collection}/documents/{doc}")).status_code == 204
    assert (await work.delete(f"/api/collections/{collection}/documents/{doc}")).status_code == 204
    deleted = await work.delete(f"/api/documents/{doc}", headers={"X-Request-ID": "audit-test-delete-1"})
    assert deleted.status_code == 204
    assert (await work.put("/api/preferences", json={"theme": "dark", "rerank": None})).status_code == 200
    assert (await work.delete(f"/api/collections/{collection}")).status_code == 204
    assert (await work.delete(f"/api/admin/users/{carol}")).status_code == 204
    assert (await admin.post("/api/auth/logout")).status_code == 204
    await admin.aclose()
    change = {"current_password": PASSWORD, "new_password": NEW_PASSWORD}
    assert (await work.post("/api/auth/password", json=change)).status_code == 204
    assert (await work.post("/api/auth/logout-all")).status_code == 204
    await work.aclose()

    reader = await signed_in(server.url, "admin", NEW_PASSWORD)
    rows = await audit_rows(reader)
    user = {"target_type": "user"}
    setup = one(rows, "auth.setup", actor_id=admin_id, target_id=admin_id)
    assert setup["client"] == "127.0.0.1" and setup["request_id"]
    failed = [r for r in rows if r["action"] == "auth.sign_in_failed"]
    assert [(r["actor_name"], r["actor_id"], r["details"]["reason"]) for r in failed] == [
        ("admin", None, "wrong_password"),
        ("nobody", None, "unknown_user"),
        *([("evil\ufffd", None, "unknown_user")] if nul.status_code == 401 else []),
        ("bob", None, "disabled"),
    ]
    assert failed[-1]["target_id"] == bob and failed[-1]["client"] == "127.0.0.1"
    sign_ins = [r for r in rows if r["action"] == "auth.sign_in"]
    assert [(r["actor_name"], r["details"]["method"]) for r in sign_ins] == [("admin", "password")] * 2
    one(rows, "user.create", actor_id=admin_id, target_id=bob, **user)
    assert one(rows, "user.create", target_id=carol)["details"] == {"username": "carol", "is_admin": False}
    created = one(rows, "token.create", actor_id=admin_id, target_type="token", target_id=token["id"])
    assert created["details"] == {"name": "ci script", "prefix": token["prefix"], "expires_at": token.get("expires_at")}
    one(rows, "token.revoke", actor_id=admin_id, target_id=token["id"])
    one(rows, "user.disable", actor_id=admin_id, target_id=bob, **user)
    one(rows, "user.enable", actor_id=admin_id, target_id=bob)
    assert one(rows, "user.role_change", target_id=bob)["details"] == {"username": "bob", "is_admin": True}
    one(rows, "user.password_reset", actor_id=admin_id, target_id=bob)
    assert one(rows, "collection.create", target_id=collection)["details"] == {"name": "Team"}
    assert one(rows, "collection.share", target_id=collection)["details"] == {"user_id": carol, "role": "read"}
    assert one(rows, "collection.unshare", target_id=collection)["details"] == {"user_id": carol}
    added = [r for r in rows if r["action"] == "collection.document_add"]
    assert [r["details"] for r in added] == [{"document_id": kept, "upload": True}, {"document_id": doc}]
    one(rows, "collection.document_remove", target_id=collection)
    gone = one(rows, "document.delete", actor_id=admin_id, target_type="document", target_id=doc)
    assert gone["details"] == {"filename": "notes.txt"} and gone["request_id"] == "audit-test-delete-1"
    prefs = one(rows, "preferences.update", actor_id=admin_id, target_id=admin_id)
    assert prefs["details"] == {"changed": {"theme": "dark"}, "reset": ["rerank"]}
    one(rows, "collection.delete", target_id=collection)
    assert one(rows, "user.delete", target_id=carol)["details"] == {"username": "carol"}
    one(rows, "auth.password_change", actor_id=admin_id)
    one(rows, "auth.sign_out", actor_id=admin_id)
    assert one(rows, "auth.sign_out_everywhere", actor_id=admin_id)["details"] == {"sessions": 1, "tokens_revoked": 0}
    for row in rows:
        assert row["actor_name"] and row["at"] and row["client"] == "127.0.0.1", row

    # the filters: by actor name or id, action(s), target, time
    by_name = await audit_rows(reader, actor="ADMIN")
    by_id = await audit_rows(reader, actor=admin_id)
    assert [r["id"] for r in by_id] == [r["id"] for r in rows if r["actor_id"] == admin_id]
    assert {r["id"] for r in by_name} >= {r["id"] for r in by_id} and all(r["actor_name"] == "admin" for r in by_name)
    pair = await audit_rows(reader, action=["user.disable", "user.enable"])
    assert [r["action"] for r in pair] == ["user.disable", "user.enable"]
    about_bob = await audit_rows(reader, target_type="user", target_id=bob)
    assert {r["action"] for r in about_bob} >= {"user.create", "user.disable", "user.password_reset"}
    middle = rows[len(rows) // 2]["at"]
    later = await audit_rows(reader, since=middle)
    earlier = await audit_rows(reader, until=middle)
    assert len(later) + len(earlier) == len(rows) and later[0]["at"] >= middle > earlier[-1]["at"]

    # the export: the same rows as JSON lines, newest first
    export = await reader.get("/api/admin/audit/export", params={"action": "document.delete"})
    assert export.status_code == 200 and export.headers["content-type"].startswith("application/x-ndjson")
    assert "attachment" in export.headers["content-disposition"]
    lines = [json.loads(line) for line in export.text.splitlines()]
    assert [line["target_id"] for line in lines] == [doc]
    everything = [json.loads(line) for line in (await reader.get("/api/admin/audit/export")).text.splitlines()]
    assert [r["id"] for r in everything] == [r["id"] for r in rows[::-1]]  # reading writes nothing
    await reader.aclose()


async def test_only_admins_read_the_log_and_nobody_changes_it(server: Any) -> None:
    admin = await setup_admin(server.url)
    await add_user(admin, "dave")
    dave = await signed_in(server.url, "dave")
    for path in ("/api/admin/audit", "/api/admin/audit/export"):
        denied = await dave.get(path)
        assert denied.status_code == 403 and denied.json()["code"] == "forbidden"
        async with httpx.AsyncClient(base_url=server.url) as anon:
            assert (await anon.get(path)).status_code == 401
    rows = (await admin.get("/api/admin/audit")).json()["entries"]
    row_id = rows[0]["id"]
    for method in ("PUT", "PATCH", "DELETE", "POST"):  # there is no route that writes the log
        for path in ("/api/admin/audit", f"/api/admin/audit/{row_id}"):
            r = await admin.request(method, path, json={})
            assert r.status_code in (404, 405), (method, path, r.status_code)
    assert len((await admin.get("/api/admin/audit")).json()["entries"]) == len(rows)
    await dave.aclose()
    await admin.aclose()


async def test_hostile_queries_are_a_clear_400(server: Any) -> None:
    admin = await setup_admin(server.url)
    for i in range(7):
        await admin.post("/api/auth/tokens", json={"name": f"t{i}"})
    bad: list[dict[str, Any]] = [
        {"since": "yesterday"},
        {"until": "2026-13-45"},
        {"since": "0001-01-01"},
        {"since": "2026-02-01", "until": "2026-01-01"},
        {"limit": 10**12},
        {"limit": 0},
        {"limit": -5},
        {"limit": "many"},
        {"actor": "ad\x00min"},
        {"target_id": "x\x00"},
        {"target_type": "t" * 5000},
        {"action": "auth.explode"},
        {"action": "auth.sign_in\x00"},
        {"cursor": "not a cursor"},
        {"cursor": "A" * 5000},
        {"cursor": "\x00"},
        {"cursor": "MS4w"},  # "1.0": the shape is wrong
    ]
    for params in bad:
        r = await admin.get("/api/admin/audit", params=params, timeout=5)
        assert r.status_code == 400, (params, r.status_code, r.text)
        assert r.json()["code"] in ("bad_request", "validation_error") and r.json()["detail"], r.text
    for params in bad[:4] + bad[8:13]:
        r = await admin.get("/api/admin/audit/export", params=params, timeout=5)
        assert r.status_code == 400, (params, r.status_code)

    # a cursor altered by one character, or reused with other filters, is refused; the real one pages on
    first_page = (await admin.get("/api/admin/audit", params={"limit": 3})).json()
    cursor = first_page["next_cursor"]
    assert cursor and len(first_page["entries"]) == 3
    following = await admin.get("/api/admin/audit", params={"limit": 3, "cursor": cursor})
    assert following.status_code == 200
    seen = [(e["at"], e["id"]) for e in first_page["entries"] + following.json()["entries"]]
    assert seen == sorted(seen, reverse=True) and len(set(seen)) == 6
    for altered in {cursor[:-1] + ("A" if cursor[-1] != "A" else "B"), "M" + cursor[1:], cursor + "AA"}:
        if altered == cursor:
            continue
        r = await admin.get("/api/admin/audit", params={"limit": 3, "cursor": altered})
        assert r.status_code == 400, altered
    other = await admin.get("/api/admin/audit", params={"limit": 3, "cursor": cursor, "action": "token.create"})
    assert other.status_code == 400 and "cursor" in other.json()["detail"]
    await admin.aclose()


async def test_fifty_concurrent_actions_are_all_logged(server: Any) -> None:
    admin = await setup_admin(server.url)
    async with httpx.AsyncClient(base_url=server.url, cookies=admin.cookies, timeout=60) as client:

        async def act(i: int) -> int:
            if i % 2:
                r = await client.post("/api/auth/tokens", json={"name": f"parallel {i}"})
            else:
                r = await client.put("/api/preferences", json={"theme": "dark" if i % 4 else "light"})
            return r.status_code

        codes = await asyncio.gather(*(act(i) for i in range(50)))
    assert sorted(codes) == [200] * 25 + [201] * 25
    tokens = await audit_rows(admin, action="token.create")
    prefs = await audit_rows(admin, action="preferences.update")
    assert len(tokens) == 25 and len(prefs) == 25
    assert sorted(r["details"]["name"] for r in tokens) == sorted(f"parallel {i}" for i in range(1, 50, 2))
    assert len({r["request_id"] for r in tokens + prefs}) == 50
    await admin.aclose()


async def test_an_answer_lists_exactly_the_chunks_its_tool_results_carried(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    llm.fake.enqueue(
        Reply.tool_call("search_documents", {"query": "paid holiday days per year"}),
        Reply.tool_call("search_documents", {"query": "volcano eruption"}),
        Reply.text("Employees get 25 days of paid holiday per year [1]."),
    )
    events = await chat(server.url, {"message": "How many holiday days do I get?"})
    results = all_of(events, "tool_result")
    assert len(results) == 2
    shown = [(c["id"], c["document_id"]) for result in results for c in result["chunks"]]
    assert shown and len({d for _, d in shown}) >= 2
    message_id = first(events, "thread")["message_id"]

    async with httpx.AsyncClient(base_url=server.url, timeout=30) as local:  # AUTH=off: the local admin
        rows = await audit_rows(local, action="chat.answer", target_id=message_id)
    [row] = rows
    assert row["target_type"] == "message" and row["details"]["status"] == "complete"
    assert row["details"]["thread_id"] == first(events, "thread")["thread_id"]
    assert [(c["chunk_id"], c["document_id"]) for c in row["details"]["chunks"]] == shown
    assert row["details"]["document_ids"] == list(dict.fromkeys(d for _, d in shown))
    assert row["actor_name"] == "local" and row["client"] == "127.0.0.1"


async def test_an_answer_without_a_thread_is_recorded_too(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    """POST /api/rag (retrieve-then-answer): nothing else is saved, the audit row has the passages it returned."""
    server = start()
    llm.fake.enqueue(Reply.text("Employees get 25 days of paid holiday per year [1]."))
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as local:
        r = await local.post("/api/rag", json={"query": "How many holiday days do I get?", "top_k": 3})
        assert r.status_code == 200, r.text
        passages = [(c["id"], c["document_id"]) for c in r.json()["chunks"]]
        assert passages
        [row] = await audit_rows(local, action="chat.answer")
    assert row["target_id"] is None and row["details"]["route"] == "/api/rag"
    assert row["details"]["status"] == "complete"
    assert [(c["chunk_id"], c["document_id"]) for c in row["details"]["chunks"]] == passages
