"""What a user may read, as SQL: their own documents, plus the documents of collections they own or are a
member of. Every query that lists, ranks or hydrates chunks or documents puts this inside its WHERE clause,
so access is enforced where rows are ranked (a `LIMIT n` still returns n readable rows), never filtered after.

The fragments are `psycopg.sql` compositions (typed: `conn.execute` takes them as they are, and a caller puts
them in its own `sql.SQL(...).format(...)`); columns are given as `"alias.column"` and quoted as identifiers. They
use the named parameter `%(uid)s`; `scope_params` gives it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from psycopg import sql

from ragchat.core.errors import NotFound
from ragchat.db.pool import Conn

#: Documents shared with the user through a collection (the user's own documents in them included).
SHARED_DOCUMENTS = sql.SQL(
    "SELECT dc.document_id FROM document_collections dc "
    "JOIN collection_members m ON m.collection_id = dc.collection_id WHERE m.user_id = %(uid)s"
)


def column(name: str) -> sql.Identifier:
    """`"d.owner_id"` as the identifier `"d"."owner_id"`."""
    return sql.Identifier(*name.split("."))


@dataclass(frozen=True)
class ReadScope:
    """The reader, and whether anything of another owner is shared with them (if not, the fast owner-only
    clause, with the plans and per-owner statistics of a single-user install, is exact)."""

    user_id: UUID
    shared: bool = False


_ANY_SHARED = """SELECT EXISTS (
    SELECT 1 FROM collection_members m
    JOIN document_collections dc ON dc.collection_id = m.collection_id
    JOIN documents sd ON sd.id = dc.document_id
    WHERE m.user_id = %(uid)s AND sd.owner_id <> %(uid)s) AS shared"""


async def read_scope(conn: Conn, user_id: UUID) -> ReadScope:
    """One indexed EXISTS that stops at the first shared document of another owner."""
    row = await (await conn.execute(_ANY_SHARED, {"uid": user_id})).fetchone()
    return ReadScope(user_id, bool(row and row["shared"]))


_ANY_SHARED_GROUP = """SELECT EXISTS (
    SELECT 1 FROM collection_members m
    JOIN bm25_group_collections gc ON gc.collection_id = m.collection_id
    JOIN bm25_groups g ON g.id = gc.group_id
    WHERE m.user_id = %(uid)s AND g.owner_id <> %(uid)s) AS shared"""


async def read_chunk_scope(conn: Conn, user_id: UUID) -> ReadScope:
    """`read_scope` for searching chunks: is a share group (migrations/0017) of another owner readable? Its cost
    follows the groups in the user's collections, not their documents (an owner who shared 50k documents of
    their own pays ~2 ms per search for `read_scope`'s answer). A group of another owner left empty makes it
    True (the exact shared clauses, a little slower); a shared document without chunks has no group, and
    nothing to search."""
    row = await (await conn.execute(_ANY_SHARED_GROUP, {"uid": user_id})).fetchone()
    return ReadScope(user_id, bool(row and row["shared"]))


def owned(owner_col: str) -> sql.Composed:
    """The reader's own rows: the whole scope of a reader nothing is shared with."""
    return sql.SQL("{} = %(uid)s").format(column(owner_col))


def readable_shared(owner_col: str, document_col: str) -> sql.Composed:
    """The reader's own rows and those of documents shared with them (exact whatever the scope)."""
    return sql.SQL("({} OR {} IN ({}))").format(owned(owner_col), column(document_col), SHARED_DOCUMENTS)


def readable(scope: ReadScope, owner_col: str, document_col: str) -> sql.Composed:
    """A boolean SQL expression over a row with `owner_col` and `document_col`: may the reader see it?"""
    return readable_shared(owner_col, document_col) if scope.shared else owned(owner_col)


#: Share groups (migrations/0017) with a collection the user is a member of, as a subquery (the keyword arm sums
#: the BM25 statistics of these groups and the reader's own).
SHARED_GROUPS = sql.SQL(
    "SELECT gc.group_id FROM collection_members m "
    "JOIN bm25_group_collections gc ON gc.collection_id = m.collection_id WHERE m.user_id = %(uid)s"
)
#: The same groups as an array: an InitPlan, once per statement.
READER_GROUPS = sql.SQL("ARRAY({})").format(SHARED_GROUPS)


