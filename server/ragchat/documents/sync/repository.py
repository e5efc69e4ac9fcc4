"""SQL for folder sync: synced folders (`sync_roots`), what each file was when last seen (`sync_files`), and
the documents a file's path owns (`metadata.source_path`, as `ragchat ingest` sets it)."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ragchat.db.pool import Conn

# The absolute path of a synced file, as stored in its documents' `metadata.source_path`.
_FILE_PATH = "rtrim(r.root_path, '/') || '/' || f.rel_path"


@dataclass(frozen=True)
class Tracked:
    """A file as the last sync saw it."""

    rel_path: str
    size: int
    mtime_ns: int
    sha256: str
    document_id: UUID | None


def source_path(root_path: str, rel_path: str) -> str:
    return posixpath.join(root_path, rel_path)


async def find_root(conn: Conn, owner: UUID, root_path: str) -> UUID | None:
    row = await (
        await conn.execute("SELECT id FROM sync_roots WHERE owner_id = %s AND root_path = %s", (owner, root_path))
    ).fetchone()
    return row["id"] if row else None


async def ensure_root(conn: Conn, owner: UUID, root_path: str) -> UUID:
    row = await (
        await conn.execute(
            """INSERT INTO sync_roots (owner_id, root_path) VALUES (%s, %s)
               ON CONFLICT (owner_id, root_path) DO UPDATE SET root_path = EXCLUDED.root_path
               RETURNING id""",
            (owner, root_path),
        )
    ).fetchone()
    assert row is not None
    return row["id"]


async def try_lock_root(conn: Conn, root_id: UUID) -> bool:
    """A session lock on the folder (one sync of it at a time); held by `conn` until `unlock_root`."""
    row = await (
        await conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0)) AS ok", (f"sync:{root_id}",))
    ).fetchone()
    return bool(row and row["ok"])


async def unlock_root(conn: Conn, root_id: UUID) -> None:
    await conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (f"sync:{root_id}",))


async def load_files(conn: Conn, root_id: UUID) -> dict[str, Tracked]:
    out: dict[str, Tracked] = {}
    cur = conn.cursor()
    async for r in cur.stream(
        "SELECT rel_path, size, mtime_ns, sha256, document_id FROM sync_files WHERE root_id = %s", (root_id,)
    ):
        out[r["rel_path"]] = Tracked(r["rel_path"], r["size"], r["mtime_ns"], r["sha256"], r["document_id"])
    return out


async def save_file(
    conn: Conn, root_id: UUID, rel_path: str, size: int, mtime_ns: int, sha256: str, document_id: UUID | None
) -> None:
    await conn.execute(
        """INSERT INTO sync_files (root_id, rel_path, size, mtime_ns, sha256, document_id)
           VALUES (%s, %s, %s, %s, %s, %s)
           ON CONFLICT (root_id, rel_path) DO UPDATE SET size = EXCLUDED.size, mtime_ns = EXCLUDED.mtime_ns,
               sha256 = EXCLUDED.sha256, document_id = EXCLUDED.document_id, synced_at = now()""",
        (root_id, rel_path, size, mtime_ns, sha256, document_id),
    )


async def move_file(conn: Conn, root_id: UUID, old: str, new: str, size: int, mtime_ns: int) -> None:
    await conn.execute(
        """UPDATE sync_files SET rel_path = %s, size = %s, mtime_ns = %s, synced_at = now()
           WHERE root_id = %s AND rel_path = %s""",
        (new, size, mtime_ns, root_id, old),
    )


async def delete_file(conn: Conn, root_id: UUID, rel_path: str) -> None:
    await conn.execute("DELETE FROM sync_files WHERE root_id = %s AND rel_path = %s", (root_id, rel_path))


async def move_documents(conn: Conn, owner: UUID, old_source: str, new_source: str) -> int:
    """A renamed file: its documents follow it (filename and source_path; chunks and vectors untouched)."""
    cur = await conn.execute(
        """UPDATE documents SET filename = %s, metadata = metadata || %s, updated_at = now()
           WHERE owner_id = %s AND metadata @> %s""",
        (posixpath.basename(new_source), Jsonb({"source_path": new_source}), owner, _source(old_source)),
    )
    return cur.rowcount


async def _documents_of(conn: Conn, owner: UUID, source: str, keep: UUID | None) -> list[UUID]:
    rows = await (
        await conn.execute(
            "SELECT id FROM documents WHERE owner_id = %s AND metadata @> %s AND id IS DISTINCT FROM %s",
            (owner, _source(source), keep),
        )
    ).fetchall()
    return [r["id"] for r in rows]


async def _synced_path_of(conn: Conn, document_id: UUID) -> str | None:
    """The path of a synced file whose content this document holds (the first, by path), if any."""
    row = await (
        await conn.execute(
            f"""SELECT {_FILE_PATH} AS path FROM sync_files f JOIN sync_roots r ON r.id = f.root_id
                WHERE f.document_id = %s ORDER BY 1 LIMIT 1""",
            (document_id,),
        )
    ).fetchone()
    return row["path"] if row else None


async def release_path(conn: Conn, owner: UUID, source: str, *, keep: UUID | None, delete: bool) -> int:
    """The documents `source` owns, other than `keep`: one that another synced file (an identical copy) still
    holds is handed over to that file's path; the rest are deleted when `delete`. Returns how many were."""
    deleted = 0
    for doc_id in await _documents_of(conn, owner, source, keep):
        other = await _synced_path_of(conn, doc_id)
        if other is not None:
            await conn.execute(
                "UPDATE documents SET filename = %s, metadata = metadata || %s, updated_at = now() WHERE id = %s",
                (posixpath.basename(other), Jsonb({"source_path": other}), doc_id),
            )
        elif delete:
            await conn.execute("DELETE FROM documents WHERE id = %s AND owner_id = %s", (doc_id, owner))
            deleted += 1
    return deleted


