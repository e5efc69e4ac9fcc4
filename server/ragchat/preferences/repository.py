"""SQL for per-user settings (table user_settings: only the keys a user changed)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ragchat.db.pool import Conn


async def stored(conn: Conn, user_id: UUID) -> dict[str, Any]:
    """The keys the user set (an empty dict when none)."""
    row = await (await conn.execute("SELECT settings FROM user_settings WHERE user_id = %s", (user_id,))).fetchone()
    value = row["settings"] if row else None
    return dict(value) if isinstance(value, dict) else {}


async def merge(conn: Conn, user_id: UUID, changed: dict[str, Any], reset: list[str]) -> dict[str, Any]:
    """Set `changed`, drop the keys in `reset` (back to the default), in one statement; the keys now set."""
    cur = await conn.execute(
        """INSERT INTO user_settings AS u (user_id, settings, updated_at) VALUES (%(uid)s, %(set)s, now())
           ON CONFLICT (user_id) DO UPDATE
               SET settings = (u.settings || %(set)s) - %(reset)s::text[], updated_at = now()
           RETURNING settings""",
        {"uid": user_id, "set": Jsonb(changed), "reset": reset},
    )
    row = await cur.fetchone()
    value = row["settings"] if row else None
    return dict(value) if isinstance(value, dict) else {}


async def users_with(conn: Conn, key: str, value: str) -> list[UUID]:
    """The users who set `key` to `value` (as JSON text, e.g. 'true')."""
    cur = await conn.execute("SELECT user_id FROM user_settings WHERE settings->>%s = %s", (key, value))
    return [r["user_id"] for r in await cur.fetchall()]
