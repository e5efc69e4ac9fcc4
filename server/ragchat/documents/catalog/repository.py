"""SQL for documents, their blobs and chunks. Every query takes bound parameters and an owner or a reader."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import numpy as np
from psycopg.types.json import Jsonb

from ragchat.db.access import SHARED_DOCUMENTS
from ragchat.db.pool import Conn
from ragchat.vectors.store import Space, VectorRow, insert_vectors

DOCUMENT_COLUMNS = """id, owner_id, filename, title, content_type, byte_size, sha256, status, chunks_total,
    chunks_done, page_count, error, metadata, created_at, updated_at, attempts, locked_at, progress_started_at,
    not_before, metadata_status, metadata_error, chunking"""


@dataclass(frozen=True)
class NewDocument:
    filename: str
    title: str
    content_type: str
    sha256: str
    data: bytes
    metadata: dict[str, Any]


@dataclass(frozen=True)
class StoredChunk:
    chunk_index: int
    content: str
    page: int | None
    section: str | None
    token_count: int
    content_hash: str
    embedding: np.ndarray
    location: dict[str, Any] | None = None  # where in the file: time span, sheet rows, slide, chapter


class SpaceChanged(Exception):
    """The embedding space switched while this document was being embedded: embed it again."""


async def insert_document(conn: Conn, owner: UUID, doc: NewDocument) -> tuple[UUID, bool, str]:
    """Insert a queued document with its bytes. Returns (id, created, status); an existing sha256 is reused."""
    row = await (
        await conn.execute(
            """INSERT INTO documents (owner_id, filename, title, content_type, byte_size, sha256, metadata)
               VALUES (%s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (owner_id, sha256) DO NOTHING
               RETURNING id, status""",
            (owner, doc.filename, doc.title, doc.content_type, len(doc.data), doc.sha256, Jsonb(doc.metadata)),
        )
    ).fetchone()
    if row is not None:
        await conn.execute("INSERT INTO document_blobs (document_id, data) VALUES (%s, %s)", (row["id"], doc.data))
        return row["id"], True, row["status"]
    existing = await (
        await conn.execute("SELECT id, status FROM documents WHERE owner_id = %s AND sha256 = %s", (owner, doc.sha256))
    ).fetchone()
    assert existing is not None
    return existing["id"], False, existing["status"]


async def requeue_failed(conn: Conn, owner: UUID, document_id: UUID) -> bool:
    """Queue a failed document of `owner` again, with a fresh count of attempts."""
    cur = await conn.execute(
        """UPDATE documents SET status = 'queued', error = NULL, chunks_done = 0, attempts = 0, lease_until = NULL,
               worker_id = NULL, not_before = NULL, progress_started_at = NULL, updated_at = now()
           WHERE id = %s AND owner_id = %s AND status = 'failed'""",
        (document_id, owner),
    )
    return cur.rowcount == 1


async def retry(conn: Conn, owner: UUID, document_id: UUID) -> bool:
    """Queue again a failed document, or a stuck one (processing with its lease run out); attempts start over."""
    cur = await conn.execute(
        """UPDATE documents SET status = 'queued', error = NULL, chunks_done = 0, attempts = 0, lease_until = NULL,
               worker_id = NULL, not_before = NULL, progress_started_at = NULL, updated_at = now()
           WHERE id = %s AND owner_id = %s
             AND (status = 'failed' OR (status = 'processing' AND coalesce(lease_until, locked_at) < now()))""",
        (document_id, owner),
    )
    return cur.rowcount == 1


async def cancel(conn: Conn, owner: UUID, document_id: UUID) -> bool:
    """Stop a queued or processing document: failed with the error "cancelled" (the worker holding it notices
    its lease is gone and drops its work)."""
    cur = await conn.execute(
        """UPDATE documents SET status = 'failed', error = 'cancelled', lease_until = NULL, worker_id = NULL,
               updated_at = now()
           WHERE id = %s AND owner_id = %s AND status IN ('queued', 'processing')""",
        (document_id, owner),
    )
    return cur.rowcount == 1


def _jsonb(value: dict[str, Any] | None) -> Jsonb | None:
    return None if value is None else Jsonb(value)


async def set_chunking(conn: Conn, owner: UUID, document_ids: Sequence[UUID], chunking: dict[str, Any]) -> None:
    """The chunking asked for (`{"requested", "tokens"}`) on `owner`'s documents still queued (just registered)."""
    await conn.execute(
        "UPDATE documents SET chunking = %s WHERE id = ANY(%s::uuid[]) AND owner_id = %s AND status = 'queued'",
        (Jsonb(chunking), list(document_ids), owner),
    )


async def rechunk(conn: Conn, document_id: UUID, chunking: dict[str, Any]) -> bool:
    """Queue a ready or failed document again to be chunked as `chunking` asks (its stored bytes are parsed
    again; its current chunks stay searchable until the new ones replace them). The caller checked access."""
    cur = await conn.execute(
        """UPDATE documents SET status = 'queued', chunking = %s, error = NULL, chunks_done = 0, attempts = 0,
               lease_until = NULL, worker_id = NULL, not_before = NULL, progress_started_at = NULL, updated_at = now()
           WHERE id = %s AND status IN ('ready', 'failed')
             AND EXISTS (SELECT 1 FROM document_blobs b WHERE b.document_id = documents.id)""",
        (Jsonb(chunking), document_id),
    )
    return cur.rowcount == 1


async def give_up_expired(conn: Conn, *, max_attempts: int) -> int:
    """Fail documents whose lease ran out on their last allowed attempt (the worker died each time), with
    the last error they had; returns how many."""
    cur = await conn.execute(
        """UPDATE documents SET status = 'failed', lease_until = NULL, worker_id = NULL, updated_at = now(),
               error = left('gave up after ' || attempts || ' attempts: ' || coalesce(error,
                   'the worker processing it stopped (crashed or was killed) before it finished'), 2000)
           WHERE status = 'processing' AND lease_until < now() AND attempts >= %s""",
        (max_attempts,),
    )
    return cur.rowcount


_DUE = "(not_before IS NULL OR not_before <= now())"  # a requeued document waits out its backoff


async def next_due(conn: Conn, ids: Sequence[UUID] | None = None) -> float | None:
    """Seconds until the first queued document (of `ids`) is due again after a backoff; None if none waits."""
    row = await (
        await conn.execute(
            """SELECT extract(epoch FROM min(not_before) - now())::float8 AS wait FROM documents
               WHERE status = 'queued' AND not_before IS NOT NULL AND (%s::uuid[] IS NULL OR id = ANY(%s::uuid[]))""",
            (None if ids is None else list(ids), None if ids is None else list(ids)),
        )
    ).fetchone()
    return None if row is None or row["wait"] is None else max(0.0, float(row["wait"]))


async def claim(
    conn: Conn,
    *,
    limit: int,
    ids: Sequence[UUID] | None = None,
    stale_after_s: int = 600,
    worker_id: str | None = None,
    lease_s: float = 60.0,
    inline: int | None = None,
) -> list[dict[str, Any]]:
    """Lease up to `limit` queued documents (or ones whose lease ran out: a crashed worker's) to `worker_id`
    for `lease_s` seconds. A processing row without a lease (from before leases) is stale after `stale_after_s`.
    Each row brings its file's bytes as `data`, only when they are at most `inline` bytes if that is given (the
    caller reads a bigger one with `blob` when it gets to it)."""
    # Two statements, so each can use its index: the primary key for an explicit id list (the CLI's own
    # documents), the partial queued index otherwise. A generic `ids IS NULL OR id = ANY(ids)` uses neither
    # and rescans the whole list for every queued row.
    if ids is None:
        where, params = f"status = 'queued' AND {_DUE}", []
    else:
        where, params = f"id = ANY(%s::uuid[]) AND status = 'queued' AND {_DUE}", [list(ids)]
    stale_where = """status = 'processing' AND (lease_until < now()
        OR (lease_until IS NULL AND locked_at < now() - make_interval(secs => %s)))"""
    stale_params: list[Any] = [stale_after_s]
    if ids is not None:
        stale_where += " AND id = ANY(%s::uuid[])"
        stale_params.append(list(ids))
    rows = await (
        await conn.execute(
            f"""WITH fresh AS (SELECT id, created_at FROM documents WHERE {where}
                               ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED),
                     stale AS (SELECT id, created_at FROM documents WHERE {stale_where}
                               ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED),
                     picked AS (SELECT id FROM (SELECT * FROM fresh UNION ALL SELECT * FROM stale) both_kinds
                                ORDER BY created_at LIMIT %s)
                UPDATE documents d SET status = 'processing', locked_at = now(), attempts = attempts + 1,
                       lease_until = now() + make_interval(secs => %s), worker_id = %s, updated_at = now(),
                       chunks_done = 0, chunks_total = NULL, progress_started_at = NULL, not_before = NULL
                FROM picked
                WHERE d.id = picked.id
                RETURNING d.id, d.owner_id, d.filename, d.title, d.content_type, d.metadata, d.created_at,
                          d.attempts, d.byte_size, d.chunking,
                          CASE WHEN %s::bigint IS NULL OR d.byte_size <= %s::bigint
                               THEN (SELECT data FROM document_blobs b WHERE b.document_id = d.id) END AS data""",
            (*params, limit, *stale_params, limit, limit, lease_s, worker_id, inline, inline),
        )
    ).fetchall()
    return sorted(rows, key=lambda r: r["created_at"])  # RETURNING has no order of its own


BLOB_SLICE = 8 << 20


async def blob(conn: Conn, document_id: UUID) -> bytes | None:
    """The file's bytes (None when they are gone), read in binary slices: a big file is never held as the hex
    text of the default result format (twice its size) nor twice at once."""
    row = await (
        await conn.execute("SELECT octet_length(data) AS n FROM document_blobs WHERE document_id = %s", (document_id,))
    ).fetchone()
    if row is None:
        return None
    out = bytearray(row["n"])
    for start in range(0, row["n"], BLOB_SLICE):
        piece = await (
            await conn.execute(
                "SELECT substring(data FROM %s FOR %s) AS piece FROM document_blobs WHERE document_id = %s",
                (start + 1, BLOB_SLICE, document_id),
                binary=True,
            )
        ).fetchone()
        if piece is None:  # deleted meanwhile
            return None
        out[start : start + len(piece["piece"])] = piece["piece"]
    return bytes(out)


async def renew_leases(conn: Conn, worker_id: str, lease_s: float) -> set[UUID]:
    """The heartbeat: extend every lease `worker_id` holds; returns the documents it still holds (one that was
    cancelled, deleted or taken over is missing)."""
    rows = await (
        await conn.execute(
            """UPDATE documents SET lease_until = now() + make_interval(secs => %s)
               WHERE worker_id = %s AND status = 'processing' RETURNING id""",
            (lease_s, worker_id),
        )
    ).fetchall()
    return {r["id"] for r in rows}


async def held(conn: Conn, worker_id: str, document_ids: Sequence[UUID]) -> set[UUID]:
    """Which of `document_ids` `worker_id` still holds (not cancelled, deleted or reclaimed)."""
    rows = await (
        await conn.execute(
            "SELECT id FROM documents WHERE id = ANY(%s::uuid[]) AND worker_id = %s AND status = 'processing'",
            (list(document_ids), worker_id),
        )
    ).fetchall()
    return {r["id"] for r in rows}


async def set_progress(conn: Conn, done: dict[UUID, int], *, total: bool = False) -> None:
    """One statement for many documents: `done` chunks embedded so far (the first report starts the clock the
    ETA is measured by), or with `total=True` the chunk totals once parsed (chunks_done reset to 0)."""
    if not done:
        return
    column = (
        "chunks_total = p.n, chunks_done = 0"
        if total
        else ("chunks_done = p.n, progress_started_at = coalesce(d.progress_started_at, now())")
    )
    await conn.execute(
        f"""UPDATE documents d SET {column}, updated_at = now()
            FROM unnest(%s::uuid[], %s::int[]) AS p(id, n)
            WHERE d.id = p.id AND d.status = 'processing'""",
        (list(done), list(done.values())),
    )


async def mark_failed(
    conn: Conn,
    document_id: UUID,
    error: str,
    *,
    worker_id: str | None = None,
    retry_below: int = 0,
    backoff_s: float = 0.0,
    backoff_max_s: float = 300.0,
) -> str | None:
    """Record why processing failed: queued again while the attempts are under `retry_below` (not before
    `backoff_s` × 2^(attempts-1), at most `backoff_max_s`), else failed. With `worker_id`, only while that
    worker still holds the lease. Returns the new status (None: not held)."""
    holder = "AND worker_id = %s AND status = 'processing'" if worker_id is not None else ""
    params: list[Any] = [retry_below, retry_below, backoff_s, backoff_max_s, error[:2000], document_id]
    if worker_id is not None:
        params.append(worker_id)
    row = await (
        await conn.execute(
            f"""UPDATE documents SET status = CASE WHEN attempts < %s THEN 'queued' ELSE 'failed' END,
                   not_before = CASE WHEN attempts < %s
                       THEN now() + make_interval(secs => least(%s * 2 ^ greatest(attempts - 1, 0), %s)) END,
                   error = %s, locked_at = NULL, lease_until = NULL, worker_id = NULL, updated_at = now()
               WHERE id = %s {holder} RETURNING status""",
            params,
        )
    ).fetchone()
    return row["status"] if row else None


class LeaseLost(Exception):
    """The document was cancelled, deleted or taken over by another worker while this one worked on it."""


async def store_chunks(
    conn: Conn,
    *,
    document_id: UUID,
    owner: UUID,
    title: str,
    chunks: Sequence[StoredChunk],
    space: Space,
    page_count: int | None,
    metadata: dict[str, Any],
    replaces_source: str | None,
    worker_id: str | None = None,
    chunking: dict[str, Any] | None = None,
) -> None:
    """Replace the document's chunks and their vectors (in `space`, which must still be the active one) and
    flip it to ready, in the caller's transaction. With `worker_id`, only while that worker holds the lease
    (the row stays locked until commit, so a cancel or delete waits; otherwise LeaseLost)."""
    if worker_id is not None:
        mine = await (
            await conn.execute(
                """SELECT 1 FROM documents WHERE id = %s AND worker_id = %s AND status = 'processing'
                   FOR UPDATE""",
                (document_id, worker_id),
            )
        ).fetchone()
        if mine is None:
            raise LeaseLost(f"document {document_id} is no longer held by {worker_id}")
    state = await (
        await conn.execute("SELECT state FROM embedding_spaces WHERE id = %s FOR SHARE", (space.id,))
    ).fetchone()
    if state is None or state["state"] != "active":
        raise SpaceChanged(f"embedding space {space.id} is no longer active")
    await conn.execute("DELETE FROM document_chunks WHERE document_id = %s", (document_id,))
    async with conn.cursor().copy(
        """COPY document_chunks (document_id, owner_id, chunk_index, title, content, page, section,
                                 token_count, content_hash, location) FROM STDIN"""
    ) as copy:
        for c in chunks:
            await copy.write_row(
                (
                    document_id,
                    owner,
                    c.chunk_index,
                    title,
                    c.content,
                    c.page,
                    c.section,
                    c.token_count,
                    c.content_hash,
                    None if c.location is None else Jsonb(c.location),
                )
            )
    ids = await (
        await conn.execute("SELECT id, chunk_index FROM document_chunks WHERE document_id = %s", (document_id,))
    ).fetchall()
    by_index = {r["chunk_index"]: r["id"] for r in ids}
    await insert_vectors(
        conn,
        space,
        [VectorRow(by_index[c.chunk_index], document_id, owner, c.content_hash, c.embedding) for c in chunks],
    )
    await conn.execute(
        """UPDATE documents SET status = 'ready', error = NULL, title = %s, chunks_total = %s, chunks_done = %s,
               page_count = %s, metadata = %s || metadata, locked_at = NULL, lease_until = NULL,
               worker_id = NULL, updated_at = now(), chunking = coalesce(%s, chunking)
           WHERE id = %s""",
        (title, len(chunks), len(chunks), page_count, Jsonb(metadata), _jsonb(chunking), document_id),
    )
    if replaces_source:
        await conn.execute(
            """DELETE FROM documents WHERE owner_id = %s AND metadata->>'source_path' = %s AND id <> %s""",
            (owner, replaces_source, document_id),
        )


_READABLE = f"(d.owner_id = %(uid)s OR d.id IN ({SHARED_DOCUMENTS}))"
_SHARED_COLUMNS = """coalesce(u.username, u.name) AS owner_name,
    CASE WHEN d.owner_id = %(uid)s THEN 'owner'
         WHEN EXISTS (SELECT 1 FROM document_collections dc JOIN collection_members m
                      ON m.collection_id = dc.collection_id
                      WHERE dc.document_id = d.id AND m.user_id = %(uid)s AND m.role IN ('owner', 'write'))
         THEN 'write' ELSE 'read' END AS access,
    ARRAY(SELECT dc.collection_id FROM document_collections dc
          WHERE dc.document_id = d.id AND (d.owner_id = %(uid)s OR dc.collection_id IN
                (SELECT cm.collection_id FROM collection_members cm WHERE cm.user_id = %(uid)s))
          ORDER BY dc.created_at) AS collection_ids"""
_DOCUMENT_SELECT = f"""SELECT {", ".join("d." + c.strip() for c in DOCUMENT_COLUMNS.split(","))}, {_SHARED_COLUMNS}
    FROM documents d JOIN users u ON u.id = d.owner_id WHERE {_READABLE}"""


async def list_documents(conn: Conn, reader: UUID, collection_id: UUID | None = None) -> list[dict[str, Any]]:
    """What `reader` may read (their own and what collections share with them), newest first."""
    if collection_id is None:
        query = _DOCUMENT_SELECT + " ORDER BY d.created_at DESC"
    else:
        query = (
            _DOCUMENT_SELECT + " AND d.id IN (SELECT document_id FROM document_collections WHERE collection_id = "
            "%(cid)s) ORDER BY d.created_at DESC"
        )
    return await (await conn.execute(query, {"uid": reader, "cid": collection_id})).fetchall()  # type: ignore[arg-type]


async def get_document(conn: Conn, reader: UUID, document_id: UUID) -> dict[str, Any] | None:
    """The document if `reader` may read it; None for anything else (missing or not theirs: no difference)."""
    query = _DOCUMENT_SELECT + " AND d.id = %(id)s"
    return await (await conn.execute(query, {"uid": reader, "id": document_id})).fetchone()  # type: ignore[arg-type]


async def read_chunks(
    conn: Conn, reader: UUID, document_id: UUID, *, start: int, end: int | None, page: int | None, limit: int
) -> list[dict[str, Any]]:
    """Up to `limit` chunks with `start` <= chunk_index <= `end` (of one page when `page` is given), in order,
    of a document `reader` may read; [] when it is missing or not readable (`get_document` tells which)."""
    query = f"""SELECT c.chunk_index, c.content, c.page, c.section FROM document_chunks c
        JOIN documents d ON d.id = c.document_id
        WHERE d.id = %(id)s AND {_READABLE} AND c.chunk_index >= %(start)s
          AND (%(end)s::integer IS NULL OR c.chunk_index <= %(end)s::integer)
          AND (%(page)s::integer IS NULL OR c.page = %(page)s::integer)
        ORDER BY c.chunk_index LIMIT %(limit)s"""
    params = {"uid": reader, "id": document_id, "start": start, "end": end, "page": page, "limit": limit}
    return await (await conn.execute(query, params)).fetchall()  # type: ignore[arg-type]


async def delete_document(conn: Conn, owner: UUID, document_id: UUID) -> bool:
    """Only the owner deletes (a reader removes it from a collection instead)."""
    cur = await conn.execute("DELETE FROM documents WHERE owner_id = %s AND id = %s", (owner, document_id))
    return cur.rowcount == 1


async def add_to_collection(conn: Conn, user: UUID, document_id: UUID, collection_id: UUID) -> bool:
    """Put `user`'s own document into a collection they own or may write; False if either check fails."""
    owns = await (
        await conn.execute("SELECT 1 FROM documents WHERE id = %s AND owner_id = %s", (document_id, user))
    ).fetchone()
    if owns is None or not await can_write_collection(conn, user, collection_id):
        return False
    await conn.execute(
        """INSERT INTO document_collections (collection_id, document_id, added_by) VALUES (%s, %s, %s)
           ON CONFLICT DO NOTHING""",
        (collection_id, document_id, user),
    )
    return True


async def collection_role(conn: Conn, user: UUID, collection_id: UUID) -> str | None:
    """The user's role in the collection (owner, write, read), None when not a member."""
    row = await (
        await conn.execute(
            "SELECT role FROM collection_members WHERE collection_id = %s AND user_id = %s", (collection_id, user)
        )
    ).fetchone()
    return str(row["role"]) if row else None


async def can_write_collection(conn: Conn, user: UUID, collection_id: UUID) -> bool:
    row = await (
        await conn.execute(
            """SELECT 1 FROM collection_members WHERE collection_id = %s AND user_id = %s
               AND role IN ('owner', 'write')""",
            (collection_id, user),
        )
    ).fetchone()
    return row is not None
