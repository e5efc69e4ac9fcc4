"""Web pages by URL over the real server: POST /api/documents/url → fetched (SSRF guard, limits) → queued →
ingested → searchable, with `source_url` in the document's metadata; `ragchat ingest URL`, local and remote."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from ragchat.documents.fetch.fetcher import WebFetcher
from tests.integration.test_http_api import wait_ready
from tests.support.accounts import add_user, setup_admin, signed_in
from tests.support.web_site import ARTICLE_FACT, BOILERPLATE, PDF_TEXT, Site, gzip_bomb

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    yield s
    s.close()


def allow_site(server: Any, site: Site) -> None:
    """The running app's fetcher, with ALLOW_PRIVATE_URLS off, allowing exactly the test site's 127.0.0.1:port."""
    runtime = server.server.config.app.dependencies["runtime"].dependency()
    runtime.documents.ingestion.web = WebFetcher(runtime.settings.ingestion, allow={("127.0.0.1", site.port)})


def chunks_of(db: str, document_id: str) -> list[str]:
    with psycopg.connect(db) as conn:
        rows = conn.execute(
            "SELECT content FROM document_chunks WHERE document_id = %s ORDER BY chunk_index", (document_id,)
        ).fetchall()
    return [r[0] for r in rows]


async def test_a_page_by_url_is_ingested_and_found_with_its_source_url(
    live_app: Callable[..., Any], site: Site, db: str
) -> None:
    server = live_app(ingest_workers=1)
    allow_site(server, site)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        collection = (await client.post("/api/collections", json={"name": "glaciology"})).json()["id"]
        r = await client.post("/api/documents/url", json={"url": f"{site.url}/redirect/2", "collection_id": collection})
        assert r.status_code == 201, r.text
        result = r.json()["results"][0]
        assert result["status"] == "queued" and result["filename"] == "Retreat-of-the-Vatnajokull-glaciers.md"
        doc = result["document"]
        assert doc["title"] == "Retreat of the Vatnajokull glaciers" and doc["content_type"] == "text/markdown"
        assert doc["metadata"]["source_url"] == f"{site.url}/article"  # after the redirects
        assert doc["collection_ids"] == [collection]
        ready = await wait_ready(client, doc["id"])
        assert ready["status"] == "ready", ready["error"]
        assert ready["title"] == "Retreat of the Vatnajokull glaciers"
        assert ready["metadata"]["source_url"] == f"{site.url}/article" and ready["metadata"]["fetched_at"]
        assert ready["metadata"]["published"] == "2021-04-12"

        stored = chunks_of(db, doc["id"])
        assert any(ARTICLE_FACT in c for c in stored) and not any(BOILERPLATE in c for c in stored)

        search = (await client.get("/api/search", params={"q": "how far did the glacier retreat", "limit": 3})).json()
        hit = search["chunks"][0]
        assert hit["document_id"] == doc["id"] and "412 metres" in hit["content"]
        found = (await client.get(f"/api/documents/{hit['document_id']}")).json()
        assert found["metadata"]["source_url"] == f"{site.url}/article"
        nav = (await client.get("/api/search", params={"q": "marmalade zebra newsletter", "mode": "keyword"})).json()
        assert nav["chunks"] == []  # the boilerplate was not ingested

        again = await client.post("/api/documents/url", json={"url": f"{site.url}/article"})
        assert again.status_code == 201 and again.json()["results"][0]["status"] == "duplicate"

        pdf = (await client.post("/api/documents/url", json={"url": f"{site.url}/papers/ablation.pdf"})).json()
        pdf_doc = pdf["results"][0]["document"]
        assert pdf["results"][0]["filename"] == "ablation.pdf" and pdf_doc["content_type"] == "application/pdf"
        assert (await wait_ready(client, pdf_doc["id"]))["status"] == "ready"
        hits = (await client.get("/api/search", params={"q": "ablation zones lose ice", "limit": 3})).json()["chunks"]
        assert hits[0]["document_id"] == pdf_doc["id"] and PDF_TEXT in hits[0]["content"]


async def test_private_addresses_are_refused_over_http_before_any_connection(
    live_app: Callable[..., Any], site: Site
) -> None:
    server = live_app()  # ALLOW_PRIVATE_URLS off, no allowlist
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        for url in (
            f"{site.url}/article",
            f"http://localhost:{site.port}/article",
            f"http://[::1]:{site.port}/article",
            f"http://[::ffff:127.0.0.1]:{site.port}/article",
            f"http://2130706433:{site.port}/article",
            f"http://0x7f.1:{site.port}/article",
            f"http://0.0.0.0:{site.port}/article",
            "http://10.0.0.5/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data/",
        ):
            r = await client.post("/api/documents/url", json={"url": url})
            body = r.json()
            assert r.status_code == 400 and body["code"] == "url_refused", (url, body)
            assert body["detail"].startswith("refusing to fetch") and "ALLOW_PRIVATE_URLS=true" in body["detail"]
        assert site.hits == []
        assert (await client.get("/api/documents")).json()["documents"] == []

        for bad, says in (
            ({"url": "ftp://example.com/a.pdf"}, "only http:// and https://"),
            ({"url": "http://user:pw@example.com/"}, "credentials"),
            ({"url": ""}, "url"),
            ({"url": "https://example.com/" + "a" * 3000}, "url"),
            ({"url": "https://example.com/", "extra": 1}, "extra"),
            ({}, "url"),
        ):
            r = await client.post("/api/documents/url", json=bad)
            assert r.status_code == 400 and says in r.json()["detail"], (bad, r.text)
        json_type = {"Content-Type": "application/json"}
        body = b'{"url": "' + b"a" * 100_000 + b'"}'
        huge = await client.post("/api/documents/url", content=body, headers=json_type)
        assert huge.status_code == 413


async def test_a_redirect_from_an_allowed_site_to_a_private_address_is_refused(
    live_app: Callable[..., Any], site: Site
) -> None:
    server = live_app()
    allow_site(server, site)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        for target in ("http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:1/", "http://10.0.0.1/"):
            r = await client.post("/api/documents/url", json={"url": f"{site.url}/go?to={target}"})
            assert r.status_code == 400 and r.json()["detail"].startswith(f"refusing to fetch {target}"), r.text
        assert site.hits == [
            "/go?to=http://169.254.169.254/latest/meta-data/",
            "/go?to=http://127.0.0.1:1/",
            "/go?to=http://10.0.0.1/",
        ]


async def test_fetch_failures_are_clear_errors(live_app: Callable[..., Any], site: Site) -> None:
    gzip_bomb()  # built before the clock of its fetch starts
    # the timeout case on a server of its own with a short URL_FETCH_TIMEOUT_S: on a busy machine the others (a
    # 2 MB body, a gzip bomb) can take longer than 1.5 s, and must fail for their own reason
    server = live_app(max_upload_mb=2)
    hurried = live_app(max_upload_mb=2, url_fetch_timeout_s=1.5)
    allow_site(server, site)
    allow_site(hurried, site)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        for base, path, status, code, says in (
            (server, "/missing", 502, "fetch_failed", "answered HTTP 404 Not Found"),
            (server, "/loop", 502, "fetch_failed", "too many redirects"),
            (server, "/blob", 415, "unsupported_media_type", "application/octet-stream"),
            (server, "/photo", 415, "unsupported_media_type", "image/png"),
            (server, "/nav-only", 400, "bad_request", "no main content found"),
            (server, "/huge", 413, "payload_too_large", "over the 2 MB limit (MAX_UPLOAD_MB)"),
            (server, "/gzip-bomb", 413, "payload_too_large", "MAX_UPLOAD_MB"),
            (hurried, "/slow", 504, "fetch_timeout", "took longer than 1.5 s (URL_FETCH_TIMEOUT_S)"),
        ):
            r = await client.post(f"{base.url}/api/documents/url", json={"url": site.url + path})
            body = r.json()
            assert (r.status_code, body["code"]) == (status, code) and says in body["detail"], (path, body)
        assert (await client.get("/api/documents")).json()["documents"] == []
        for url in ("http://no-such-host.invalid/", "https://no-such-host.invalid:8443/x"):
            r = await client.post("/api/documents/url", json={"url": url})
            assert r.status_code == 400 and "could not resolve the host" in r.json()["detail"]


async def test_fetching_needs_a_user_and_write_access_to_the_collection(
    live_app: Callable[..., Any], site: Site
) -> None:
    server = live_app(auth="on")
    allow_site(server, site)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as anonymous:
        r = await anonymous.post("/api/documents/url", json={"url": f"{site.url}/article"})
        assert r.status_code == 401
    admin = await setup_admin(server.url)
    collection = (await admin.post("/api/collections", json={"name": "private"})).json()["id"]
    await add_user(admin, "bea")
    bea = await signed_in(server.url, "bea")
    r = await bea.post("/api/documents/url", json={"url": f"{site.url}/article", "collection_id": collection})
    assert r.status_code == 404  # not hers to write into: refused before fetching
    assert site.hits == []
    mine = await bea.post("/api/documents/url", json={"url": f"{site.url}/article"})
    assert mine.status_code == 201 and mine.json()["results"][0]["document"]["owner"]["username"] == "bea"
    assert (await admin.get("/api/documents")).json()["documents"] == []  # bea's, not the admin's
    await admin.aclose()
    await bea.aclose()


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragchat.cli", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


async def test_ragchat_ingest_fetches_urls_locally_and_through_a_server(
    live_app: Callable[..., Any], site: Site, db: str, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("Seracs are blocks of ice formed where crevasses intersect.")
    env = {"DATABASE_URL": db, "RAGCHAT_DATA_DIR": str(tmp_path / "data"), "ALLOW_PRIVATE_URLS": "true"}
    local = _cli(["ingest", "--local", "--quiet", str(notes), f"{site.url}/article", f"{site.url}/missing"], env)
    assert local.returncode == 1, local.stderr  # one URL failed
    assert "ingested 2 documents" in local.stdout, local.stdout + local.stderr
    assert f"failed: {site.url}/missing: {site.url}/missing answered HTTP 404 Not Found" in local.stderr
    with psycopg.connect(db) as conn:
        rows = conn.execute("SELECT filename, metadata->>'source_url' FROM documents ORDER BY filename").fetchall()
    assert rows == [("Retreat-of-the-Vatnajokull-glaciers.md", f"{site.url}/article"), ("notes.txt", None)]

    server = live_app()
    allow_site(server, site)
    env = {"RAGCHAT_DATA_DIR": str(tmp_path / "data2"), "ALLOW_PRIVATE_URLS": "false"}
    remote = _cli(["ingest", "--server", server.url, f"{site.url}/notes.md", "http://169.254.169.254/"], env)
    assert remote.returncode == 1, remote.stderr
    assert "queued     notes.md" in remote.stdout
    assert "rejected   http://169.254.169.254/  (400: refusing to fetch" in remote.stdout, remote.stdout
    assert "sent 2 URLs to" in remote.stderr
