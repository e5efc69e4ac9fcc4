"""Renaming a document (issue 35 item 6): PATCH /api/documents/{id} {"title"} sets the title people see in the
list and citations while the file name stays; chunking the file again keeps it; hostile titles are a 400."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.accounts import wait_ready

TEXT = "The lighthouse keeper logs every passing ship in a leather-bound ledger."


@pytest.fixture
async def http(live_app: Any) -> Any:
    server = live_app(ingest_workers=1)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        r = await client.post("/api/documents", files={"files": ("scan-0042.txt", TEXT.encode())})
        assert r.status_code == 201, r.text
        doc_id = str(r.json()["results"][0]["document"]["id"])
        await wait_ready(client, [doc_id])
        client.doc_id = doc_id  # type: ignore[attr-defined]
        yield client


async def test_rename_keeps_the_file_name_and_survives_rechunking(http: httpx.AsyncClient) -> None:
    doc_id = http.doc_id  # type: ignore[attr-defined]
    r = await http.patch(f"/api/documents/{doc_id}", json={"title": "  Lighthouse   ledger  "})
    assert r.status_code == 200, r.text
    assert r.json()["title"] == "Lighthouse ledger" and r.json()["filename"] == "scan-0042.txt"
    listed = (await http.get("/api/documents", params={"q": "Lighthouse"})).json()["documents"]
    assert [d["title"] for d in listed] == ["Lighthouse ledger"]

    owner = (await http.get(f"/api/documents/{doc_id}")).json()["owner"]
    assert owner["username"] and r.json()["owner"] == owner  # named by the accounts domain (core/ownership.py)
    r = await http.post(f"/api/documents/{doc_id}/rechunk", json={"strategy": "sentence"})
    assert r.status_code in (200, 202), r.text
    assert r.json()["owner"] == owner
    await wait_ready(http, [doc_id])
    assert (await http.get(f"/api/documents/{doc_id}")).json()["title"] == "Lighthouse ledger"

    # The `title` metadata key is the same title.
    r = await http.patch(f"/api/documents/{doc_id}", json={"metadata": {"title": "Ship log"}})
    assert r.status_code == 200 and r.json()["title"] == "Ship log", r.text


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"title": ""},
        {"title": "   "},
        {"title": "x" * 501},
        {"title": "two\nlines\u0000"},
        {"title": "bidi \u202e trick"},
        {"title": 42},
        {"title": ["a"]},
        {"title": "ok", "filename": "evil.exe"},
    ],
)
async def test_hostile_titles_are_refused(http: httpx.AsyncClient, body: dict[str, Any]) -> None:
    doc_id = http.doc_id  # type: ignore[attr-defined]
    r = await http.patch(f"/api/documents/{doc_id}", json=body)
    assert r.status_code == 400, r.text
    assert (await http.get(f"/api/documents/{doc_id}")).json()["title"] == TEXT  # a text file's first line
