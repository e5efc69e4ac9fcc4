"""Metadata people set and filter on (issue 18 item 3), over HTTP on the real app: set at upload and by PATCH,
multi-value filters (OR within a key, AND across keys) in GET and POST /api/search, facet counts, other users'
documents invisible, and the LLM extraction against the fake Ollama (valid, garbage, timeout, filter by topic)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.ollama_server import FakeOllama, Reply
from tests.integration.test_sync_cli import cli_env, ragchat
from tests.support.accounts import add_user, setup_admin, signed_in, wait_ready
from tests.support.chat import chat

DOCS = {
    "constitution.txt": ("The constitution sets out the powers of parliament and the courts.", ["Polity"], "2024"),
    "empires.txt": ("The Mughal empire ruled much of the subcontinent for two centuries.", ["History"], "2023"),
    "both.txt": (
        "Parliament grew out of the history of royal councils and their charters.",
        ["Polity", "History"],
        "2024",
    ),
    "rivers.txt": ("The Ganges and the Brahmaputra form the largest delta in the world.", ["Geography"], "2024"),
}


async def _put(client: httpx.AsyncClient, name: str, text: str, metadata: dict[str, Any]) -> str:
    r = await client.post(
        "/api/documents", files={"files": (name, text.encode())}, data={"metadata": json.dumps(metadata)}
    )
    assert r.status_code == 201, r.text
    return str(r.json()["results"][0]["document"]["id"])


@pytest.fixture
async def http(live_app: Any) -> Any:
    server = live_app(ingest_workers=1)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        ids = {}
        for name, (text, subjects, year) in DOCS.items():
            ids[name] = await _put(client, name, text, {"subject": subjects, "year": year})
        await wait_ready(client, list(ids.values()))
        client.ids = ids  # type: ignore[attr-defined]
        yield client


def _names(body: dict[str, Any]) -> set[str]:
    return {c["filename"] for c in body["chunks"]}


def _facet(body: dict[str, Any], key: str) -> dict[str, int]:
    return {f["value"]: f["count"] for f in body["facets"].get(key, [])}


async def test_set_at_upload_and_edited(http: httpx.AsyncClient) -> None:
    ids = http.ids  # type: ignore[attr-defined]
    doc = (await http.get(f"/api/documents/{ids['both.txt']}")).json()
    assert doc["metadata"]["subject"] == ["Polity", "History"] and doc["metadata"]["year"] == "2024"
    assert doc["metadata_status"] is None  # METADATA_EXTRACTION is off

    r = await http.patch(f"/api/documents/{ids['rivers.txt']}", json={"metadata": {"subject": "Polity", "year": None}})
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["subject"] == "Polity" and "year" not in r.json()["metadata"]
    for bad, needle in (
        ({"metadata": {"source_path": "/etc/passwd"}}, "reserved"),
        ({"metadata": {"k": ["v"] * 21}}, "20 values"),
        ({"metadata": {"k": "x" * 501}}, "500"),
        ({"metadata": {f"k{i}": "v" for i in range(51)}}, "metadata"),
        ({"metadata": {"a=b": "v"}}, "'='"),
        ({"metadata": {"k": 3}}, "metadata"),
    ):
        r = await http.patch(f"/api/documents/{ids['rivers.txt']}", json=bad)
        assert r.status_code == 400 and needle in r.text, (bad, r.text)
    assert (await http.patch(f"/api/documents/{uuid.uuid4()}", json={"metadata": {"k": "v"}})).status_code == 404

    # what a parser finds (an HTML page's author) never overwrites what the person set at upload
    page = b'<html><head><meta name="author" content="Parser"></head><body><p>Bylines and authors.</p></body></html>'
    r = await http.post(
        "/api/documents", files={"files": ("page.html", page)}, data={"metadata": '{"author": "Person"}'}
    )
    page_id = r.json()["results"][0]["document"]["id"]
    await wait_ready(http, [page_id])
    assert (await http.get(f"/api/documents/{page_id}")).json()["metadata"]["author"] == "Person"

    for field, needle in (("{not json", "not JSON"), ('{"source_url": "x"}', "reserved"), ("[1]", "object")):
        r = await http.post("/api/documents", files={"files": ("x.txt", b"some text")}, data={"metadata": field})
        assert r.status_code == 400 and needle in r.text, r.text


async def test_multi_value_filters_and_facets(http: httpx.AsyncClient) -> None:
    q = "parliament history rivers empire"
    either = await http.get(
        "/api/search", params=[("q", q), ("filter", "subject=Polity"), ("filter", "subject=History")]
    )
    assert either.status_code == 200, either.text
    assert _names(either.json()) == {"constitution.txt", "empires.txt", "both.txt"}  # OR within a key
    both = await http.get(
        "/api/search",
        params=[("q", q), ("filter", "subject=Polity"), ("filter", "subject=History"), ("filter", "year=2024")],
    )
    assert _names(both.json()) == {"constitution.txt", "both.txt"}  # AND across keys
    posted = await http.post(
        "/api/search", json={"query": q, "filters": {"metadata": {"subject": ["Polity", "History"], "year": "2024"}}}
    )
    assert posted.status_code == 200 and _names(posted.json()) == {"constitution.txt", "both.txt"}
    none = await http.get("/api/search", params=[("q", q), ("filter", "subject=Chemistry")])
    assert none.json()["chunks"] == []

    # facets: every readable document, value → documents; a filtered key counts without its own filter
    body = (await http.get("/api/search", params={"q": q})).json()
    assert _facet(body, "subject") == {"Polity": 2, "History": 2, "Geography": 1}
    assert _facet(body, "year") == {"2024": 3, "2023": 1}
    assert "source_path" not in body["facets"]
    assert "encoding" not in body["facets"]  # what the parser says about the file: only when asked by name
    asked = (await http.get("/api/search", params=[("q", q), ("facets", "encoding"), ("facets", "year")])).json()
    assert list(asked["facets"]) == ["encoding", "year"] and sum(f["count"] for f in asked["facets"]["encoding"]) >= 4
    body = both.json()
    assert _facet(body, "subject") == {"Polity": 2, "History": 1, "Geography": 1}  # year=2024 applies, subject not
    assert _facet(body, "year") == {"2024": 2, "2023": 1}  # the subject filter applies, year not
    only = (await http.get("/api/search", params=[("q", q), ("facets", "year")])).json()
    assert list(only["facets"]) == ["year"]
    one_doc = (
        await http.post("/api/search", json={"query": q, "filters": {"document_ids": [http.ids["empires.txt"]]}})
    ).json()  # type: ignore[attr-defined]
    assert _facet(one_doc, "subject") == {"History": 1}

    for params, needle in (
        ([("q", q), ("filter", "subject")], "key=value"),
        ([("q", q)] + [("filter", f"k{i}=v") for i in range(40)], "32"),
        ([("q", q)] + [("facets", f"k{i}") for i in range(30)], "facets"),
    ):
        r = await http.get("/api/search", params=params)
        assert r.status_code == 400 and needle in r.text, r.text


async def test_other_users_documents_are_invisible(live_app: Any, fake_ollama: FakeOllama) -> None:
    server = live_app(auth="on", ingest_workers=1, ollama_host=fake_ollama.url)
    alice = await setup_admin(server.url, "alice")
    bob_id = await add_user(alice, "bob")
    await add_user(alice, "carol")
    bob, carol = await signed_in(server.url, "bob"), await signed_in(server.url, "carol")
    mine = await _put(alice, "a.txt", "Alice writes about the constitution.", {"subject": "Polity"})
    secret = await _put(bob, "b.txt", "Bob writes about the secret project.", {"subject": "Secret", "codename": "X"})
    await wait_ready(alice, [mine])
    await wait_ready(bob, [secret])
    body = (await alice.get("/api/search", params={"q": "constitution secret project"})).json()
    assert _facet(body, "subject") == {"Polity": 1} and "codename" not in body["facets"]
    hidden = await alice.get("/api/search", params=[("q", "secret"), ("filter", "subject=Secret")])
    assert hidden.json()["chunks"] == []
    assert (await alice.patch(f"/api/documents/{secret}", json={"metadata": {"k": "v"}})).status_code == 404
    assert (await alice.post(f"/api/documents/{secret}/extract-metadata")).status_code == 404

    team = (await bob.post("/api/collections", json={"name": "team"})).json()["id"]
    assert (await bob.put(f"/api/collections/{team}/documents/{secret}")).status_code in (200, 201, 204)
    carol_id = next(u["id"] for u in (await alice.get("/api/users")).json()["users"] if u["username"] == "carol")
    await bob.put(f"/api/collections/{team}/members/{carol_id}", json={"role": "read"})
    r = await carol.patch(f"/api/documents/{secret}", json={"metadata": {"k": "v"}})
    assert r.status_code == 403  # a reader sees it but may not edit it
    facets = (await carol.get("/api/search", params={"q": "secret"})).json()["facets"]
    assert {f["value"] for f in facets["subject"]} == {"Secret"}  # shared: now readable, so counted
    assert bob_id
    for client in (alice, bob, carol):
        await client.aclose()


# ---- LLM extraction --------------------------------------------------------------------------------------
GOOD = {
    "title": "The River Report",
    "summary": "A report on rivers and their deltas.",
    "topics": ["Rivers", "Deltas", "Rivers"],
    "document_type": "Report",
    "language": "English",
    "key_dates": ["2024-03-01"],
}


async def _settled(client: httpx.AsyncClient, doc: str, timeout_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        row = (await client.get(f"/api/documents/{doc}")).json()
        if row["status"] == "ready" and row["metadata_status"] in ("done", "failed"):
            return row
        await asyncio.sleep(0.2)
    raise AssertionError(f"extraction of {doc} did not finish: {row}")


@pytest.fixture
def extracting(live_app: Any, fake_ollama: FakeOllama) -> Any:
    return live_app(
        ingest_workers=1, ollama_host=fake_ollama.url, metadata_extraction=True, metadata_extraction_timeout_s=1.0
    )


async def test_extraction_fills_metadata_and_is_filterable(extracting: Any, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = lambda body: Reply.json("<think>hm</think>```json\n" + json.dumps(GOOD) + "\n```")
    async with httpx.AsyncClient(base_url=extracting.url, timeout=60) as http:
        doc = await _put(
            http, "rivers.txt", "The Ganges and the Brahmaputra form the largest delta.", {"title": "Mine"}
        )
        row = await _settled(http, doc)
        assert row["metadata_status"] == "done" and row["metadata_error"] is None
        meta = row["metadata"]
        assert meta["title"] == "Mine"  # the person's key is never overwritten
        assert meta["topics"] == ["Rivers", "Deltas"] and meta["document_type"] == "report"
        assert meta["language"] == "English" and meta["summary"].startswith("A report")
        request = fake_ollama.chat_requests[-1]
        assert "Ganges" in request.messages[-1]["content"]
        hits = await http.get("/api/search", params=[("q", "delta"), ("filter", "topics=Deltas")])
        assert [c["document_id"] for c in hits.json()["chunks"]] == [doc]
        assert (await http.get("/api/search", params=[("q", "delta"), ("filter", "topics=Lakes")])).json()[
            "chunks"
        ] == []
        assert {f["value"] for f in hits.json()["facets"]["topics"]} == {"Rivers", "Deltas"}

        # a person edits a topic: a re-run keeps it, and replaces what is still the extractor's
        await http.patch(f"/api/documents/{doc}", json={"metadata": {"topics": ["Water"]}})
        fake_ollama.responder = lambda body: Reply.json({**GOOD, "language": "Hindi", "topics": ["Other"]})
        r = await http.post(f"/api/documents/{doc}/extract-metadata")
        assert r.status_code == 202 and r.json()["queued"] == [doc]
        row = await _settled(http, doc)
        assert row["metadata"]["topics"] == ["Water"] and row["metadata"]["language"] == "Hindi"
        r = await http.post("/api/documents/extract-metadata")
        assert r.status_code == 202 and r.json()["queued"] == [doc]


@pytest.mark.slow  # 9-25 s: `make test-slow` (CI runs it); keeps `make test` under 15 minutes
async def test_extraction_garbage_and_timeout_leave_the_document_ready(
    extracting: Any, fake_ollama: FakeOllama
) -> None:
    fake_ollama.responder = lambda body: Reply.json("I think this is about rivers!")
    async with httpx.AsyncClient(base_url=extracting.url, timeout=60) as http:
        doc = await _put(http, "garbage.txt", "Some text about rivers and lakes.", {})
        row = await _settled(http, doc)
        assert row["status"] == "ready" and row["metadata_status"] == "failed"
        assert "not valid metadata JSON" in row["metadata_error"] and "tried twice" in row["metadata_error"]
        assert len(fake_ollama.chat_requests) == 2  # one retry
        assert (await http.get("/api/search", params={"q": "rivers"})).json()["chunks"]  # searchable all the same

        fake_ollama.responder = lambda body: dataclasses.replace(Reply.json(GOOD), delay=5.0)
        slow = await _put(http, "slow.txt", "Another text, about mountains.", {})
        started = time.monotonic()
        row = await _settled(http, slow)
        assert row["status"] == "ready" and row["metadata_status"] == "failed"
        assert "did not answer within 1 s" in row["metadata_error"]
        assert time.monotonic() - started < 30
        ingested = await _put(http, "next.txt", "A third text, ingested while the model is slow.", {})
        await wait_ready(http, [ingested], timeout_s=30)


# ---- the chat tool's filters, and the CLI --------------------------------------------------------------------
async def test_the_chat_tools_filters_narrow_its_search(live_app: Any, fake_ollama: FakeOllama) -> None:
    server = live_app(ingest_workers=1, ollama_host=fake_ollama.url)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        ids = {name: await _put(http, name, text, {"subject": s}) for name, (text, s, _y) in DOCS.items()}
        await wait_ready(http, list(ids.values()))
    filters = {"subject": ["History"]}
    fake_ollama.enqueue(
        Reply.tool_call("search_documents", {"query": "parliament constitution history", "filters": filters}),
        Reply.text("From the history [1]."),
    )
    events = await chat(server.url, {"message": "What do my history notes say about parliament?"})
    result = next(data for name, data in events if name == "tool_result")
    assert {c["filename"] for c in result["chunks"]} == {"empires.txt", "both.txt"}
    # a filter the model got wrong goes back to it as an error it can fix, not a failed turn
    fake_ollama.enqueue(
        Reply.tool_call("search_documents", {"query": "parliament", "filters": {"subject": 3}}),
        Reply.tool_call("search_documents", {"query": "parliament"}),
        Reply.text("Parliament [1]."),
    )
    events = await chat(server.url, {"message": "parliament?"})
    assert [n for n, _ in events].count("tool_result") == 1
    assert "filters is an object" in fake_ollama.chat_requests[-2].messages[-1]["content"]


@pytest.mark.slow  # five CLI processes, each loading the embedding model
def test_the_cli_sets_filters_and_extracts(db: str, tmp_path: Path, fake_ollama: FakeOllama) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "polity.txt").write_text("The constitution sets out the powers of parliament.")
    (folder / "history.txt").write_text("The Mughal empire ruled for two centuries.")
    env = cli_env(db, tmp_path, OLLAMA_HOST=fake_ollama.url, LLM_PROVIDER="ollama")
    done = ragchat(
        env, "ingest", "--quiet", "--meta", "subject=Polity", "--meta", "subject=Law", str(folder / "polity.txt")
    )
    assert done.returncode == 0, done.stderr
    assert ragchat(env, "ingest", "--quiet", "--meta", "subject=History", str(folder / "history.txt")).returncode == 0
    assert ragchat(env, "ingest", "--meta", "novalue", str(folder)).returncode == 2
    found = ragchat(env, "search", "powers empire", "--json", "--filter", "subject=Law", "--filter", "subject=History")
    assert found.returncode == 0, found.stderr
    body = json.loads(found.stdout)
    assert {c["filename"] for c in body["chunks"]} == {"polity.txt", "history.txt"}
    assert {f["value"]: f["count"] for f in body["facets"]["subject"]} == {"Polity": 1, "Law": 1, "History": 1}

    fake_ollama.responder = lambda body: Reply.json(GOOD)
    extracted = ragchat(env, "metadata", "extract", "--all")
    assert extracted.returncode == 0, extracted.stderr
    assert extracted.stdout.count("done") == 2 and "2 extracted, 0 failed" in extracted.stderr
    found = ragchat(env, "search", "powers", "--json", "--filter", "topics=Deltas")
    assert len({c["document_id"] for c in json.loads(found.stdout)["chunks"]}) == 2
    assert ragchat(env, "metadata", "extract").returncode == 2  # neither IDs nor --all
