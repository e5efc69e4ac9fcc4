"""GET /api/admin/audit (filtered keyset pages) and GET /api/admin/audit/export (JSON lines), admins only.

There is no route that changes or deletes an audit row: the log is written by the actions themselves and
pruned only by the retention purge.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from litestar import get
from litestar.params import Parameter
from litestar.response import Stream

from ragchat.audit.schemas import (
    ACTIONS,
    CURSOR_MAX,
    MAX_LIMIT,
    TEXT_MAX,
    AuditEntry,
    AuditPage,
    make_cursor,
    parse_filter,
    read_cursor,
)
from ragchat.audit.service import AuditLog
from ragchat.core.audit import AuditAction
from ragchat.core.errors import Forbidden
from ragchat.core.principal import Principal
from ragchat.httpapi.http import error_responses, file_download

Text = Annotated[str | None, Parameter(max_length=TEXT_MAX)]
ActorQuery = Annotated[str | None, Parameter(max_length=TEXT_MAX, description="a user id, or a name (any case)")]
ActionQuery = Annotated[
    list[AuditAction] | None,
    Parameter(query="action", max_items=50, description="one or more actions (any of them)"),
]
SinceQuery = Annotated[str | None, Parameter(max_length=100, description="ISO 8601, inclusive (UTC if no zone)")]
UntilQuery = Annotated[str | None, Parameter(max_length=100, description="ISO 8601, exclusive (UTC if no zone)")]


def _admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise Forbidden("only an admin may read the audit log")


@get("/api/admin/audit", responses=error_responses(400, 403))
async def list_audit(
    audit: AuditLog,
    principal: Principal,
    actor: ActorQuery = None,
    action: ActionQuery = None,
    target_type: Text = None,
    target_id: Text = None,
    since: SinceQuery = None,
    until: UntilQuery = None,
    limit: Annotated[int, Parameter(ge=1, le=MAX_LIMIT)] = 50,
    cursor: Annotated[
        str | None, Parameter(max_length=CURSOR_MAX, description="`next_cursor` of the page before")
    ] = None,
) -> AuditPage:
    """The audit log, newest first, filtered by actor, action(s), target and time; `next_cursor` pages on."""
    _admin(principal)
    where = parse_filter(
        actor=actor,
        actions=[a.value for a in action or []],
        target_type=target_type,
        target_id=target_id,
        since=since,
        until=until,
    )
    before = read_cursor(cursor, where)
    rows = await audit.page(where, before=before, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    return AuditPage(
        entries=[AuditEntry.model_validate(r) for r in rows],
        next_cursor=make_cursor((rows[-1]["at"], rows[-1]["id"]), where) if more else None,
        actions=sorted(ACTIONS),
    )


@get(
    "/api/admin/audit/export",
    responses=error_responses(400, 403),
    operation_class=file_download("application/x-ndjson"),
)
async def export_audit(
    audit: AuditLog,
    principal: Principal,
    actor: ActorQuery = None,
    action: ActionQuery = None,
    target_type: Text = None,
    target_id: Text = None,
    since: SinceQuery = None,
    until: UntilQuery = None,
) -> Stream:
    """Every matching row as JSON lines (newest first), streamed as an attachment."""
    _admin(principal)
    where = parse_filter(
        actor=actor,
        actions=[a.value for a in action or []],
        target_type=target_type,
        target_id=target_id,
        since=since,
        until=until,
    )
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Stream(
        audit.export(where),
        media_type="application/x-ndjson",
        headers={
            "Content-Disposition": f'attachment; filename="ragchat-audit-{stamp}.jsonl"',
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
        },
    )


def audit_handlers() -> list[Any]:
    return [list_audit, export_audit]
