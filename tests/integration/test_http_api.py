"""The real HTTP server (uvicorn on 127.0.0.1): health, document upload and listing, search."""

from __future__ import annotations

import asyncio
import io
import os
import uuid
from typing import Any

import httpx

from ragchat.db.capabilities import modern_pgvector

UPLOAD_TEXT = "Glaciers carve U-shaped valleys as they slowly flow downhill under their own weight."


async def wait_ready(client: httpx.AsyncClient, doc_id: str, within_s: float = 60) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + within_s
    while True:
        doc = (await client.get(f"/api/documents/{doc_id}")).json()
        if doc["status"] in ("ready", "failed"):
            return doc
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"document stuck in {doc['status']}")
        await asyncio.sleep(0.1)


async def probed_health(client: httpx.AsyncClient, within_s: float = 60.0) -> dict[str, Any]:
    """`/api/health` once the LLM status probe reached the (fake) server: on a busy machine the probe's 3 s can
    run out, and the status is probed again in the background every 15 s (providers/llm/status_cache.py)."""
    deadline = asyncio.get_running_loop().time() + within_s
    while True:
        body = (await client.get("/api/health")).json()
        if body["llm"]["reachable"] or asyncio.get_running_loop().time() > deadline:
            return body
        await asyncio.sleep(0.5)


async def test_health_reports_database_embedder_and_ollama(
    live_app: Any, fake_ollama: Any, closed_ollama_url: str
) -> None:
    up = live_app(ollama_host=fake_ollama.url)
    async with httpx.AsyncClient(base_url=up.url) as client:
        body = await probed_health(client)
    assert body["status"] == "ok" and body["database"] == "ok"
    assert body["embedder"].startswith("all-MiniLM-L6-v2")
    llm = body["llm"]
    assert llm["provider"] == "ollama" and llm["reachable"] and llm["model_available"] and llm["message"] is None
    assert llm["model"] == "llama3.2"
    assert body["embeddings"]["status"] == "ok" and body["embeddings"]["stored"] is None
    assert body["chat_max_message_chars"] == 8000  # the page's character counter reads it
    db = body["db"]  # the versions read at start, and what they allow
    assert db["postgres"] and db["pgvector"]
    assert db["halfvec_index"] == db["iterative_scan"] == modern_pgvector(db["pgvector"])
    if not os.environ.get("TEST_DATABASE_URL"):  # the embedded engine
        assert db["postgres"].startswith("18.") and db["halfvec_index"]

    missing = live_app(ollama_host=fake_ollama.url, chat_model="qwen3:8b", chat_max_message_chars=500)
    async with httpx.AsyncClient(base_url=missing.url) as client:
        body = await probed_health(client)
    assert body["llm"]["reachable"] and not body["llm"]["model_available"]
    assert "ollama pull qwen3:8b" in body["llm"]["message"]
    assert body["chat_max_message_chars"] == 500

    down = live_app(ollama_host=closed_ollama_url)
    async with httpx.AsyncClient(base_url=down.url) as client:
        body = (await client.get("/api/health")).json()
    assert body["status"] == "ok" and not body["llm"]["reachable"]
    assert "ollama serve" in body["llm"]["message"]


async def test_upload_is_ingested_in_the_background_and_searchable(live_app: Any) -> None:
    server = live_app(ingest_workers=1)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        files = [
            ("files", ("glaciers.txt", io.BytesIO(UPLOAD_TEXT.encode()), "text/plain")),
            ("files", ("notes.md", io.BytesIO(b"# Notes\n\nBuy milk and eggs."), "text/markdown")),
        ]
        response = await client.post("/api/documents", files=files)
        assert response.status_code == 201
        results = response.json()["results"]
        assert [r["status"] for r in results] == ["queued", "queued"]
        doc = await wait_ready(client, results[0]["document"]["id"])
        assert doc["status"] == "ready" and doc["chunks_total"] == doc["chunks_done"] == 1

        again = await client.post("/api/documents", files=[("files", ("copy.txt", UPLOAD_TEXT.encode(), "text/plain"))])
        assert again.json()["results"][0]["status"] == "duplicate"

        listing = (await client.get("/api/documents")).json()["documents"]
        assert {d["filename"] for d in listing} == {"glaciers.txt", "notes.md"}

        search = await client.get("/api/search", params={"q": "how do glaciers shape valleys", "limit": 5})
        assert search.status_code == 200
        assert search.headers["cache-control"] == "private, no-store"
        body = search.json()
        assert body["mode"] == "hybrid" and body["reranked"] is False and body["has_embeddings"] is True
        assert body["chunks"][0]["filename"] == "glaciers.txt"
        assert body["documents"][0]["matched_chunks"] >= 1 and body["documents"][0]["best_chunk"]["id"]
        assert set(body["timing_ms"]) >= {"embed_ms", "vector_ms", "keyword_ms", "fuse_ms", "total_ms"}
        assert body["confidence"]["label"] in ("high", "moderate", "low")

        keyword = (await client.get("/api/search", params={"q": "glaciers", "mode": "keyword"})).json()
        assert keyword["mode"] == "keyword" and keyword["chunks"][0]["trace"]["keyword_rank"] == 1

        deleted = await client.delete(f"/api/documents/{doc['id']}")
        assert deleted.status_code == 204
        assert (await client.get(f"/api/documents/{doc['id']}")).status_code == 404
        after = (await client.get("/api/search", params={"q": "glaciers valleys"})).json()
        assert all(c["filename"] != "glaciers.txt" for c in after["chunks"])


