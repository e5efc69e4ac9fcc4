"""SQL for bulk actions over many documents: the ids a list filter matches inside the reader's scope ("select all
N matching" sends the filter, not the ids), and putting documents into or taking them out of a collection."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from psycopg import sql

from ragchat.db.pool import Conn
from ragchat.documents.catalog.listing import ListQuery, filters
from ragchat.readscope.sql import read_scope, readable, scope_params

#: per-id reasons of a collection action (the single routes' words)
NOT_FOUND = "not found"
NOT_OWNER = "forbidden: only a document's owner puts it into a collection"
NOT_IN = "not found: not in this collection"
READ_ONLY = "forbidden: you may only read this collection"


async def matching_ids(conn: Conn, reader: UUID, query: ListQuery, cap: int) -> list[UUID]:
    """The ids of the documents `reader` may read that match the list filter of `query` (its paging ignored), in
    the list's order; at most `cap` + 1, so a caller can tell "more than `cap`"."""
    scope = await read_scope(conn, reader)
    where, params = filters(query, reader)
    clause = sql.SQL(" AND ").join([readable(scope, "d.owner_id", "d.id"), *where])
    stmt = sql.SQL("SELECT d.id FROM documents d WHERE {} ORDER BY d.created_at DESC, d.id DESC LIMIT %(cap)s").format(
        clause
    )
    rows = await (await conn.execute(stmt, params | scope_params(scope) | {"cap": cap + 1})).fetchall()
    return [r["id"] for r in rows]


async def _readable(conn: Conn, reader: UUID, ids: Sequence[UUID]) -> set[UUID]:
    scope = await read_scope(conn, reader)
    stmt = sql.SQL("SELECT d.id FROM documents d WHERE d.id = ANY(%(ids)s) AND {}").format(
        readable(scope, "d.owner_id", "d.id")
    )
    rows = await (await conn.execute(stmt, scope_params(scope) | {"ids": list(ids)})).fetchall()
    return {r["id"] for r in rows}


async def add_to_collection(conn: Conn, user: UUID, collection_id: UUID, ids: Sequence[UUID]) -> dict[UUID, str | None]:
    """Put those of `ids` that `user` owns into the collection (whose write access the caller checked); per id
    None (in it now, or already) or why not: another's document it may read, or one it may not (not found)."""
    await conn.execute(
        """INSERT INTO document_collections (collection_id, document_id, added_by)
           SELECT %(cid)s, d.id, %(me)s FROM documents d WHERE d.owner_id = %(me)s AND d.id = ANY(%(ids)s)
           ON CONFLICT DO NOTHING""",
        {"cid": collection_id, "me": user, "ids": list(ids)},
    )
    owned = await (
        await conn.execute("SELECT id FROM documents WHERE owner_id = %s AND id = ANY(%s)", (user, list(ids)))
    ).fetchall()
    done = {r["id"] for r in owned}
    seen = await _readable(conn, user, [i for i in ids if i not in done])
    return {i: None if i in done else NOT_OWNER if i in seen else NOT_FOUND for i in ids}


async def remove_from_collection(
    conn: Conn, user: UUID, collection_id: UUID, role: str, ids: Sequence[UUID]
) -> dict[UUID, str | None]:
    """Take `ids` out of the collection, where `user` has `role`: a writer or the owner takes any, a reader only
    their own documents; per id None or why not."""
    rows = await (
        await conn.execute(
            """DELETE FROM document_collections dc USING documents d
               WHERE dc.collection_id = %(cid)s AND dc.document_id = ANY(%(ids)s) AND d.id = dc.document_id
                 AND (%(writer)s OR d.owner_id = %(me)s)
               RETURNING dc.document_id""",
            {"cid": collection_id, "ids": list(ids), "writer": role in ("owner", "write"), "me": user},
        )
    ).fetchall()
    done = {r["document_id"] for r in rows}
    left = await (
        await conn.execute(
            "SELECT document_id FROM document_collections WHERE collection_id = %s AND document_id = ANY(%s)",
            (collection_id, [i for i in ids if i not in done]),
        )
    ).fetchall()
    inside = {r["document_id"] for r in left}
    return {i: None if i in done else READ_ONLY if i in inside else NOT_IN for i in ids}
