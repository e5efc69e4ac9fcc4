"""Upgrading from the previous release (issue 31): its database, populated by its own code
(`tests/fixtures/build_previous_release.py` from the tag `v0.4.0`: two users, documents, a shared collection, an
API token, a chat thread, vectors in two embedding spaces), restored and migrated by this tree, then used through
the HTTP API: everyone sees what the old release showed them, can sign in with the same password and token, and
can search, with both arms and the shared collection's BM25 statistics backfilled."""

from __future__ import annotations

import gzip
import json
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ragchat.db.backup import pg_tool
from ragchat.db.migrate import migrate
from tests.fixtures.build_previous_release import PASSWORD, seen_by

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RELEASE = "0.4.0"
pytestmark = pytest.mark.slow  # a minute: `make test-slow` (CI runs it)


@pytest.fixture
def release_db(pg_uri: str) -> Iterator[str]:
    """A new database holding the previous release's dump, as its code left it."""
    name = f"release_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    uri = make_conninfo(**{**conninfo_to_dict(pg_uri), "dbname": name})
    dump = gzip.decompress((FIXTURES / f"release-{RELEASE}.sql.gz").read_bytes())
    done = subprocess.run(
        [pg_tool("psql"), "--quiet", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "--dbname", uri],
        input=dump,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    try:
        yield uri
    finally:
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def counts(uri: str) -> dict[str, int]:
    with psycopg.connect(uri) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}  # type: ignore[index]


def signed_in(url: str, username: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=60)
    r = client.post("/api/auth/login", json={"username": username, "password": PASSWORD})
    assert r.status_code == 200, r.text
    return client


def test_the_previous_release_database_migrates_and_keeps_everything(
    release_db: str, live_app: Callable[..., Any], fake_ollama: Any
) -> None:
    expected = json.loads((FIXTURES / f"release-{RELEASE}.json").read_text())
    before = counts(release_db)
    assert before == expected["counts"]  # the dump is what the builder counted
    assert before["embedding_spaces"] == 2 and before["chunk_embeddings"] == 2 * before["document_chunks"]

    migrate(release_db)
    after = counts(release_db)
    for table in ("users", "documents", "document_chunks", "document_blobs", "collections", "collection_members",
                  "document_collections", "threads", "messages", "api_tokens"):  # fmt: skip
        assert after[table] == before[table], table
    with psycopg.connect(release_db) as conn:
        groups = conn.execute("SELECT count(*) FROM bm25_group_stats").fetchone()  # 0017's backfill
        assert groups and groups[0] > 0

    server = live_app(
        database_url=release_db,
        auth="on",
        ollama_host=fake_ollama.url,
        embed_provider="ollama",
        embed_model=expected["embed_model"],
        ingest_workers=1,
    )
    for user in ("alice", "bob"):
        client = signed_in(server.url, user)
        try:
            assert seen_by(client) == expected[user], user
        finally:
            client.close()

    # the API token made by the old release still works; search answers with both arms
    with httpx.Client(base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {expected['token']}"}) as api:
        me = api.get("/api/auth/session").json()
        assert me["user"]["username"] == "alice"
        for mode in ("vector", "hybrid"):
            r = api.get("/api/search", params={"q": "sourdough yeast", "mode": mode, "limit": 3})
            assert r.status_code == 200, r.text
            assert r.json()["documents"], mode
        # and the upgraded database takes new work: an upload is ingested and found
        r = api.post("/api/documents", files={"files": ("new.txt", b"Basalt columns form as thick lava cools slowly.")})
        assert r.status_code == 201, r.text
        doc = r.json()["results"][0]["document"]["id"]
        for _ in range(600):
            if api.get(f"/api/documents/{doc}").json()["status"] == "ready":
                break
            time.sleep(0.1)
        hits = api.get("/api/search", params={"q": "basalt columns", "mode": "keyword"}).json()["documents"]
        assert hits and hits[0]["document_id"] == doc
