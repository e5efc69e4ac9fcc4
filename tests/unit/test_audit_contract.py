"""The audit log's contract: action names the database accepts, and cursors bound to their filters."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from ragchat.audit.schemas import make_cursor, parse_filter, read_cursor
from ragchat.core.audit import AuditAction
from ragchat.core.errors import BadRequest

NO_FILTER = {"actor": None, "actions": None, "target_type": None, "target_id": None, "since": None, "until": None}


def test_every_action_has_the_shape_the_database_checks() -> None:
    check = _migration_check()
    assert all(re.fullmatch(check, action.value) for action in AuditAction)
    assert len({a.value for a in AuditAction}) == len(AuditAction)


def _migration_check() -> str:
    from ragchat.resources import migrations_dir

    sql = (migrations_dir() / "0020_audit_log.sql").read_text()
    found = re.search(r"action ~ '\^(.+?)\$'", sql)
    assert found
    return found.group(1).replace("\\\\", "\\")


def test_a_cursor_round_trips_and_refuses_changes() -> None:
    where = parse_filter(**{**NO_FILTER, "actor": "Admin", "since": "2026-01-01"})
    assert where.actor_name == "Admin" and where.since == datetime(2026, 1, 1, tzinfo=UTC)
    at = datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    cursor = make_cursor((at, 12345), where)
    assert read_cursor(cursor, where) == (at, 12345)
    assert read_cursor(None, where) is None
    other = parse_filter(**NO_FILTER)
    with pytest.raises(BadRequest):
        read_cursor(cursor, other)
    for forged in (cursor.replace("MTc", "MTg", 1), cursor[:-2], cursor + "A", "x" + cursor[1:]):
        assert forged != cursor
        with pytest.raises(BadRequest):
            read_cursor(forged, where)


@pytest.mark.parametrize(
    "bad",
    [
        {"since": "not a date"},
        {"until": "2026-02-30"},
        {"since": "2026-03-01", "until": "2026-03-01"},
        {"actor": "x\x00"},
        {"actions": ["chat.answer", "drop.table"]},
        {"target_id": "y" * 201},
    ],
)
def test_bad_filters_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(BadRequest):
        parse_filter(**{**NO_FILTER, **bad})  # type: ignore[arg-type]
