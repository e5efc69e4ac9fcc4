"""The Documents page's filters (issue 35 item 6): GET /api/documents by owner (mine / shared with me) and by a
metadata value (`meta=subject=History`, a string or one of a list's strings); hostile filters are a 400."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.accounts import add_user, setup_admin, signed_in, wait_ready


async def _put(client: httpx.AsyncClient, name: str, text: str, metadata: dict[str, Any]) -> str:
    r = await client.post(
        "/api/documents", files={"files": (name, text.encode())}, data={"metadata": json.dumps(metadata)}
    )
    assert r.status_code == 201, r.text
    return str(r.json()["results"][0]["document"]["id"])


def _names(r: httpx.Response) -> set[str]:
    assert r.status_code == 200, r.text
    return {d["filename"] for d in r.json()["documents"]}


async def test_owner_and_metadata_filters(live_app: Any) -> None:
    server = live_app(auth="on", ingest_workers=1)
    alice = await setup_admin(server.url, "alice")
    await add_user(alice, "bob")
    bob = await signed_in(server.url, "bob")
    a1 = await _put(alice, "a1.txt", "Alice on parliament.", {"subject": ["Polity", "History"]})
    a2 = await _put(alice, "a2.txt", "Alice on rivers.", {"subject": "Geography"})
    b1 = await _put(bob, "b1.txt", "Bob on empires.", {"subject": "History"})
    await wait_ready(alice, [a1, a2])
    await wait_ready(bob, [b1])
    team = (await bob.post("/api/collections", json={"name": "team"})).json()["id"]
    await bob.put(f"/api/collections/{team}/documents/{b1}")
    alice_id = next(u["id"] for u in (await alice.get("/api/users")).json()["users"] if u["username"] == "alice")
    await bob.put(f"/api/collections/{team}/members/{alice_id}", json={"role": "read"})

    assert _names(await alice.get("/api/documents")) == {"a1.txt", "a2.txt", "b1.txt"}
    assert _names(await alice.get("/api/documents", params={"owner": "me"})) == {"a1.txt", "a2.txt"}
    assert _names(await alice.get("/api/documents", params={"owner": "others"})) == {"b1.txt"}
    assert _names(await alice.get("/api/documents", params={"meta": "subject=History"})) == {"a1.txt", "b1.txt"}
    assert _names(await alice.get("/api/documents", params={"meta": "subject = Geography"})) == {"a2.txt"}
    both = {"meta": "subject=History", "owner": "others", "collection_id": team}
    assert _names(await alice.get("/api/documents", params=both)) == {"b1.txt"}
    assert _names(await alice.get("/api/documents", params={"meta": "subject=%' OR 1=1 --"})) == set()
    # Bob's own list is not widened by a filter naming Alice's metadata.
    assert _names(await bob.get("/api/documents", params={"meta": "subject=Polity"})) == set()

    for bad in (
        {"owner": "everyone"},
        {"meta": "subject"},
        {"meta": "=History"},
        {"meta": "subject="},
        {"meta": "k" * 65 + "=v"},
        {"meta": "k=" + "v" * 501},
        {"meta": "k=" + "v" * 700},
    ):
        r = await alice.get("/api/documents", params=bad)
        assert r.status_code == 400, (bad, r.text)
    for client in (alice, bob):
        await client.aclose()
