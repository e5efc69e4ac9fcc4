"""The chunk store: a document's chunks and their vectors, replaced in one transaction when the document
becomes ready, and read back page by page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import numpy as np
from psycopg import sql
from psycopg.types.json import Jsonb

from ragchat.db.pool import Conn
from ragchat.documents.catalog.repository import READABLE, jsonb
from ragchat.documents.catalog.shared import DetectedLanguage, LeaseLost
from ragchat.vectors.store import Space, VectorRow, insert_vectors, still_active


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
    language: DetectedLanguage | None = None,
) -> None:
    """Replace the document's chunks and their vectors (in `space`, which must still be the active one) and
    flip it to ready, in the caller's transaction. With `worker_id`, only while that worker holds the lease
    (the row stays locked until commit, so a cancel or delete waits; otherwise LeaseLost). `language`: the
    text-search configuration its chunks are analysed with (None: 'english', as before issue 42)."""
    config = language.config if language is not None else "english"
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
    if not await still_active(conn, space):
        raise SpaceChanged(f"embedding space {space.id} is no longer active")
    await conn.execute("DELETE FROM document_chunks WHERE document_id = %s", (document_id,))
    async with conn.cursor().copy(
        """COPY document_chunks (document_id, owner_id, chunk_index, title, content, page, section,
                                 token_count, content_hash, location, text_search_config) FROM STDIN"""
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
                    config,
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
        """UPDATE documents SET status = 'ready', error = NULL,
               title = CASE WHEN jsonb_typeof(metadata->'title') = 'string' THEN metadata->>'title' ELSE %s END,
               chunks_total = %s, chunks_done = %s,
               page_count = %s, metadata = %s || metadata, locked_at = NULL, lease_until = NULL,
               worker_id = NULL, updated_at = now(), chunking = coalesce(%s, chunking),
               language = %s, text_search_config = %s
           WHERE id = %s""",
        (
            title,
            len(chunks),
            len(chunks),
            page_count,
            Jsonb(metadata),
            jsonb(chunking),
            language.language if language is not None else None,
            config,
            document_id,
        ),
    )
    if replaces_source:
        await conn.execute(
            """DELETE FROM documents WHERE owner_id = %s AND metadata->>'source_path' = %s AND id <> %s""",
            (owner, replaces_source, document_id),
        )


async def read_chunks(
    conn: Conn, reader: UUID, document_id: UUID, *, start: int, end: int | None, page: int | None, limit: int
) -> list[dict[str, Any]]:
    """Up to `limit` chunks with `start` <= chunk_index <= `end` (of one page when `page` is given), in order,
    of a document `reader` may read; [] when it is missing or not readable (`get_document` tells which)."""
    query = sql.SQL("""SELECT c.id, c.chunk_index, c.content, c.page, c.section, c.location FROM document_chunks c
        JOIN documents d ON d.id = c.document_id
        WHERE d.id = %(id)s AND {} AND c.chunk_index >= %(start)s
          AND (%(end)s::integer IS NULL OR c.chunk_index <= %(end)s::integer)
          AND (%(page)s::integer IS NULL OR c.page = %(page)s::integer)
        ORDER BY c.chunk_index LIMIT %(limit)s""").format(READABLE)
    params = {"uid": reader, "id": document_id, "start": start, "end": end, "page": page, "limit": limit}
    return await (await conn.execute(query, params)).fetchall()
