"""The audit log's SQL (migrations/0020_audit_log.sql): one insert, one filtered keyset page, the purge."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, LiteralString
from uuid import UUID

from psycopg.types.json import Jsonb

from ragchat.db.pool import Conn

COLUMNS = "id, at, actor_id, actor_name, client, action, target_type, target_id, details, request_id"


@dataclass(frozen=True)
class AuditFilter:
    """What an admin asks for (every field optional; all given ones must hold)."""

    actor_id: UUID | None = None
    actor_name: str | None = None  # case-insensitive, exact
    actions: tuple[str, ...] = ()
    target_type: str | None = None
    target_id: str | None = None
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive

    def canonical(self) -> str:
        """A stable text of the filter (a cursor is bound to it)."""
        return json.dumps(
            [
                str(self.actor_id or ""),
                (self.actor_name or "").lower(),
                sorted(self.actions),
                self.target_type or "",
                self.target_id or "",
                self.since.isoformat() if self.since else "",
                self.until.isoformat() if self.until else "",
            ]
        )


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


async def insert(
    conn: Conn,
    *,
    actor_id: UUID | None,
    actor_name: str,
    client: str | None,
    action: str,
    target_type: str | None,
    target_id: str | None,
    details: dict[str, Any],
    request_id: str | None,
) -> None:
    await conn.execute(
        """INSERT INTO audit_log (actor_id, actor_name, client, action, target_type, target_id, details, request_id)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s)""",
        (actor_id, actor_name, client, action, target_type, target_id, Jsonb(details, dumps=_dumps), request_id),
    )


#: a position in the log: (at, id) of the last row seen
Position = tuple[datetime, int]


async def page(conn: Conn, where: AuditFilter, *, before: Position | None, limit: int) -> list[dict[str, Any]]:
    """Up to `limit` rows matching `where`, newest first (at, then id), after `before` (the keyset)."""
    clauses: list[LiteralString] = []
    params: dict[str, Any] = {"limit": limit}
    if before is not None:
        clauses.append("(at, id) < (%(before_at)s, %(before_id)s)")
        params["before_at"], params["before_id"] = before
    if where.actor_id is not None:
        clauses.append("actor_id = %(actor_id)s")
        params["actor_id"] = where.actor_id
    if where.actor_name is not None:
        clauses.append("lower(actor_name) = lower(%(actor_name)s)")
        params["actor_name"] = where.actor_name
    if where.actions:
        clauses.append("action = ANY(%(actions)s)")
        params["actions"] = list(where.actions)
    if where.target_type is not None:
        clauses.append("target_type = %(target_type)s")
        params["target_type"] = where.target_type
    if where.target_id is not None:
        clauses.append("target_id = %(target_id)s")
        params["target_id"] = where.target_id
    if where.since is not None:
        clauses.append("at >= %(since)s")
        params["since"] = where.since
    if where.until is not None:
        clauses.append("at < %(until)s")
        params["until"] = where.until
    condition: LiteralString = " AND ".join(clauses) if clauses else "true"
    query: LiteralString = (
        f"SELECT {COLUMNS} FROM audit_log WHERE {condition} ORDER BY at DESC, id DESC LIMIT %(limit)s"
    )
    return await (await conn.execute(query, params)).fetchall()


async def purge(conn: Conn, keep_days: int, batch: int) -> int:
    """Delete up to `batch` rows older than `keep_days` (the one DELETE the table's guard lets through)."""
    row = await (await conn.execute("SELECT audit_purge(%s, %s) AS removed", (keep_days, batch))).fetchone()
    return int(row["removed"]) if row else 0
