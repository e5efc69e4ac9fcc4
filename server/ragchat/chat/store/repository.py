"""SQL for chat threads and messages. Every function takes a connection; callers own transactions."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ragchat.db.pool import Conn

_THREAD_COLUMNS = "id, title, created_at, updated_at, settings"
_MESSAGE_COLUMNS = (
    "id, role, content, status, tool_calls, tool_results, error, citations, created_at, parent_id, model, usage"
)
# the user's rating of the message (message_feedback, migration 0016): the subquery's table has no `id` column,
# so `id` is the outer row's, whichever table or CTE the columns are read from
_MESSAGE_COLUMNS += (
    ", (SELECT jsonb_build_object('message_id', f.message_id, 'rating', f.rating, 'note', f.note,"
    " 'updated_at', f.updated_at) FROM message_feedback f WHERE f.message_id = id) AS feedback"
)
STALE_S = 30  # a 'streaming' row whose heartbeat is older than this belongs to a dead process
STOP_REQUESTED = {"code": "stop_requested", "message": "Stopping."}  # on a 'streaming' row: see request_stop
INTERRUPTED = {"code": "interrupted", "message": "The server stopped while answering: this answer is incomplete."}


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
        f"""UPDATE threads SET title = %s WHERE id = %s AND owner_id = %s
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
    """The thread's active branch, first question first (every message on the path to the active leaf)."""
    leaf = await active_leaf(conn, thread_id)
    return [] if leaf is None else await path_to(conn, owner, leaf)


async def active_leaf(conn: Conn, thread_id: UUID) -> UUID | None:
    """The last message of the branch the thread shows: the one chosen, else the newest message."""
    cur = await conn.execute(
        """SELECT COALESCE(t.active_leaf_id,
                  (SELECT id FROM messages WHERE thread_id = t.id ORDER BY created_at DESC, id DESC LIMIT 1)) AS id
           FROM threads t WHERE t.id = %s""",
        (thread_id,),
    )
    row = await cur.fetchone()
    return None if row is None else row["id"]


async def path_to(conn: Conn, owner: UUID, leaf: UUID, limit: int = 100_000) -> list[dict[str, Any]]:
    """The messages from the thread's first question down to `leaf` (at most the last `limit`), in order."""
    cur = await conn.execute(
        f"""WITH RECURSIVE path AS (
                SELECT m.*, 0 AS depth FROM messages m WHERE m.id = %s AND m.owner_id = %s
                UNION ALL
                SELECT m.*, path.depth + 1 FROM messages m JOIN path ON m.id = path.parent_id
                WHERE path.depth < %s
            )
            SELECT {_MESSAGE_COLUMNS} FROM path ORDER BY depth DESC""",
        (leaf, owner, limit - 1),
    )
    return list(await cur.fetchall())


async def siblings(conn: Conn, thread_id: UUID) -> dict[UUID | None, list[UUID]]:
    """Message ids by parent id (None: the thread's first questions), in creation order."""
    cur = await conn.execute(
        "SELECT id, parent_id FROM messages WHERE thread_id = %s ORDER BY created_at, id", (thread_id,)
    )
    out: dict[UUID | None, list[UUID]] = {}
    for row in await cur.fetchall():
        out.setdefault(row["parent_id"], []).append(row["id"])
    return out


async def get_message(conn: Conn, owner: UUID, message_id: UUID) -> dict[str, Any] | None:
    cur = await conn.execute(
        f"SELECT {_MESSAGE_COLUMNS}, thread_id FROM messages WHERE id = %s AND owner_id = %s", (message_id, owner)
    )
    return await cur.fetchone()


async def newest_leaf_under(conn: Conn, message_id: UUID) -> UUID:
    """The newest message without replies among `message_id` and its descendants."""
    cur = await conn.execute(
        """WITH RECURSIVE below AS (
               SELECT id, created_at FROM messages WHERE id = %s
               UNION ALL
               SELECT m.id, m.created_at FROM messages m JOIN below ON m.parent_id = below.id
           )
           SELECT id FROM below b WHERE NOT EXISTS (SELECT 1 FROM messages c WHERE c.parent_id = b.id)
           ORDER BY created_at DESC, id DESC LIMIT 1""",
        (message_id,),
    )
    row = await cur.fetchone()
    return message_id if row is None else row["id"]


