"""The audit API's typed query and responses, and its cursor (an opaque, checked keyset position)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from pydantic import BaseModel

from ragchat.audit.repository import AuditFilter, Position
from ragchat.core.audit import AuditAction
from ragchat.core.errors import BadRequest

MAX_LIMIT = 500
TEXT_MAX = 200
CURSOR_MAX = 200
_CURSOR = re.compile(r"^(-?[0-9]{1,18})\.([1-9][0-9]{0,18})\.([0-9a-f]{20})$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ACTIONS = {a.value for a in AuditAction}


class AuditEntry(BaseModel):
    id: int
    at: datetime
    actor_id: UUID | None
    actor_name: str
    client: str | None
    action: str
    target_type: str | None
    target_id: str | None
    details: dict[str, Any]
    request_id: str | None


class AuditPage(BaseModel):
    """One page, newest first; `next_cursor` (null on the last page) asks for the next one with the same filters."""

    entries: list[AuditEntry]
    next_cursor: str | None
    actions: list[str]  # every action the log records (for the page's filter)


def _text(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if "\x00" in value or len(value) > TEXT_MAX:
        raise BadRequest(f"{name}: at most {TEXT_MAX} characters, and no NUL")
    value = value.strip()
    return value or None


def _when(name: str, value: str | None) -> datetime | None:
    """An ISO 8601 date or time (a time without a zone is UTC); 400 for anything else."""
    text = _text(name, value)
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError as exc:
        raise BadRequest(f"{name}: not an ISO 8601 date or time (e.g. 2026-01-31 or 2026-01-31T12:00:00Z)") from exc
    if moment.year < 1900 or moment.year > 9000:
        raise BadRequest(f"{name}: the year must be between 1900 and 9000")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_filter(
    *,
    actor: str | None,
    actions: list[str] | None,
    target_type: str | None,
    target_id: str | None,
    since: str | None,
    until: str | None,
) -> AuditFilter:
    """The query's filters, checked: 400 for NUL bytes, over-long text, unknown actions or bad dates."""
    actor = _text("actor", actor)
    actor_id: UUID | None = None
    actor_name: str | None = None
    if actor is not None:
        try:
            actor_id = UUID(actor)
        except ValueError:
            actor_name = actor
    chosen: list[str] = []
    for action in actions or []:
        if "\x00" in action or action not in ACTIONS:
            raise BadRequest("action: unknown action (see `actions` in any page of GET /api/admin/audit)")
        chosen.append(action)
    start, end = _when("since", since), _when("until", until)
    if start is not None and end is not None and end <= start:
        raise BadRequest("until must be after since")
    return AuditFilter(
        actor_id=actor_id,
        actor_name=actor_name,
        actions=tuple(dict.fromkeys(chosen)),
        target_type=_text("target_type", target_type),
        target_id=_text("target_id", target_id),
        since=start,
        until=end,
    )


def _micros(at: datetime) -> int:
    return (at - _EPOCH) // timedelta(microseconds=1)


def _check(micros: int, last_id: int, where: AuditFilter) -> str:
    return hashlib.sha256(f"{micros}|{last_id}|{where.canonical()}".encode()).hexdigest()[:20]


def make_cursor(last: Position, where: AuditFilter) -> str:
    """The position after the row `last` (its at and id), bound to these filters."""
    at, last_id = last
    micros = _micros(at)
    text = f"{micros}.{last_id}.{_check(micros, last_id, where)}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def read_cursor(cursor: str | None, where: AuditFilter) -> Position | None:
    """The position a cursor continues after; 400 for a cursor that was altered or made for other filters."""
    if cursor is None or cursor == "":
        return None
    bad = BadRequest("cursor: not a cursor from this listing (start again without one)")
    if len(cursor) > CURSOR_MAX or not cursor.isascii():
        raise bad
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise bad from exc
    match = _CURSOR.match(text)
    if match is None:
        raise bad
    micros, last_id = int(match.group(1)), int(match.group(2))
    if last_id > 2**63 - 1 or match.group(3) != _check(micros, last_id, where):
        raise bad
    try:
        return _EPOCH + timedelta(microseconds=micros), last_id
    except OverflowError as exc:
        raise bad from exc
