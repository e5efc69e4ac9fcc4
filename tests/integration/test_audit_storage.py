"""The audit log in the database: append-only (UPDATE and DELETE refused), the retention purge the only way rows
go, the servers' background purge, and a record that rolls back with its action."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import psycopg
import pytest

from ragchat.core.audit import SYSTEM, Actor, AuditAction
from ragchat.core.errors import NotFound
from tests.support.audit import count, insert_rows

OLD = "now() - interval '400 days'"


def test_update_and_delete_are_refused_by_the_database(db: str) -> None:
    insert_rows(db, 3)
    insert_rows(db, 2, age_days=400)
    attempts = [
        "UPDATE audit_log SET actor_name = 'someone else'",
        "UPDATE audit_log SET details = '{}' WHERE id = 1",
        "DELETE FROM audit_log",
        "DELETE FROM audit_log WHERE id = 1",
        f"DELETE FROM audit_log WHERE at < {OLD} + interval '1 day'",  # old rows too, outside the purge
    ]
    for statement in attempts:
        with psycopg.connect(db) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
            conn.execute(statement)
    # 0020's switch, set by hand, no longer lets anything go (0028: tests/integration/test_audit_sealed.py)
    with psycopg.connect(db) as conn:
        conn.execute("SELECT set_config('ragchat.audit_purge_before', (now() - interval '1 year')::text, true)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"DELETE FROM audit_log WHERE at < {OLD} + interval '1 day'")
    with psycopg.connect(db) as conn, pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("SELECT audit_purge(0)")
    assert count(db) == 5
    with psycopg.connect(db) as conn:
        removed = conn.execute("SELECT audit_purge(365)").fetchone()
    # the 2 old rows went; the purge left its own row (audit.purge)
    assert removed == (2,) and count(db) == 4 and count(db, "action = 'audit.purge'") == 1
    # after a purge, nothing else may go in the same transaction
    with psycopg.connect(db) as conn:
        conn.execute("SELECT audit_purge(365)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM audit_log")


async def test_purge_keeps_the_retention_window_in_batches(db: str, runtime: Any) -> None:
    insert_rows(db, 25_000, age_days=400)
    insert_rows(db, 10)
    assert count(db) == 25_010
    assert await runtime.audit.purge(0) == 0  # 0: keep everything
    assert await runtime.audit.purge() == 25_000  # AUDIT_RETENTION_DAYS (365) in batches of 10,000
    assert count(db) == 13 and count(db, "action = 'audit.purge'") == 3  # one row per batch says so
    assert await runtime.audit.purge() == 0


async def test_a_record_rolls_back_with_its_action(db: str, runtime: Any) -> None:
    audit = runtime.audit
    with pytest.raises(NotFound):
        async with runtime.pool.connection() as conn:
            await audit.record(conn, AuditAction.DOCUMENT_DELETE, SYSTEM, target_type="document", target_id="x")
            raise NotFound("the action failed after its record")
    assert count(db) == 0
    async with runtime.pool.connection() as conn:
        await audit.record(
            conn,
            AuditAction.SIGN_IN_FAILED,
            Actor(None, "a\x00b\ud800" + "x" * 500),
            details={"k\x00": ["v\x00", {"w": "\udfff"}]},
            client="1.2.3.4",
        )
    with psycopg.connect(db) as conn:
        row = conn.execute("SELECT actor_name, details, client, request_id FROM audit_log").fetchone()
    assert row is not None
    assert row[0].startswith("ab?x") and len(row[0]) == 200
    assert row[1] == {"k": ["v", {"w": "?"}]} and row[2] == "1.2.3.4" and row[3] is None


async def test_the_server_purges_old_rows_in_the_background(db: str, live_app: Callable[..., Any]) -> None:
    insert_rows(db, 50, age_days=400)
    insert_rows(db, 5)
    server = live_app(audit_purge_interval_s=0.2, audit_retention_days=30)
    for _ in range(200):  # 20 s at most
        if count(db, "actor_name = 'tester'") == 5:
            break
        await asyncio.sleep(0.1)
    assert count(db, "actor_name = 'tester'") == 5
    async with httpx.AsyncClient(base_url=server.url) as local:
        rows = (await local.get("/api/admin/audit")).json()["entries"]
    assert len(rows) == 6 and sum(r["actor_name"] == "tester" for r in rows) == 5
    purge = next(r for r in rows if r["action"] == "audit.purge")
    assert purge["actor_name"] == "system" and purge["details"]["removed"] == 50
