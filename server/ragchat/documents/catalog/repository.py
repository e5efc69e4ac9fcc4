"""The catalog's SQL: documents (rows and blobs), what a reader may see, collection membership. Every
query takes bound parameters and an owner or a reader."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from ragchat.db.pool import Conn
from ragchat.readscope.sql import readable_shared

DOCUMENT_COLUMNS = """id, owner_id, filename, title, content_type, byte_size, sha256, status, chunks_total,
    chunks_done, page_count, error, metadata, created_at, updated_at, attempts, locked_at, progress_started_at,
    not_before, metadata_status, metadata_error, chunking, progress_note, language, text_search_config"""


@dataclass(frozen=True)
class NewDocument:
    filename: str
    title: str
    content_type: str
    sha256: str
    data: bytes
    metadata: dict[str, Any]


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


def jsonb(value: dict[str, Any] | None) -> Jsonb | None:
    return None if value is None else Jsonb(value)


async def set_chunking(conn: Conn, owner: UUID, document_ids: Sequence[UUID], chunking: dict[str, Any]) -> None:
    """The chunking asked for (`{"requested", "tokens"}`) on `owner`'s documents still queued (just registered)."""
    await conn.execute(
        "UPDATE documents SET chunking = %s WHERE id = ANY(%s::uuid[]) AND owner_id = %s AND status = 'queued'",
        (Jsonb(chunking), list(document_ids), owner),
    )


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


#: A document row `d` the reader `%(uid)s` may read (readscope/sql.py).
READABLE = readable_shared("d.owner_id", "d.id")


SHARED_COLUMNS = sql.SQL("""CASE WHEN d.owner_id = %(uid)s THEN 'owner'
         WHEN EXISTS (SELECT 1 FROM document_collections dc JOIN collection_members m
                      ON m.collection_id = dc.collection_id
                      WHERE dc.document_id = d.id AND m.user_id = %(uid)s AND m.role IN ('owner', 'write'))
         THEN 'write' ELSE 'read' END AS access,
    ARRAY(SELECT dc.collection_id FROM document_collections dc
          WHERE dc.document_id = d.id AND (d.owner_id = %(uid)s OR dc.collection_id IN
                (SELECT cm.collection_id FROM collection_members cm WHERE cm.user_id = %(uid)s))
          ORDER BY dc.created_at) AS collection_ids""")
#: A document row `d` as the reader `%(uid)s` sees it: its columns, their access and the collections they see.
DOCUMENT_FIELDS = sql.SQL("{}, {}").format(
    sql.SQL(", ").join(sql.Identifier("d", c.strip()) for c in DOCUMENT_COLUMNS.split(",")), SHARED_COLUMNS
)


_DOCUMENT_SELECT = sql.SQL("SELECT {} FROM documents d WHERE {}").format(DOCUMENT_FIELDS, READABLE)


async def list_documents(conn: Conn, reader: UUID, collection_id: UUID | None = None) -> list[dict[str, Any]]:
    """What `reader` may read (their own and what collections share with them), newest first."""
    if collection_id is None:
        query = _DOCUMENT_SELECT + sql.SQL(" ORDER BY d.created_at DESC")
    else:
        query = _DOCUMENT_SELECT + sql.SQL(
            " AND d.id IN (SELECT document_id FROM document_collections WHERE collection_id = "
            "%(cid)s) ORDER BY d.created_at DESC"
        )
    return await (await conn.execute(query, {"uid": reader, "cid": collection_id})).fetchall()


async def get_document(conn: Conn, reader: UUID, document_id: UUID) -> dict[str, Any] | None:
    """The document if `reader` may read it; None for anything else (missing or not theirs: no difference)."""
    query = _DOCUMENT_SELECT + sql.SQL(" AND d.id = %(id)s")
    return await (await conn.execute(query, {"uid": reader, "id": document_id})).fetchone()


async def count_by_owner(conn: Conn, owners: Collection[UUID]) -> dict[UUID, int]:
    """How many documents each of `owners` owns (those with none are left out)."""
    rows = await (
        await conn.execute(
            "SELECT owner_id, count(*) AS n FROM documents WHERE owner_id = ANY(%s) GROUP BY owner_id", (list(owners),)
        )
    ).fetchall()
    return {r["owner_id"]: int(r["n"]) for r in rows}


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


async def add_metadata(conn: Conn, owner: UUID, document_ids: Sequence[UUID], metadata: dict[str, Any]) -> None:
    """A person's keys (checked) added to `owner`'s documents (just registered: their upload's metadata)."""
    await conn.execute(
        "UPDATE documents SET metadata = metadata || %s WHERE id = ANY(%s::uuid[]) AND owner_id = %s",
        (Jsonb(metadata), list(document_ids), owner),
    )
