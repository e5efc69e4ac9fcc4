"""SQL for chat threads and messages. Every function takes a connection; callers own transactions."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from server.db.pool import Conn

_THREAD_COLUMNS = "id, title, created_at, updated_at"
_MESSAGE_COLUMNS = "id, role, content, status, tool_calls, tool_results, error, citations, created_at"


async def relax_commit(conn: Conn) -> None:
    """Commit this transaction without waiting for the WAL flush (~3 ms per commit on a laptop disk).

    A chat turn writes twice on the path the user waits on (before the first token and before `done`).
    Atomicity is unchanged; a Postgres crash could lose the last fraction of a second of chat messages.
    """
    await conn.execute("SET LOCAL synchronous_commit = off")


async def list_threads(conn: Conn, owner: UUID) -> list[dict[str, Any]]:
    """The owner's threads, most recently active first."""
    cur = await conn.execute(
        f"SELECT {_THREAD_COLUMNS} FROM threads WHERE owner_id = %s ORDER BY updated_at DESC, created_at DESC",
        (owner,),
    )
    return list(await cur.fetchall())


async def get_thread(conn: Conn, owner: UUID, thread_id: UUID, *, for_update: bool = False) -> dict[str, Any] | None:
    lock = " FOR UPDATE" if for_update else ""
    cur = await conn.execute(
        f"SELECT {_THREAD_COLUMNS} FROM threads WHERE id = %s AND owner_id = %s{lock}", (thread_id, owner)
    )
    return await cur.fetchone()


async def create_thread(conn: Conn, owner: UUID, title: str) -> dict[str, Any]:
    cur = await conn.execute(
        f"INSERT INTO threads (owner_id, title) VALUES (%s, %s) RETURNING {_THREAD_COLUMNS}", (owner, title)
    )
    row = await cur.fetchone()
    assert row is not None
    return row


async def rename_thread(conn: Conn, owner: UUID, thread_id: UUID, title: str) -> dict[str, Any] | None:
    cur = await conn.execute(
        f"""UPDATE threads SET title = %s, updated_at = now() WHERE id = %s AND owner_id = %s
            RETURNING {_THREAD_COLUMNS}""",
        (title, thread_id, owner),
    )
    return await cur.fetchone()


async def touch_thread(conn: Conn, thread_id: UUID) -> None:
    await conn.execute("UPDATE threads SET updated_at = now() WHERE id = %s", (thread_id,))


async def delete_thread(conn: Conn, owner: UUID, thread_id: UUID) -> bool:
    cur = await conn.execute("DELETE FROM threads WHERE id = %s AND owner_id = %s", (thread_id, owner))
    return cur.rowcount > 0


async def list_messages(conn: Conn, owner: UUID, thread_id: UUID) -> list[dict[str, Any]]:
    cur = await conn.execute(
        f"""SELECT {_MESSAGE_COLUMNS} FROM messages WHERE thread_id = %s AND owner_id = %s
            ORDER BY created_at, id""",
        (thread_id, owner),
    )
    return list(await cur.fetchall())


async def recent_messages(conn: Conn, thread_id: UUID, limit: int) -> list[dict[str, Any]]:
    """The last `limit` messages of a thread, oldest first (for the model's history)."""
    if limit <= 0:
        return []
    cur = await conn.execute(
        """SELECT role, content, status FROM messages WHERE thread_id = %s
           ORDER BY created_at DESC, id DESC LIMIT %s""",
        (thread_id, limit),
    )
    rows = list(await cur.fetchall())
    rows.reverse()
    return rows


async def insert_message(
    conn: Conn,
    *,
    message_id: UUID,
    thread_id: UUID,
    owner: UUID,
    role: str,
    content: str,
    status: str = "complete",
    tool_calls: list[dict[str, Any]] | None = None,
    tool_results: list[dict[str, Any]] | None = None,
    error: dict[str, Any] | None = None,
    usage: dict[str, Any] | None = None,
    citations: dict[str, Any] | None = None,
) -> None:
    await conn.execute(
        """INSERT INTO messages
               (id, thread_id, owner_id, role, content, status, tool_calls, tool_results, error, usage, citations)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
        (
            message_id,
            thread_id,
            owner,
            role,
            content,
            status,
            Jsonb(tool_calls or []),
            Jsonb(tool_results or []),
            None if error is None else Jsonb(error),
            None if usage is None else Jsonb(usage),
            None if citations is None else Jsonb(citations),
        ),
    )