def readable_chunks(scope: ReadScope, owner_col: str, document_col: str, group_col: str | None = None) -> sql.Composed:
    """`readable` for chunk rows (document_chunks, chunk_embeddings): the same set. Every chunk's document has
    its share group in `bm25_document_groups` (kept by the chunk and membership triggers, in the writing
    transaction), and a group is readable exactly when one of its collections has the reader as a member, so a
    shared document is recognised without hashing every shared document id per query (10 ms per arm at 100k
    shared chunks). `group_col`: the row's own copy of its shared group (document_chunks.share_group,
    migrations/0023), compared on the row already fetched; else one primary-key probe per row. Not for
    documents without chunks."""
    if not scope.shared:
        return owned(owner_col)
    group = (
        column(group_col)
        if group_col
        else sql.SQL("(SELECT dg.group_id FROM bm25_document_groups dg WHERE dg.document_id = {})").format(
            column(document_col)
        )
    )
    return sql.SQL("({} OR {} = ANY({}))").format(owned(owner_col), group, READER_GROUPS)


def scope_params(scope: ReadScope) -> dict[str, Any]:
    return {"uid": scope.user_id}


async def unreadable(conn: Conn, user_id: UUID, document_ids: list[UUID]) -> list[UUID]:
    """Those of `document_ids` the user may not read (or that do not exist): say so instead of empty results."""
    if not document_ids:
        return []
    rows = await (
        await conn.execute(
            sql.SQL("SELECT d.id FROM documents d WHERE d.id = ANY(%(ids)s) AND {}").format(
                readable_shared("d.owner_id", "d.id")
            ),
            {"ids": document_ids, "uid": user_id},
        )
    ).fetchall()
    found = {r["id"] for r in rows}
    return [i for i in document_ids if i not in found]


async def others_documents(conn: Conn, user_id: UUID, document_ids: Sequence[UUID]) -> list[UUID]:
    """Those of `document_ids` that another user owns (reading them is reading a share: the audit log's
    `document.read`), in the order given."""
    if not document_ids:
        return []
    rows = await (
        await conn.execute(
            "SELECT d.id FROM documents d WHERE d.id = ANY(%(ids)s) AND d.owner_id <> %(uid)s",
            {"ids": list(document_ids), "uid": user_id},
        )
    ).fetchall()
    found = {r["id"] for r in rows}
    return [i for i in document_ids if i in found]


async def unreadable_collections(conn: Conn, user_id: UUID, collection_ids: list[UUID]) -> list[UUID]:
    """Those of `collection_ids` that are not collections the user owns or is a member of."""
    if not collection_ids:
        return []
    rows = await (
        await conn.execute(
            """SELECT c.id FROM collections c WHERE c.id = ANY(%(ids)s) AND (c.owner_id = %(uid)s OR EXISTS (
                   SELECT 1 FROM collection_members m WHERE m.collection_id = c.id AND m.user_id = %(uid)s))""",
            {"ids": collection_ids, "uid": user_id},
        )
    ).fetchall()
    found = {r["id"] for r in rows}
    return [i for i in collection_ids if i not in found]


async def require_readable(
    conn: Conn, user_id: UUID, document_ids: Sequence[UUID] | None, collection_ids: Sequence[UUID] | None
) -> None:
    """The one rule for a request that names documents or collections to search (chat, search, rag, MCP, a
    thread's settings): any id the user may not read, or that does not exist, is a 404 `not_found` naming the kind
    and the ids, the same whether the id is someone else's or nobody's (docs/API.md, "Unreadable ids")."""
    for kind, ids, check in (
        ("document", document_ids, unreadable),
        ("collection", collection_ids, unreadable_collections),
    ):
        wanted = list(dict.fromkeys(ids or ()))
        missing = await check(conn, user_id, wanted) if wanted else []
        if missing:
            shown = ", ".join(map(str, missing[:10])) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
            raise NotFound(
                f"{kind} {missing[0]} not found" if len(missing) == 1 else f"{kind}s not found: {shown}",
                {"kind": kind, "ids": [str(i) for i in missing[:100]]},
            )
