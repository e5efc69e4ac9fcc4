"""The audit log: the `AuditWriter` every domain records its actions with (in the action's own transaction),
the `ReadAuditor` the doors record reads of documents with (AUDIT_READS), the admin's filtered pages and JSONL
export, and the retention purge.

The table is append-only in the database too (migrations/0020_audit_log.sql, 0028_audit_log_sealed.sql): ids
and times are the database's, UPDATE is refused, and DELETE only inside audit_purge() (rows older than
AUDIT_RETENTION_DAYS, run as the table's owner). Nothing in the app edits a row (docs/notes/audit.md).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from uuid import UUID

from ragchat.audit import repository as repo
from ragchat.audit.repository import AuditFilter, Position
from ragchat.core.audit import SYSTEM, Actor, AuditAction, ReadVia
from ragchat.core.principal import Principal
from ragchat.db.pool import Pool
from ragchat.observability.logs import current_fields
from ragchat.readscope.sql import others_documents
from ragchat.settings import AuditSettings

log = logging.getLogger(__name__)
EXPORT_BATCH = 1000
PURGE_BATCH = 10_000
READ_IDS_MAX = 100  # document ids listed in one `document.read` row (`document_count` says how many in all)
READ_RECORD_TIMEOUT_S = 5.0


def _clean(value: Any, limit: int | None = None) -> Any:
    """Postgres text and jsonb reject NUL and lone surrogates: drop them from everything stored (and cut text
    columns to size)."""
    if isinstance(value, str):
        # no NUL, and no lone surrogate (not UTF-8: a failed sign-in's name can hold one)
        value = value.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
        return value[:limit] if limit else value
    if isinstance(value, Mapping):
        return {_clean(str(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_clean(v) for v in value]
    if isinstance(value, UUID):
        return str(value)
    return value


def _optional(value: Any, limit: int) -> str | None:
    return None if value is None or value == "" else _clean(str(value), limit)


class AuditLog:
    """Writes (`record`), reads (`page`, `export`) and prunes (`purge`, `run_retention`) the audit log."""

    def __init__(self, pool: Pool, settings: AuditSettings) -> None:
        self.pool = pool
        self.settings = settings

    async def record(
        self,
        conn: Any,
        action: AuditAction,
        actor: Actor | Principal | None,
        *,
        target_type: str | None = None,
        target_id: UUID | str | None = None,
        details: Mapping[str, Any] | None = None,
        client: str | None = None,
    ) -> None:
        """One row on `conn`, in the caller's transaction (it commits or rolls back with the action)."""
        who = Actor.of(actor) if isinstance(actor, Principal) else (actor or SYSTEM)
        fields = current_fields()
        await repo.insert(
            conn,
            actor_id=who.user_id,
            actor_name=_clean(who.name, 200) or "?",
            client=_optional(client or fields.get("client"), 100),
            action=AuditAction(action).value,
            target_type=_optional(target_type, 40),
            target_id=_optional(target_id, 200),
            details=_clean(dict(details or {})),
            request_id=_optional(fields.get("request_id"), 200),
        )

    async def record_read(
        self, principal: Principal, via: ReadVia, document_ids: Sequence[UUID], *, owner_id: UUID | None = None
    ) -> None:
        """One `document.read` row for what one request read (core/audit.py `ReadAuditor`): under AUDIT_READS
        `shared` only when some documents are another user's (those are listed), under `all` any read. In a
        transaction of its own (a read has none), at most READ_IDS_MAX ids; a failure is logged, not raised."""
        mode = self.settings.audit_reads
        wanted = list(dict.fromkeys(document_ids))
        if mode == "off" or not wanted:
            return
        try:
            async with asyncio.timeout(READ_RECORD_TIMEOUT_S):
                async with self.pool.connection() as conn:
                    if mode == "all":
                        read = wanted
                    elif owner_id is not None:
                        read = wanted if owner_id != principal.user_id else []
                    else:
                        read = await others_documents(conn, principal.user_id, wanted)
                    if not read:
                        return
                    single = len(read) == 1 and len(wanted) == 1
                    await self.record(
                        conn,
                        AuditAction.DOCUMENT_READ,
                        principal,
                        target_type="document" if single else None,
                        target_id=read[0] if single else None,
                        details={
                            "via": via,
                            "route": current_fields().get("route"),
                            "document_ids": [str(i) for i in read[:READ_IDS_MAX]],
                            "document_count": len(read),
                            "truncated": len(read) > READ_IDS_MAX,
                        },
                    )
        except Exception as exc:  # the read was answered: its record missing is logged, not the reader's error
            log.warning("audit: could not record a read (%s) by %s: %s", via, principal.name, exc)

    # ---- reading --------------------------------------------------------------------------------------------
    async def page(self, where: AuditFilter, *, before: Position | None, limit: int) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            return await repo.page(conn, where, before=before, limit=limit)

    async def export(self, where: AuditFilter) -> AsyncIterator[bytes]:
        """Every matching row as JSON lines, newest first, read in batches (a connection per batch, held briefly:
        memory stays bounded and a slow reader holds no connection)."""
        before: Position | None = None
        while True:
            rows = await self.page(where, before=before, limit=EXPORT_BATCH)
            if not rows:
                return
            lines = [json.dumps(_jsonable(row), ensure_ascii=False, default=str) for row in rows]
            yield ("\n".join(lines) + "\n").encode()
            if len(rows) < EXPORT_BATCH:
                return
            before = (rows[-1]["at"], rows[-1]["id"])

    # ---- retention ------------------------------------------------------------------------------------------
    async def purge(self, keep_days: int | None = None) -> int:
        """Delete rows older than `keep_days` (AUDIT_RETENTION_DAYS; 0 keeps everything), in batches."""
        days = self.settings.audit_retention_days if keep_days is None else keep_days
        if days <= 0:
            return 0
        removed = 0
        while True:
            async with self.pool.connection() as conn, conn.transaction():
                # one process purges at a time; the others find nothing left to do
                await conn.execute("SELECT pg_advisory_xact_lock(hashtext('ragchat:audit-purge'))")
                n = await repo.purge(conn, days, PURGE_BATCH)
            removed += n
            if n < PURGE_BATCH:
                break
        if removed:
            log.info("audit: %d rows older than %d days purged", removed, days)
        return removed

    async def run_retention(self) -> None:
        """The background purge: soon after start, then every AUDIT_PURGE_INTERVAL_S (a failure waits a turn)."""
        await asyncio.sleep(min(60.0, self.settings.audit_purge_interval_s))
        while True:
            try:
                await self.purge()
            except Exception as exc:  # the database away: try again next turn
                log.warning("audit: the retention purge failed: %s", exc)
            await asyncio.sleep(self.settings.audit_purge_interval_s)


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    out["at"] = row["at"].isoformat()
    out["actor_id"] = None if row["actor_id"] is None else str(row["actor_id"])
    return out