async def set_active_leaf(conn: Conn, thread_id: UUID, leaf: UUID) -> None:
    await conn.execute("UPDATE threads SET active_leaf_id = %s WHERE id = %s", (leaf, thread_id))


async def running_message(conn: Conn, thread_id: UUID) -> UUID | None:
    """The thread's answer in progress (a 'streaming' row with a fresh heartbeat); stale ones are expired."""
    await expire_stale(conn, thread_id)
    cur = await conn.execute(
        "SELECT id FROM messages WHERE thread_id = %s AND status = 'streaming' ORDER BY created_at DESC LIMIT 1",
        (thread_id,),
    )
    row = await cur.fetchone()
    return None if row is None else row["id"]


async def expire_stale(conn: Conn, thread_id: UUID | None = None, stale_s: float = STALE_S) -> int:
    """'streaming' rows without a heartbeat for `stale_s` become 'incomplete' ("interrupted"); how many."""
    where = "" if thread_id is None else " AND thread_id = %(thread)s"
    cur = await conn.execute(
        f"""UPDATE messages SET status = 'incomplete', error = %(error)s, heartbeat_at = NULL
            WHERE status = 'streaming' AND heartbeat_at < now() - make_interval(secs => %(stale)s){where}""",
        {"error": Jsonb(INTERRUPTED), "stale": stale_s, "thread": thread_id},
    )
    return cur.rowcount


async def heartbeat(conn: Conn, message_id: UUID, content: str) -> bool:
    """The running answer is alive; its text so far is kept, for a crash. True when another process asked
    to stop it (`request_stop`)."""
    cur = await conn.execute(
        """UPDATE messages SET heartbeat_at = now(), content = %s WHERE id = %s AND status = 'streaming'
           RETURNING error ->> 'code' = %s AS stop""",
        (content, message_id, STOP_REQUESTED["code"]),
    )
    row = await cur.fetchone()
    return bool(row and row["stop"])


async def request_stop(conn: Conn, thread_id: UUID) -> bool:
    """Ask the process generating the thread's answer to stop it (seen at its next heartbeat); False: none."""
    cur = await conn.execute(
        "UPDATE messages SET error = %s WHERE thread_id = %s AND status = 'streaming' RETURNING id",
        (Jsonb(STOP_REQUESTED), thread_id),
    )
    return await cur.fetchone() is not None


async def restart_message(conn: Conn, message_id: UUID) -> None:
    """An answer being continued is 'streaming' again."""
    await conn.execute(
        "UPDATE messages SET status = 'streaming', error = NULL, heartbeat_at = now() WHERE id = %s", (message_id,)
    )


async def finish_message(
    conn: Conn,
    message_id: UUID,
    *,
    content: str,
    status: str,
    tool_calls: list[dict[str, Any]],
    tool_results: list[dict[str, Any]],
    error: dict[str, Any] | None,
    usage: dict[str, Any] | None,
    citations: dict[str, Any] | None,
) -> None:
    """The answer's final state (also over a row expired meanwhile: the whole answer beats "interrupted")."""
    await conn.execute(
        """UPDATE messages SET content = %s, status = %s, tool_calls = %s, tool_results = %s, error = %s,
                  usage = %s, citations = %s, heartbeat_at = NULL
           WHERE id = %s""",
        (
            content,
            status,
            Jsonb(tool_calls),
            Jsonb(tool_results),
            None if error is None else Jsonb(error),
            None if usage is None else Jsonb(usage),
            None if citations is None else Jsonb(citations),
            message_id,
        ),
    )


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
    parent_id: UUID | None = None,
    model: str | None = None,
) -> None:
    await conn.execute(
        """INSERT INTO messages (id, thread_id, owner_id, role, content, status, tool_calls, tool_results, error,
                                 usage, citations, parent_id, model, heartbeat_at)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,
                   CASE WHEN %s = 'streaming' THEN now() END)""",
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
            parent_id,
            model,
            status,
        ),
    )


async def retitle_thread(conn: Conn, thread_id: UUID, old: str, new: str) -> bool:
    """The generated title, unless the thread was renamed (or deleted) since it was titled `old`."""
    cur = await conn.execute("UPDATE threads SET title = %s WHERE id = %s AND title = %s", (new, thread_id, old))
    return cur.rowcount > 0
