"""SQL for the documents page and the viewer: a filtered, sorted page of the readable documents with its total,
bulk delete and retry, the original file's bytes in slices, and a document's chunks in order."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from psycopg import sql

from ragchat.db.pool import Conn, Pool
from ragchat.documents.catalog.repository import DOCUMENT_FIELDS
from ragchat.documents.catalog.shared import BEIR_RECORD_TYPE
from ragchat.readscope.sql import read_scope, readable, scope_params

SortKey = Literal["created_at", "title", "byte_size", "status"]
Order = Literal["desc", "asc"]
TypeFamily = Literal[
    "pdf", "docx", "text", "markdown", "html", "csv", "xlsx", "pptx", "epub", "subtitles", "jsonl", "image", "other"
]

#: Each type filter's content types (as stored by registration: `parsers.CONTENT_TYPES`, BEIR records).
TYPE_FAMILIES: dict[str, tuple[str, ...]] = {
    "pdf": ("application/pdf",),
    "docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",),
    "text": ("text/plain",),
    "markdown": ("text/markdown",),
    "html": ("text/html",),
    "csv": ("text/csv",),
    "xlsx": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",),
    "pptx": ("application/vnd.openxmlformats-officedocument.presentationml.presentation",),
    "epub": ("application/epub+zip",),
    "subtitles": ("text/vtt", "application/x-subrip"),
    "jsonl": (BEIR_RECORD_TYPE, "application/x-ndjson"),
    "image": ("image/png", "image/jpeg", "image/tiff", "image/webp"),  # read by OCR (parsing/formats/image.py)
}
_KNOWN_TYPES = [t for types in TYPE_FAMILIES.values() for t in types]

#: Sort keys → SQL (a whitelist: the key never reaches the SQL text itself).
_SORT_SQL = {
    "created_at": sql.SQL("d.created_at"),
    "title": sql.SQL("lower(d.title)"),
    "byte_size": sql.SQL("d.byte_size"),
    "status": sql.SQL("d.status"),
}

FILE_SLICE = 1 << 20  # the original file is streamed in 1 MB slices, each read with its own short query


@dataclass(frozen=True)
class ListQuery:
    q: str | None = None
    status: str | None = None
    type: str | None = None
    collection_id: UUID | None = None
    sort: SortKey = "created_at"
    order: Order = "desc"
    limit: int = 50
    offset: int = 0
    owner: Literal["me", "others"] | None = None
    # one metadata key and a value it holds (a string, or one of its list's strings)
    meta_key: str | None = None
    meta_value: str | None = None


def like_pattern(text: str) -> str:
    """`text` as an ILIKE pattern matching it anywhere, its own `%`, `_` and `\\` taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def filters(query: ListQuery, reader: UUID) -> tuple[list[sql.Composable], dict[str, Any]]:
    where: list[sql.Composable] = []
    params: dict[str, Any] = {}
    if query.owner:
        where.append(sql.SQL("d.owner_id = %(me)s" if query.owner == "me" else "d.owner_id <> %(me)s"))
        params["me"] = reader
    if query.meta_key is not None and query.meta_value is not None:
        where.append(
            sql.SQL(
                "(d.metadata -> %(mk)s = to_jsonb(%(mv)s::text)"
                " OR d.metadata -> %(mk)s @> jsonb_build_array(%(mv)s::text))"
            )
        )
        params |= {"mk": query.meta_key, "mv": query.meta_value}
    if query.q:
        where.append(sql.SQL(r"(d.title ILIKE %(q)s ESCAPE '\' OR d.filename ILIKE %(q)s ESCAPE '\')"))
        params["q"] = like_pattern(query.q)
    if query.status:
        where.append(sql.SQL("d.status = %(status)s"))
        params["status"] = query.status
    if query.type == "other":
        where.append(sql.SQL("NOT (d.content_type = ANY(%(types)s))"))
        params["types"] = _KNOWN_TYPES
    elif query.type:
        where.append(sql.SQL("d.content_type = ANY(%(types)s)"))
        params["types"] = list(TYPE_FAMILIES[query.type])
    if query.collection_id is not None:
        where.append(sql.SQL("d.id IN (SELECT document_id FROM document_collections WHERE collection_id = %(cid)s)"))
        params["cid"] = query.collection_id
    return where, params


async def list_page(conn: Conn, reader: UUID, query: ListQuery) -> tuple[list[dict[str, Any]], int]:
    """One page of what `reader` may read, filtered and sorted (ties broken by id, so pages never overlap), and
    how many match in all."""
    scope = await read_scope(conn, reader)
    where, params = filters(query, reader)
    clause = sql.SQL(" AND ").join([readable(scope, "d.owner_id", "d.id"), *where])
    params |= scope_params(scope) | {"limit": query.limit, "offset": query.offset}
    direction = sql.SQL("ASC" if query.order == "asc" else "DESC")
    # The page's ids first, then their fields: the per-row columns of DOCUMENT_FIELDS (access, collection ids)
    # are computed for the page only, not for every row an OFFSET skips (at 10,000 documents in a collection,
    # the last page read 40k buffers instead of 510: tests/integration/test_collection_paging.py).
    page = sql.SQL(
        """SELECT {fields} FROM documents d JOIN (
               SELECT d.id FROM documents d WHERE {clause} ORDER BY {key} {direction}, d.id {direction}
               LIMIT %(limit)s OFFSET %(offset)s) p ON p.id = d.id
           ORDER BY {key} {direction}, d.id {direction}"""
    ).format(fields=DOCUMENT_FIELDS, clause=clause, key=_SORT_SQL[query.sort], direction=direction)
    rows = await (await conn.execute(page, params)).fetchall()
    count = sql.SQL("SELECT count(*) AS n FROM documents d WHERE {}").format(clause)
    total = await (await conn.execute(count, params)).fetchone()
    return rows, int(total["n"]) if total else 0


