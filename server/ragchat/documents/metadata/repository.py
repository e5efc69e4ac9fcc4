"""SQL for document metadata: a person's edits, and the extraction queue (documents.metadata_status)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from ragchat.db.pool import Conn
from ragchat.documents.catalog.shared import BEIR_RECORD_TYPE  # a corpus record: no extraction (thousands of them)
from ragchat.documents.metadata.fields import merge_extracted


async def lock_metadata(conn: Conn, document_id: UUID) -> dict[str, Any] | None:
    """The document's metadata, locked until the transaction ends (an edit and an extraction never cross)."""
    return await (
        await conn.execute(
            "SELECT metadata, metadata_extracted FROM documents WHERE id = %s FOR UPDATE", (document_id,)
        )
    ).fetchone()


async def write_metadata(conn: Conn, document_id: UUID, metadata: dict[str, Any]) -> None:
    await conn.execute(
        "UPDATE documents SET metadata = %s, updated_at = now() WHERE id = %s", (Jsonb(metadata), document_id)
    )


async def write_title(conn: Conn, document_id: UUID, title: str) -> None:
    """A person's title for the document (its file name stays as uploaded)."""
    await conn.execute("UPDATE documents SET title = %s, updated_at = now() WHERE id = %s", (title, document_id))


async def mark_pending(conn: Conn, document_ids: Sequence[UUID]) -> list[UUID]:
    """Queue these documents for extraction (not BEIR records; one running stays running); returns those queued."""
    rows = await (
        await conn.execute(
            """UPDATE documents SET metadata_status = 'pending', metadata_error = NULL, metadata_claimed_at = NULL
               WHERE id = ANY(%s::uuid[]) AND content_type <> %s AND metadata_status IS DISTINCT FROM 'running'
               RETURNING id""",
            (list(document_ids), BEIR_RECORD_TYPE),
        )
    ).fetchall()
    return [r["id"] for r in rows]


async def owned_ids(conn: Conn, owner: UUID) -> list[UUID]:
    """Every document of `owner` that may be extracted (`POST /api/documents/extract-metadata`)."""
    rows = await (
        await conn.execute(
            "SELECT id FROM documents WHERE owner_id = %s AND content_type <> %s", (owner, BEIR_RECORD_TYPE)
        )
    ).fetchall()
    return [r["id"] for r in rows]


async def claim(
    conn: Conn, *, ids: Sequence[UUID] | None, stale_after_s: float, new_ones: bool, chose_otherwise: list[UUID]
) -> dict[str, Any] | None:
    """Take a ready document for extraction, marked running: one asked for (pending) or whose extractor
    vanished (running for longer than `stale_after_s`), oldest request first; else, with `new_ones`
    (METADATA_EXTRACTION on, unless the owner turned it off; or off, when the owner turned it on: the owners in
    `chose_otherwise`), the newest never extracted (not a BEIR record). None when there is none."""
    params = {"stale": stale_after_s, "ids": None if ids is None else list(ids), "beir": BEIR_RECORD_TYPE}
    picks: list[sql.Composable] = [
        sql.SQL("""SELECT id FROM documents
           WHERE metadata_status IN ('pending', 'running') AND status = 'ready'
             AND (metadata_status = 'pending' OR metadata_claimed_at < now() - make_interval(secs => %(stale)s))
             AND (%(ids)s::uuid[] IS NULL OR id = ANY(%(ids)s::uuid[]))
           ORDER BY metadata_claimed_at NULLS FIRST, created_at
           LIMIT 1 FOR UPDATE SKIP LOCKED""")
    ]
    # an owner's Settings page overrides METADATA_EXTRACTION for their documents: with it on, those who turned
    # it off are left out; with it off, those who turned it on are taken
    params["owners"] = chose_otherwise
    if new_ones or params["owners"]:
        owners = "NOT (owner_id = ANY(%(owners)s::uuid[]))" if new_ones else "owner_id = ANY(%(owners)s::uuid[])"
        picks.append(
            sql.SQL("""SELECT id FROM documents
               WHERE metadata_status IS NULL AND status = 'ready' AND content_type <> %(beir)s
                 AND (%(ids)s::uuid[] IS NULL OR id = ANY(%(ids)s::uuid[])) AND {owners}
               ORDER BY created_at DESC
               LIMIT 1 FOR UPDATE SKIP LOCKED""").format(owners=sql.SQL(owners))
        )
    for pick in picks:
        row = await (
            await conn.execute(
                sql.SQL("""UPDATE documents d SET metadata_status = 'running', metadata_claimed_at = now()
                    WHERE d.id = ({}) RETURNING d.id, d.filename, d.title""").format(pick),
                params,
            )
        ).fetchone()
        if row is not None:
            return row
    return None


async def leading_text(conn: Conn, document_id: UUID, chars: int) -> str:
    """The document's first `chars` characters, from its first chunks in order."""
    rows = await (
        await conn.execute(
            "SELECT content FROM document_chunks WHERE document_id = %s ORDER BY chunk_index LIMIT 64", (document_id,)
        )
    ).fetchall()
    text, total = [], 0
    for row in rows:
        text.append(row["content"])
        total += len(row["content"]) + 2
        if total >= chars:
            break
    return "\n\n".join(text)[:chars]


async def store_extraction(conn: Conn, document_id: UUID, extracted: dict[str, Any]) -> bool:
    """Merge an extraction into the document's metadata (never over a person's keys) and mark it done;
    False when the document is gone."""
    row = await lock_metadata(conn, document_id)
    if row is None:
        return False
    merged = merge_extracted(row["metadata"] or {}, row["metadata_extracted"] or {}, extracted)
    await conn.execute(
        """UPDATE documents SET metadata = %s, metadata_extracted = %s, metadata_status = 'done',
               metadata_error = NULL, metadata_claimed_at = NULL, updated_at = now()
           WHERE id = %s""",
        (Jsonb(merged), Jsonb(extracted), document_id),
    )
    return True


async def fail_extraction(conn: Conn, document_id: UUID, reason: str) -> None:
    await conn.execute(
        """UPDATE documents SET metadata_status = 'failed', metadata_error = left(%s, 1000),
               metadata_claimed_at = NULL, updated_at = now()
           WHERE id = %s""",
        (reason, document_id),
    )
