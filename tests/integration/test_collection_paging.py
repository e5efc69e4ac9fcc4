"""Issue 46 item 4: a collection's page at 10,000 documents. The collection's detail carries its members and
`document_count`, never its documents; GET /api/documents?collection_id= searches, sorts and pages them on the
server, for the owner and a `read` member alike (another owner's documents shared through the collection included,
with their owner), and for nobody else. Rows are inserted with SQL (generate_series), not uploaded."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

import httpx
import pytest

from ragchat.documents.catalog import listing as catalog_listing
from tests.support.accounts import add_user, setup_admin, signed_in

N_OWNER = 9_990  # the collection owner's "report 00001" … "report 09990"
N_WRITER = 10  # a writer's "memo 01" … "memo 10", shared through the collection
N_OUTSIDE = 2_000  # the owner's documents that are not in the collection


@pytest.fixture
def server(live_app: Callable[..., Any]) -> Any:
    return live_app(auth="on", ingest_workers=0)


async def listing(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    r = await client.get("/api/documents", params=params)
    assert r.status_code == 200, r.text
    return r.json()


async def seed(pool: Any, owner: UUID, writer: UUID, collection: UUID) -> None:
    """The owner's and the writer's documents (ready, one second apart, the lowest number the newest) and the
    collection's rows, each in one statement."""
    async with pool.connection() as conn:
        for who, prefix, digits, n in ((owner, "report", 5, N_OWNER), (writer, "memo", 2, N_WRITER)):
            await conn.execute(
                """INSERT INTO documents (owner_id, filename, title, content_type, byte_size, sha256, status,
                                          created_at)
                   SELECT %(uid)s, %(prefix)s || '-' || i || '.txt',
                          %(prefix)s || ' ' || lpad(i::text, %(digits)s, '0'),
                          'text/plain', 100 + i, md5(%(prefix)s || i), 'ready', now() - make_interval(secs => i)
                   FROM generate_series(1, %(n)s) i""",
                {"uid": owner if who == owner else writer, "prefix": prefix, "digits": digits, "n": n},
            )
        await conn.execute(
            """INSERT INTO document_collections (collection_id, document_id, added_by)
               SELECT %s, d.id, d.owner_id FROM documents d WHERE d.owner_id IN (%s, %s)""",
            (collection, owner, writer),
        )
        await conn.execute(
            """INSERT INTO documents (owner_id, filename, title, content_type, byte_size, sha256, status)
               SELECT %s, 'other-' || i || '.txt', 'other ' || i, 'text/plain', 10, md5('other' || i), 'ready'
               FROM generate_series(1, %s) i""",
            (owner, N_OUTSIDE),
        )
        await conn.execute("ANALYZE documents")
        await conn.execute("ANALYZE document_collections")


async def per_row_lookups(pool: Any, reader: UUID, query: catalog_listing.ListQuery) -> int:
    """How many times listing one page probed `document_collections` by document (the per-row `collection_ids`
    of a listed document), counted by Postgres in the page's own transaction."""
    probes = "SELECT pg_stat_get_xact_numscans('document_collections_document_idx'::regclass) AS n"
    async with pool.connection() as conn, conn.transaction():
        before = await (await conn.execute(probes)).fetchone()
        rows, total = await catalog_listing.list_page(conn, reader, query)
        after = await (await conn.execute(probes)).fetchone()
    assert len(rows) == 50 and total == 10_000
    assert before is not None and after is not None
    return int(after["n"]) - int(before["n"])