async def _statuses(conn: Conn, reader: UUID, ids: Sequence[UUID]) -> dict[UUID, dict[str, Any]]:
    """Of `ids`, those `reader` may read: their owner and status."""
    scope = await read_scope(conn, reader)
    rows = await (
        await conn.execute(
            sql.SQL("SELECT d.id, d.owner_id, d.status FROM documents d WHERE d.id = ANY(%(ids)s) AND {}").format(
                readable(scope, "d.owner_id", "d.id")
            ),
            {**scope_params(scope), "ids": list(ids)},
        )
    ).fetchall()
    return {r["id"]: r for r in rows}


async def bulk_delete(conn: Conn, owner: UUID, ids: Sequence[UUID]) -> dict[UUID, str | None]:
    """Delete those of `ids` that `owner` owns; per id None (deleted) or why not (another's: not found, or
    only shared with them: only the owner may)."""
    rows = await (
        await conn.execute(
            "DELETE FROM documents WHERE owner_id = %s AND id = ANY(%s) RETURNING id", (owner, list(ids))
        )
    ).fetchall()
    done = {r["id"] for r in rows}
    seen = await _statuses(conn, owner, [i for i in ids if i not in done])
    return {
        i: None if i in done else "forbidden: only the document's owner can delete it" if i in seen else "not found"
        for i in ids
    }


async def bulk_retry(conn: Conn, owner: UUID, ids: Sequence[UUID]) -> dict[UUID, str | None]:
    """Queue again those of `ids` that `owner` owns and that failed (or are stuck: processing with the lease run
    out), attempts reset; per id None (queued) or why not."""
    rows = await (
        await conn.execute(
            """UPDATE documents SET status = 'queued', error = NULL, chunks_done = 0, attempts = 0,
                   lease_until = NULL, worker_id = NULL, not_before = NULL, progress_started_at = NULL,
                   updated_at = now()
               WHERE id = ANY(%s) AND owner_id = %s
                 AND (status = 'failed' OR (status = 'processing' AND coalesce(lease_until, locked_at) < now()))
               RETURNING id""",
            (list(ids), owner),
        )
    ).fetchall()
    done = {r["id"] for r in rows}
    seen = await _statuses(conn, owner, [i for i in ids if i not in done])

    def why(i: UUID) -> str | None:
        if i in done:
            return None
        if i not in seen:
            return "not found"
        if seen[i]["owner_id"] != owner:
            return "forbidden: only the document's owner can retry it"
        return f"conflict: the document is {seen[i]['status']}: only a failed or stuck one can be retried"

    return {i: why(i) for i in ids}


async def blob_size(conn: Conn, document_id: UUID) -> int | None:
    row = await (
        await conn.execute("SELECT octet_length(data) AS n FROM document_blobs WHERE document_id = %s", (document_id,))
    ).fetchone()
    return None if row is None else int(row["n"])


async def blob_slices(pool: Pool, document_id: UUID, size: int, slice_bytes: int = FILE_SLICE) -> AsyncIterator[bytes]:
    """The file's bytes in slices, each read in binary with its own connection (none is held while the client
    reads); stops early if the document is deleted meanwhile."""
    for start in range(0, size, slice_bytes):
        async with pool.connection() as conn:
            row = await (
                await conn.execute(
                    "SELECT substring(data FROM %s FOR %s) AS piece FROM document_blobs WHERE document_id = %s",
                    (start + 1, slice_bytes, document_id),
                    binary=True,
                )
            ).fetchone()
        if row is None:
            return
        yield bytes(row["piece"])


async def chunk_page(conn: Conn, document_id: UUID, *, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
    """Up to `limit` chunks from ordinal `offset` of a document (whose access the caller checked), in order, and
    how many it has."""
    rows = await (
        await conn.execute(
            """SELECT id, chunk_index, content, page, section, location FROM document_chunks
               WHERE document_id = %s AND chunk_index >= %s ORDER BY chunk_index LIMIT %s""",
            (document_id, offset, limit),
        )
    ).fetchall()
    total = await (
        await conn.execute("SELECT count(*) AS n FROM document_chunks WHERE document_id = %s", (document_id,))
    ).fetchone()
    return rows, int(total["n"]) if total else 0


async def chunk_ordinal(conn: Conn, document_id: UUID, chunk_id: int) -> int | None:
    """The place of chunk `chunk_id` in its document (None when it is not one of that document's)."""
    row = await (
        await conn.execute(
            "SELECT chunk_index FROM document_chunks WHERE id = %s AND document_id = %s", (chunk_id, document_id)
        )
    ).fetchone()
    return None if row is None else int(row["chunk_index"])
