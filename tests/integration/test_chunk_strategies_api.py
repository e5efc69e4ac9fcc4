"""Chunking strategies over the real HTTP API: chosen at upload, shown on the document, changed by re-chunk
(the stored chunks change and search still finds them); re-chunk's access rules, bad input and 409."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.support.accounts import add_user, setup_admin, signed_in, upload
from tests.unit.test_chunk_strategies import RECEIPT, contract_markdown


async def wait_done(client: httpx.AsyncClient, doc_id: str, within_s: float = 120) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + within_s
    while True:
        doc = (await client.get(f"/api/documents/{doc_id}")).json()
        if doc["status"] in ("ready", "failed"):
            return doc
        assert asyncio.get_running_loop().time() < deadline, f"document stuck in {doc['status']}"
        await asyncio.sleep(0.1)


async def chunks_of(client: httpx.AsyncClient, doc_id: str) -> list[str]:
    r = await client.get("/api/search", params={"q": "Harbour Robotics Supplier Goods", "mode": "keyword", "limit": 50})
    assert r.status_code == 200
    return [c["content"] for c in r.json()["chunks"] if c["document_id"] == doc_id]


async def test_upload_with_a_strategy_then_rechunk(live_app: Any) -> None:
    server = live_app(ingest_workers=1)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        files = [("files", ("contract.md", contract_markdown(), "text/markdown"))]
        r = await client.post("/api/documents", files=files, data={"chunk_strategy": "line", "chunk_tokens": "32"})
        assert r.status_code == 201, r.text
        doc_id = r.json()["results"][0]["document"]["id"]
        doc = await wait_done(client, doc_id)
        assert doc["status"] == "ready"
        assert doc["chunking"] == {
            "requested": "line",
            "strategy": "line",
            "tokens": 32,
            "overlap": 0,
            "reason": "requested",
        }
        line_total = doc["chunks_total"]

        r = await client.post(f"/api/documents/{doc_id}/rechunk", json={"strategy": "sentence", "chunk_tokens": 200})
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "queued" and r.json()["chunking"]["requested"] == "sentence"
        again = await client.post(f"/api/documents/{doc_id}/rechunk", json={"strategy": "line"})
        assert again.status_code in (200, 409)  # 409 while it is queued or processing
        if again.status_code == 409:
            assert "re-chunk it once it is done" in again.json()["detail"]
        doc = await wait_done(client, doc_id)
        if again.status_code == 200:  # it was already done: the line request won; ask for sentence once more
            r = await client.post(
                f"/api/documents/{doc_id}/rechunk", json={"strategy": "sentence", "chunk_tokens": 200}
            )
            assert r.status_code == 200
            doc = await wait_done(client, doc_id)
        assert doc["status"] == "ready" and doc["chunking"]["strategy"] == "sentence"
        assert doc["chunking"]["tokens"] == 200 and doc["chunking"]["overlap"] == 40
        assert doc["chunks_total"] < line_total  # fewer, bigger chunks
        found = await chunks_of(client, doc_id)
        assert found and any(len(c) > 300 for c in found)

        semantic = await client.post(f"/api/documents/{doc_id}/rechunk", json={"strategy": "semantic"})
        assert semantic.status_code == 200
        doc = await wait_done(client, doc_id)
        assert doc["chunking"]["strategy"] == "semantic" and doc["chunking"]["tokens"] == 200
        hybrid = await client.get("/api/search", params={"q": "when must the customer pay an invoice"})
        assert hybrid.json()["chunks"][0]["document_id"] == doc_id
        assert "thirty days" in hybrid.json()["chunks"][0]["content"]

        # auto (the default) routes a receipt to line and says why
        receipt = await client.post("/api/documents", files=[("files", ("shop.txt", RECEIPT.encode(), "text/plain"))])
        receipt_doc = await wait_done(client, receipt.json()["results"][0]["document"]["id"])
        assert receipt_doc["chunking"]["requested"] == "auto" and receipt_doc["chunking"]["strategy"] == "line"
        assert receipt_doc["chunking"]["reason"].startswith("receipt-like")

        for bad in ({"strategy": "words"}, {"strategy": "line", "chunk_tokens": 5000}, {"strategy": "line", "x": 1}):
            assert (await client.post(f"/api/documents/{doc_id}/rechunk", json=bad)).status_code == 400
        bad_upload = await client.post("/api/documents", files=files, data={"chunk_strategy": "words"})
        assert bad_upload.status_code == 400
        missing = await client.post("/api/documents/00000000-0000-0000-0000-000000000000/rechunk", json=bad)
        assert missing.status_code in (400, 404)
        missing = await client.post(
            "/api/documents/00000000-0000-0000-0000-000000000000/rechunk", json={"strategy": "line"}
        )
        assert missing.status_code == 404


async def test_rechunk_is_for_the_owner_and_writers_only(live_app: Any) -> None:
    server = live_app(auth="on", ingest_workers=1)
    admin = await setup_admin(server.url)
    bob_id, carol_id = await add_user(admin, "bob"), await add_user(admin, "carol")
    bob, carol = await signed_in(server.url, "bob"), await signed_in(server.url, "carol")
    try:
        doc_id = await upload(admin, "terms.md", contract_markdown().decode())
        await wait_done(admin, doc_id)
        body = {"strategy": "line"}
        assert (await bob.post(f"/api/documents/{doc_id}/rechunk", json=body)).status_code == 404  # not shared
        collection = (await admin.post("/api/collections", json={"name": "Legal"})).json()["id"]
        assert (await admin.put(f"/api/collections/{collection}/documents/{doc_id}")).status_code == 204
        for user, role in ((bob_id, "read"), (carol_id, "write")):
            r = await admin.put(f"/api/collections/{collection}/members/{user}", json={"role": role})
            assert r.status_code == 204, r.text
        assert (await bob.post(f"/api/documents/{doc_id}/rechunk", json=body)).status_code == 403
        r = await carol.post(f"/api/documents/{doc_id}/rechunk", json=body)
        assert r.status_code == 200, r.text
        doc = await wait_done(admin, doc_id)
        assert doc["chunking"]["strategy"] == "line"
    finally:
        for client in (admin, bob, carol):
            await client.aclose()
