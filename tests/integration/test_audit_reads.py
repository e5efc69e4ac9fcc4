"""Issue 43, item 10: reads of shared documents are audited (AUDIT_READS), over real HTTP with two users and a
shared collection: the document, its file, its chunks, both searches and MCP's read/search/find tools each
write one `document.read` row naming the other user's documents only; own reads write none (unless `all`)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from ragchat.audit.repository import AuditFilter
from ragchat.audit.service import READ_IDS_MAX, AuditLog
from ragchat.core.principal import Principal
from tests.integration.test_audit import audit_rows
from tests.integration.test_mcp import http_session
from tests.support.accounts import add_user, setup_admin, signed_in, upload, wait_ready
from tests.support.audit import count

TIDES = "Ocean tides are caused mainly by the gravity of the moon, and partly by the sun."
NOTES = "Carol's own notes on tides: spring tides follow the full moon."


async def reads(admin: httpx.AsyncClient) -> list[dict[str, Any]]:
    return await audit_rows(admin, action="document.read")


@pytest.fixture
async def shared(live_app: Callable[..., Any], fake_ollama: Any) -> AsyncIterator[dict[str, Any]]:
    """Admin owns tides.txt in the collection Team, which carol reads; carol owns notes.txt."""
    server = live_app(auth="on", ingest_workers=1, ollama_host=fake_ollama.url)
    admin = await setup_admin(server.url)
    carol_id = await add_user(admin, "carol", is_admin=False)
    carol = await signed_in(server.url, "carol")
    team = (await admin.post("/api/collections", json={"name": "Team"})).json()["id"]
    assert (await admin.put(f"/api/collections/{team}/members/{carol_id}", json={"role": "read"})).status_code == 204
    tides = await upload(admin, "tides.txt", TIDES, collection_id=team)
    notes = await upload(carol, "notes.txt", NOTES)
    await wait_ready(admin, [tides])
    await wait_ready(carol, [notes])
    yield {"server": server, "admin": admin, "carol": carol, "carol_id": carol_id, "tides": tides, "notes": notes}
    await admin.aclose()
    await carol.aclose()


async def test_a_members_reads_of_a_shared_document_are_audited(shared: dict[str, Any]) -> None:
    admin, carol, tides, notes = shared["admin"], shared["carol"], shared["tides"], shared["notes"]
    # the owner's and carol's reads of their own documents: not recorded under AUDIT_READS=shared
    assert (await admin.get(f"/api/documents/{tides}")).status_code == 200
    assert (await admin.get(f"/api/documents/{tides}/file")).status_code == 200
    assert (await carol.get(f"/api/documents/{notes}")).status_code == 200
    assert (await carol.get(f"/api/documents/{notes}/chunks")).status_code == 200
    own = await carol.get("/api/search", params={"q": "notes", "document_ids": notes})
    assert own.status_code == 200 and own.json()["chunks"]
    assert await reads(admin) == []

    # carol reads admin's document every way there is
    for path in (f"/api/documents/{tides}", f"/api/documents/{tides}/file", f"/api/documents/{tides}/chunks"):
        r = await carol.get(path, headers={"X-Request-ID": f"read-{path.rsplit('/', 1)[-1]}"})
        assert r.status_code == 200, (path, r.text)
    found = await carol.get("/api/search", params={"q": "what causes ocean tides", "mode": "vector"})
    assert {c["document_id"] for c in found.json()["chunks"]} == {tides, notes}  # her own hit is not listed below
    posted = await carol.post("/api/search", json={"query": "gravity of the moon", "top_k": 5})
    assert posted.status_code == 200 and posted.json()["chunks"]
    listed = await carol.get("/api/search/documents", params={"q": "tides"})
    assert {d["document_id"] for d in listed.json()["documents"]} == {tides, notes}
    token = (await carol.post("/api/auth/tokens", json={"name": "mcp"})).json()["token"]
    async with http_session(shared["server"].url, token) as session:
        for tool, args in (
            ("read_document", {"document_id": tides}),
            ("search_documents", {"query": "ocean tides", "limit": 5}),
            ("find_documents", {"query": "tides"}),
        ):
            result = await session.call_tool(tool, args)
            assert not result.is_error, (tool, result)

    rows = await reads(admin)
    by_via = {r["details"]["via"]: r for r in rows}
    vias = ["document", "file", "chunks", "search", "search_documents"]
    vias += ["mcp.read_document", "mcp.search_documents", "mcp.find_documents"]
    assert sorted(by_via) == sorted(vias) and len(rows) == len(vias) + 1  # two searches (GET and POST)
    for row in rows:
        assert row["actor_id"] == shared["carol_id"] and row["actor_name"] == "carol"
        assert row["details"]["document_ids"] == [tides] and row["details"]["document_count"] == 1
        assert row["details"]["truncated"] is False
    assert by_via["document"]["target_type"] == "document" and by_via["document"]["target_id"] == tides
    assert by_via["file"]["request_id"] == "read-file" and by_via["chunks"]["request_id"] == "read-chunks"
    assert by_via["search"]["target_id"] is None  # a search read more than one document
    # a read that is refused (not carol's to read) records nothing
    stranger = await upload(admin, "private.txt", "Admin's private draft.")
    assert (await carol.get(f"/api/documents/{stranger}")).status_code == 404
    assert len(await reads(admin)) == len(rows)


async def test_audit_reads_off_and_all(shared: dict[str, Any], live_app: Callable[..., Any]) -> None:
    tides, notes = shared["tides"], shared["notes"]
    quiet = live_app(auth="on", audit_reads="off")
    everything = live_app(auth="on", audit_reads="all")
    for server in (quiet, everything):
        carol = await signed_in(server.url, "carol")
        assert (await carol.get(f"/api/documents/{tides}")).status_code == 200
        assert (await carol.get(f"/api/documents/{notes}/chunks")).status_code == 200
        await carol.aclose()
    rows = await reads(shared["admin"])
    # `off` wrote nothing; `all` wrote carol's read of her own document too
    assert [(r["details"]["via"], r["target_id"]) for r in rows] == [("document", tides), ("chunks", notes)]


async def test_a_read_row_lists_at_most_a_hundred_ids(db: str, settings: Any, pool: Any) -> None:
    audit = AuditLog(pool, settings.model_copy(update={"audit_reads": "all"}).audit)
    many = [uuid.uuid4() for _ in range(READ_IDS_MAX + 50)]
    await audit.record_read(Principal(uuid.uuid4(), "reader"), "search", many + many)
    rows = await audit.page(AuditFilter(actions=("document.read",)), before=None, limit=10)
    assert len(rows) == 1 and count(db) == 1
    details = rows[0]["details"]
    assert details["document_ids"] == [str(i) for i in many[:READ_IDS_MAX]]
    assert details["document_count"] == READ_IDS_MAX + 50 and details["truncated"] is True