async def test_bad_uploads_and_bad_search_parameters(live_app: Any) -> None:
    server = live_app(max_upload_mb=0.01)
    async with httpx.AsyncClient(base_url=server.url) as client:
        response = await client.post(
            "/api/documents",
            files=[
                ("files", ("empty.txt", b"", "text/plain")),
                ("files", ("big.txt", b"x" * 20_000, "text/plain")),
                ("files", ("photo.gif", b"GIF89a....", "image/gif")),
            ],
        )
        # all rejected: not a 201, but the first rejection's status with every file's result in `extra`
        assert response.status_code == 400 and response.json()["code"] == "bad_request"
        results = response.json()["extra"]["results"]
        assert [r["status"] for r in results] == ["rejected"] * 3
        assert "empty" in results[0]["error"] and "MAX_UPLOAD_MB" in results[1]["error"]
        assert "unsupported" in results[2]["error"]
        assert (await client.get("/api/documents")).json()["documents"] == []
        big = await client.post("/api/documents", files=[("files", ("big.txt", b"x" * 20_000, "text/plain"))])
        assert big.status_code == 413 and big.json()["code"] == "payload_too_large"
        png = await client.post("/api/documents", files=[("files", ("photo.gif", b"GIF89a....", "image/gif"))])
        assert png.status_code == 415 and png.json()["code"] == "unsupported_media_type"
        mixed = await client.post(
            "/api/documents",
            files=[("files", ("ok.txt", b"fine text", "text/plain")), ("files", ("photo.gif", b"x", "image/gif"))],
        )
        assert mixed.status_code == 201
        assert [r["status"] for r in mixed.json()["results"]] == ["queued", "rejected"]

        form = await client.post("/api/documents", data={"other": "x"})
        assert form.status_code == 415 and form.json()["code"] == "unsupported_media_type"
        nothing = await client.post("/api/documents", files={"other": ("x.txt", b"x")})
        assert nothing.status_code == 400 and "files" in nothing.json()["detail"]

        bad_mode = await client.get("/api/search", params={"q": "x", "mode": "semantic"})
        assert bad_mode.status_code == 400 and "vector, keyword or hybrid" in bad_mode.json()["detail"]
        too_many = await client.get("/api/search", params={"q": "x", "limit": 1000})
        assert too_many.status_code == 400
        for q in ("x" * 2000, "a & !b | (c:*) <-> 'd'"):  # the longest query allowed, tsquery operators
            for mode in ("vector", "keyword", "hybrid"):
                r = await client.get("/api/search", params={"q": q, "mode": mode})
                assert r.status_code == 200, (q[:20], mode, r.text)
        long = await client.get("/api/search", params={"q": "x" * 10_000})
        assert long.status_code == 400 and "at most 2000" in long.json()["detail"]
        nul = await client.get("/api/search", params={"q": "abc\x00def"})
        assert nul.status_code == 400 and "NUL" in nul.json()["detail"]
        empty = await client.get("/api/search", params={"q": ""})
        assert empty.status_code == 200
        assert empty.json()["chunks"] == [] and empty.json()["has_embeddings"] is False
        assert (await client.get("/api/documents/00000000-0000-0000-0000-00000000beef")).status_code == 404


async def test_pathological_bodies_and_paths_are_4xx(live_app: Any) -> None:
    server = live_app()
    deep = "[" * 1000 + "]" * 1000
    json_type = {"Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=server.url) as client:
        for method, path, body in [
            ("POST", "/api/chat", '{"message": ' + deep + "}"),
            ("PATCH", f"/api/threads/{uuid.uuid4()}", '{"title": ' + deep + "}"),
            ("POST", "/api/chat", '{"message": "x", "x": ' + '{"a":' * 5000 + "1" + "}" * 5001),
        ]:
            r = await client.request(method, path, content=body, headers=json_type)
            assert r.status_code == 400 and r.json()["code"] == "bad_request", (path, r.status_code)
        for url in ("/abc%00def", "/api/documents?collection_id=%00", "/api/search?q=a%00"):
            r = await client.get(url)
            assert r.status_code == 400 and r.json()["code"] == "bad_request", url