async def median_ms(client: httpx.AsyncClient, params: list[dict[str, Any]], rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        for p in params:
            started = time.perf_counter()
            await listing(client, **p)
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def test_a_collection_of_ten_thousand_documents_is_paged_on_the_server(server: Any, pool: Any) -> None:
    owner = await setup_admin(server.url)
    writer_id, reader_id = await add_user(owner, "carol"), await add_user(owner, "bob")
    await add_user(owner, "dave")
    reader, stranger = await signed_in(server.url, "bob"), await signed_in(server.url, "dave")
    owner_id = UUID((await owner.get("/api/auth/session")).json()["user"]["id"])
    team = (await owner.post("/api/collections", json={"name": "archive"})).json()["id"]
    for user, role in ((writer_id, "write"), (reader_id, "read")):
        r = await owner.put(f"/api/collections/{team}/members/{user}", json={"role": role})
        assert r.status_code == 204, r.text
    await seed(pool, owner_id, UUID(writer_id), UUID(team))

    # The detail: members and the count, not 10,000 documents.
    detail = (await owner.get(f"/api/collections/{team}")).json()
    assert detail["document_count"] == 10_000 and "documents" not in detail
    assert [(m["user"]["username"], m["role"]) for m in detail["members"]] == [
        ("admin", "owner"),
        ("bob", "read"),
        ("carol", "write"),
    ]

    for client in (owner, reader):
        first = await listing(client, collection_id=team, sort="title", order="asc", limit=50)
        assert first["total"] == 10_000
        titles = [d["title"] for d in first["documents"]]
        assert titles == [f"memo {i:02d}" for i in range(1, 11)] + [f"report {i:05d}" for i in range(1, 41)]
        assert {d["owner"]["username"] for d in first["documents"][:10]} == {"carol"}  # shared, owner shown
        assert {d["owner"]["username"] for d in first["documents"][10:]} == {"admin"}

        middle = await listing(client, collection_id=team, sort="title", order="asc", limit=50, offset=5_000)
        assert [d["title"] for d in middle["documents"]] == [f"report {i:05d}" for i in range(4_991, 5_041)]
        last = await listing(client, collection_id=team, sort="title", order="asc", limit=50, offset=9_950)
        assert [d["title"] for d in last["documents"]] == [f"report {i:05d}" for i in range(9_941, 9_991)]
        assert (await listing(client, collection_id=team, limit=50, offset=10_000))["documents"] == []

        newest = await listing(client, collection_id=team, limit=3)  # newest first: each owner's number 1
        assert sorted(d["title"] for d in newest["documents"][:2]) == ["memo 01", "report 00001"]

        found = await listing(client, collection_id=team, q="report 012", sort="title", order="desc", limit=50)
        assert found["total"] == 100
        assert [d["title"] for d in found["documents"][:2]] == ["report 01299", "report 01298"]
        assert (await listing(client, collection_id=team, q="memo"))["total"] == N_WRITER
        assert (await listing(client, collection_id=team, q="other"))["total"] == 0  # outside the collection

    # The owner's other documents stay out of the collection's list, and in their own.
    assert (await listing(owner, q="other"))["total"] == N_OUTSIDE
    assert (await listing(reader, q="other"))["total"] == 0

    # Not a member: no collection, and none of its documents.
    assert (await stranger.get(f"/api/collections/{team}")).status_code == 404
    assert await listing(stranger, collection_id=team) == {"documents": [], "total": 0}

    # The last page's per-row columns are computed for its 50 rows, not for the 9,950 its OFFSET skips (before:
    # a probe per row skipped).
    last_page = catalog_listing.ListQuery(collection_id=UUID(team), sort="title", order="asc", offset=9_950)
    for user in (owner_id, UUID(reader_id)):
        assert await per_row_lookups(pool, user, last_page) <= 3 * 50  # 106 here; 10,006 before

    pages = [
        {"collection_id": team},
        {"collection_id": team, "sort": "title", "order": "asc", "offset": 5_000},
        {"collection_id": team, "sort": "title", "order": "asc", "offset": 9_950},
        {"collection_id": team, "q": "report 012", "sort": "title"},
    ]
    for name, client in (("owner", owner), ("reader", reader)):
        # recorded, not asserted: this machine's load decides the figure
        print(f"\ncollection of 10,000, a page of 50 ({name}): median {await median_ms(client, pages):.1f} ms")
    for client in (owner, reader, stranger):
        await client.aclose()
