"""Issue 46 item 4: "select all N matching" sends the list's filter, not the ids, and the server applies the
action to what the filter matches inside the caller's read scope (never another user's documents); a collection's
documents searched, sorted and paged on the server. A few hundred documents registered without ingesting them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import httpx
import pytest

from tests.support.accounts import add_user, setup_admin, signed_in
from tests.support.services import register_many


@pytest.fixture
def server(live_app: Callable[..., Any]) -> Any:
    return live_app(auth="on", ingest_workers=0)


async def bulk(client: httpx.AsyncClient, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    r = await client.post("/api/documents/bulk", json=body)
    assert r.status_code == status, r.text
    return r.json()


async def listing(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    r = await client.get("/api/documents", params=params)
    assert r.status_code == 200, r.text
    return r.json()


async def test_select_all_matching_acts_on_the_filter_inside_the_read_scope(server: Any, pool: Any) -> None:
    admin = await setup_admin(server.url)
    bob_id = await add_user(admin, "bob")
    bob = await signed_in(server.url, "bob")
    me = UUID((await admin.get("/api/auth/session")).json()["user"]["id"])
    await register_many(pool, {f"memo {i:03d}.txt": f"memo {i}".encode() for i in range(240)}, owner=me, status="ready")
    await register_many(pool, {f"invoice {i:03d}.txt": f"inv {i}".encode() for i in range(60)}, owner=me)
    await register_many(pool, {f"memo bob {i}.txt": f"bob {i}".encode() for i in range(7)}, owner=UUID(bob_id))
    team = (await admin.post("/api/collections", json={"name": "team"})).json()["id"]

    # All 240 matching memos into the collection: one request with the filter (more than a page, more than the
    # 500-id limit would ever need).
    out = await bulk(admin, {"action": "add_to_collection", "collection_id": team, "filter": {"q": "memo"}})
    assert (out["matched"], out["done"], out["results"]) == (240, 240, [])

    # The collection's documents: searched, sorted and paged on the server.
    page = await listing(admin, collection_id=team, sort="title", order="asc", limit=50, offset=50)
    assert page["total"] == 240 and len(page["documents"]) == 50
    assert [d["title"] for d in page["documents"][:2]] == ["memo 050", "memo 051"]
    assert (await listing(admin, collection_id=team, q="memo 23"))["total"] == 10
    assert (await listing(admin, collection_id=team, q="invoice"))["total"] == 0
    big = await listing(admin, collection_id=team, sort="byte_size", order="desc", limit=1)
    assert big["documents"][0]["byte_size"] == len(b"memo 100")  # "memo 100" … "memo 239": the largest

    # Bob's "select all matching memo" reaches only his own seven, never the admin's 240.
    out = await bulk(bob, {"action": "delete", "filter": {"q": "memo"}})
    assert (out["matched"], out["done"]) == (7, 7)
    assert (await listing(admin, q="memo"))["total"] == 240
    # ...and he cannot add to a collection he is not in (it does not exist for him), by filter or by id.
    await bulk(bob, {"action": "add_to_collection", "collection_id": team, "filter": {"q": "memo"}}, 404)

    # A reader of the collection: its documents match his filter, but he may only read them.
    assert (await admin.put(f"/api/collections/{team}/members/{bob_id}", json={"role": "read"})).status_code == 204
    out = await bulk(
        bob, {"action": "remove_from_collection", "collection_id": team, "filter": {"collection_id": team}}
    )
    assert (out["matched"], out["done"]) == (240, 0)
    assert {r["error"] for r in out["results"]} == {"forbidden: you may only read this collection"}
    assert len(out["results"]) == 240
    out = await bulk(bob, {"action": "delete", "filter": {"collection_id": team}})
    assert (out["matched"], out["done"]) == (240, 0)
    assert (await listing(admin, collection_id=team))["total"] == 240

    # The owner: the memos 2xx out of the collection; retry every failed one (none); delete the rest of it.
    out = await bulk(
        admin,
        {"action": "remove_from_collection", "collection_id": team, "filter": {"q": "memo 2", "collection_id": team}},
    )
    assert (out["matched"], out["done"]) == (40, 40)
    assert (await listing(admin, collection_id=team))["total"] == 200
    out = await bulk(admin, {"action": "retry", "filter": {"status": "failed"}})
    assert (out["matched"], out["done"]) == (0, 0)
    out = await bulk(admin, {"action": "delete", "filter": {"collection_id": team}})
    assert (out["matched"], out["done"]) == (200, 200)
    assert (await listing(admin))["total"] == 100  # 40 memos outside the collection and the 60 invoices

    # By id still works, with one result per id, and another user's id is "not found".
    invoices = [d["id"] for d in (await listing(admin, q="invoice", limit=3))["documents"]]
    bobs = await register_many(pool, {"bob private.txt": b"secret"}, owner=UUID(bob_id))
    out = await bulk(admin, {"action": "add_to_collection", "collection_id": team, "ids": [*invoices, str(bobs[0])]})
    assert [r["ok"] for r in out["results"]] == [True, True, True, False]
    assert out["results"][-1]["error"] == "not found" and out["done"] == 3

    # Either ids or a filter; a collection action names its collection.
    await bulk(admin, {"action": "delete", "ids": invoices, "filter": {"q": "x"}}, 400)
    await bulk(admin, {"action": "delete"}, 400)
    await bulk(admin, {"action": "add_to_collection", "filter": {"q": "x"}}, 400)
    await bulk(admin, {"action": "delete", "filter": {"meta": "no equals sign"}}, 400)