async def adopt(conn: Conn, owner: UUID, document_id: UUID, root_id: UUID, root_path: str, source: str) -> bool:
    """A file whose content an existing document holds takes that document over when it came from another
    path of this folder that no longer holds it (content moved between files): so the ingestion of that
    path's new content, which replaces what the path owns, leaves it alone."""
    prefix = root_path.rstrip("/") + "/"
    cur = await conn.execute(
        """UPDATE documents d SET filename = %(name)s, metadata = d.metadata || %(meta)s, updated_at = now()
           WHERE d.id = %(id)s AND d.owner_id = %(owner)s AND d.metadata->>'source_path' <> %(source)s
             AND starts_with(d.metadata->>'source_path', %(prefix)s)
             AND NOT EXISTS (SELECT 1 FROM sync_files f WHERE f.root_id = %(root)s AND f.document_id = d.id
                             AND f.rel_path = substr(d.metadata->>'source_path', length(%(prefix)s) + 1))""",
        {
            "name": posixpath.basename(source),
            "meta": Jsonb({"source_path": source}),
            "id": document_id,
            "owner": owner,
            "source": source,
            "prefix": prefix,
            "root": root_id,
        },
    )
    return cur.rowcount == 1


async def drop_replaced(conn: Conn, owner: UUID, source: str, current: UUID) -> int:
    """Once `current` (a changed file's new content) is ready, delete the older versions `source` still owns
    (the ingestion replaces them itself when it stores a new document; not when the new content was already
    in the library). Returns how many were deleted."""
    cur = await conn.execute(
        """DELETE FROM documents d WHERE d.owner_id = %s AND d.metadata @> %s AND d.id <> %s
             AND EXISTS (SELECT 1 FROM documents c WHERE c.id = %s AND c.status = 'ready')
             AND NOT EXISTS (SELECT 1 FROM sync_files f WHERE f.document_id = d.id)""",
        (owner, _source(source), current, current),
    )
    return cur.rowcount


async def pending_documents(conn: Conn, root_id: UUID) -> list[UUID]:
    """The folder's documents still queued or processing (registered by an earlier, interrupted run too)."""
    rows = await (
        await conn.execute(
            """SELECT DISTINCT d.id FROM sync_files f JOIN documents d ON d.id = f.document_id
               WHERE f.root_id = %s AND d.status IN ('queued', 'processing')""",
            (root_id,),
        )
    ).fetchall()
    return [r["id"] for r in rows]


async def outcomes(conn: Conn, document_ids: Sequence[UUID]) -> dict[UUID, dict[str, Any]]:
    rows = await (
        await conn.execute("SELECT id, status, error FROM documents WHERE id = ANY(%s::uuid[])", (list(document_ids),))
    ).fetchall()
    return {r["id"]: r for r in rows}


async def failed_files(conn: Conn, root_id: UUID, limit: int) -> tuple[int, list[tuple[str, str]]]:
    """How many of the folder's files have a failed document, and the first `limit` of them with the error."""
    rows = await (
        await conn.execute(
            """SELECT f.rel_path, d.error, count(*) OVER () AS n FROM sync_files f
               JOIN documents d ON d.id = f.document_id
               WHERE f.root_id = %s AND d.status = 'failed' ORDER BY f.rel_path LIMIT %s""",
            (root_id, limit),
        )
    ).fetchall()
    return (rows[0]["n"] if rows else 0), [(r["rel_path"], r["error"] or "") for r in rows]


async def mark_scanned(conn: Conn, root_id: UUID) -> None:
    await conn.execute("UPDATE sync_roots SET last_scan_at = now() WHERE id = %s", (root_id,))


def _source(path: str) -> Jsonb:
    return Jsonb({"source_path": path})
