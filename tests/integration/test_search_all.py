"""Exhaustive search (GET /api/search/documents): every readable matching document, counts, the best passage,
keyset pages, the bound and its honest note, the read scope, and hostile parameters; over the real HTTP
server, the real Postgres and the real ingestion pipeline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support.accounts import add_user, setup_admin, signed_in, upload, wait_ready

PENALTY = "The supplier pays a penalty of 2% per week of delay under this clause."
FILLER = "Delivery dates are agreed in writing between the parties."
OTHER = "Volcanic eruptions eject magma, ash and gases."


@pytest.fixture
def server(live_app: Callable[..., Any], fake_ollama: Any) -> Any:
    return live_app(auth="on", ingest_workers=1, ollama_host=fake_ollama.url, chunk_tokens=40, chunk_overlap=0)


async def pages(client: httpx.AsyncClient, **params: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        r = await client.get("/api/search/documents", params={**params, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        out.append(r.json())
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return out


async def test_every_matching_document_is_listed_with_counts_and_best_passage(server: Any) -> None:
    a = await setup_admin(server.url, "alice")
    # 23 contracts mention a penalty (one of them in three places), 5 do not
    heavy = " ".join([PENALTY, FILLER * 3, "A second penalty applies to late invoices.", FILLER * 3,
                      "The penalty cap is 10% of the order."])  # fmt: skip
    docs = {f"contract{i:02d}.txt": f"Contract {i}. {FILLER} {PENALTY}" for i in range(22)}
    docs["heavy.txt"] = heavy
    docs |= {f"other{i}.txt": f"{OTHER} Note {i}." for i in range(5)}
    ids = {name: await upload(a, name, text) for name, text in docs.items()}
    await wait_ready(a, list(ids.values()))
    matching = {ids[n] for n in docs if "penalt" in docs[n]}

    got = await pages(a, q="penalties", page_size=5)
    assert len(got) == 5  # 23 documents, 5 a page
    listed = [d for page in got for d in page["documents"]]
    assert [d["document_id"] for d in listed].count(ids["heavy.txt"]) == 1
    assert {d["document_id"] for d in listed} == matching and len(listed) == len(matching)
    first = got[0]
    assert first["complete"] and first["note"] is None and first["total_documents"] == 23
    assert listed[0]["document_id"] == ids["heavy.txt"] and listed[0]["matches"] >= 2  # most matches first
    assert [d["matches"] for d in listed] == sorted((d["matches"] for d in listed), reverse=True)
    assert all("penalt" in d["best"]["content"].lower() for d in listed)
    assert first["total_passages"] == sum(d["matches"] for d in listed)

    # `any`: one word is enough; `all` with a phrase and an exclusion (web-search syntax)
    either = (await a.get("/api/search/documents", params={"q": "penalty volcanic", "match": "any"})).json()
    assert either["total_documents"] == 28
    both = (await a.get("/api/search/documents", params={"q": "penalty volcanic"})).json()
    assert both["total_documents"] == 0 and both["complete"]
    excluded = (await a.get("/api/search/documents", params={"q": "penalty -contract"})).json()
    assert [d["document_id"] for d in excluded["documents"]] == [ids["heavy.txt"]]
    phrase = (await a.get("/api/search/documents", params={"q": '"penalty cap"'})).json()
    assert [d["document_id"] for d in phrase["documents"]] == [ids["heavy.txt"]]
    assert "cap" in phrase["documents"][0]["best"]["content"]

    # the bound: stops early and says so; raising it lists them all
    short = (await a.get("/api/search/documents", params={"q": "penalty", "limit": 10})).json()
    assert not short["complete"] and short["total_passages"] == 10 and short["total_documents"] <= 10
    assert "Stopped early after 10 matching passages" in short["note"] and "raise limit" in short["note"]
    raised = (await a.get("/api/search/documents", params={"q": "penalty", "limit": 1000})).json()
    assert raised["complete"] and raised["total_documents"] == 23

    # a query of stop words only says nothing can match
    stop = (await a.get("/api/search/documents", params={"q": "the of and"})).json()
    assert stop["documents"] == [] and "no searchable words" in stop["note"]


async def test_only_readable_documents_are_listed(server: Any) -> None:
    a = await setup_admin(server.url, "alice")
    await add_user(a, "bob")
    b = await signed_in(server.url, "bob")
    a_docs = [await upload(a, f"a{i}.txt", f"Zanzibar ledger {i}. {PENALTY}") for i in range(4)]
    b_docs = [await upload(b, f"b{i}.txt", f"Bob's note {i}. {PENALTY}") for i in range(2)]
    await wait_ready(a, a_docs)
    await wait_ready(b, b_docs)
    seen = (await b.get("/api/search/documents", params={"q": "penalty"})).json()
    assert {d["document_id"] for d in seen["documents"]} == set(b_docs) and seen["total_documents"] == 2
    assert (await b.get("/api/search/documents", params={"q": "zanzibar"})).json()["total_documents"] == 0
    # another user's id as a filter: 404, as on every door (policy/request.py), never a wider listing
    narrowed = await b.get("/api/search/documents", params={"q": "penalty", "document_ids": a_docs[0]})
    assert narrowed.status_code == 404 and narrowed.json()["code"] == "not_found", narrowed.text
    # shared through a collection: exactly the shared documents appear
    shared = (await a.post("/api/collections", json={"name": "contracts"})).json()["id"]
    assert (await a.put(f"/api/collections/{shared}/documents/{a_docs[0]}")).status_code == 204
    bob = next(u for u in (await a.get("/api/users")).json()["users"] if u["username"] == "bob")
    assert (await a.put(f"/api/collections/{shared}/members/{bob['id']}", json={"role": "read"})).status_code == 204
    seen = (await b.get("/api/search/documents", params={"q": "penalty"})).json()
    assert {d["document_id"] for d in seen["documents"]} == set(b_docs) | {a_docs[0]}
    async with httpx.AsyncClient(base_url=server.url) as anon:
        assert (await anon.get("/api/search/documents", params={"q": "penalty"})).status_code == 401


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"q": "penalty", "cursor": "not-a-cursor"}, "cursor is not one this search returned"),
        ({"q": "penalty", "cursor": "x" * 5000}, "cursor is not one this search returned"),
        ({"q": "penalty", "cursor": "eyJxIjoiMCIsIm4iOi0xLCJpZCI6ImEifQ"}, "cursor"),
        ({"q": "penalty", "page_size": 0}, "page_size"),
        ({"q": "penalty", "page_size": 100000}, "page_size"),
        ({"q": "penalty", "limit": 10**9}, "limit must be 1 to 200000"),
        ({"q": "penalty", "limit": -1}, "limit"),
        ({"q": "penalty", "match": "regex"}, "match"),
        ({"q": "pen\x00alty"}, "NUL"),
        ({"q": "x" * 5000}, "too long"),
    ],
)
async def test_hostile_parameters_are_a_clear_400(server: Any, params: dict[str, Any], says: str) -> None:
    a = await setup_admin(server.url, "alice")
    started = time.monotonic()
    r = await a.get("/api/search/documents", params=params)
    assert r.status_code == 400, r.text
    assert says in r.text
    assert time.monotonic() - started < 5


async def test_cursor_of_another_query_and_tsquery_syntax(server: Any) -> None:
    a = await setup_admin(server.url, "alice")
    ids = [await upload(a, f"c{i}.txt", f"Contract {i}. {PENALTY}") for i in range(3)]
    await wait_ready(a, ids)
    first = (await a.get("/api/search/documents", params={"q": "penalty", "page_size": 1})).json()
    assert first["next_cursor"]
    r = await a.get("/api/search/documents", params={"q": "delay", "cursor": first["next_cursor"]})
    assert r.status_code == 400 and "another query" in r.text
    # tsquery operators and quotes in the query are words, never syntax errors
    for q in ["penalty & | ! ( ) :* '", "'; DROP TABLE documents; --", "penalty\\", "<-> !!! ((("]:
        r = await a.get("/api/search/documents", params={"q": q, "match": "any"})
        assert r.status_code == 200, (q, r.text)
        r = await a.get("/api/search/documents", params={"q": q})
        assert r.status_code == 200, (q, r.text)


async def test_cli_search_all_lists_every_page(server: Any, tmp_path: Any) -> None:
    import asyncio
    import json

    from tests.integration.test_accounts import run_cli

    a = await setup_admin(server.url, "alice")
    ids = [await upload(a, f"c{i}.txt", f"Contract {i}. {PENALTY}") for i in range(7)]
    ids.append(await upload(a, "volcano.txt", OTHER))
    await wait_ready(a, ids)
    token = (await a.post("/api/auth/tokens", json={"name": "cli"})).json()["token"]
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path), "RAGCHAT_TOKEN": token}
    args = ("search", "penalty", "--all", "--page-size", "3", "--server", server.url)
    out = await asyncio.to_thread(run_cli, *args, "--json", env=env)
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert body["pages"] == 3 and body["complete"] and {d["document_id"] for d in body["documents"]} == set(ids[:7])
    table = await asyncio.to_thread(run_cli, *args, "--limit", "4", env=env)
    assert table.returncode == 0, table.stderr
    assert "stopped early" in table.stdout and "Stopped early after 4 matching passages" in table.stdout + table.stderr
    bad = await asyncio.to_thread(run_cli, *args, "--cursor", "garbage", env=env)
    assert bad.returncode == 2 and "cursor" in bad.stderr
