"""Issue 43, item 9: the audit log cannot be edited without a schema change (migrations/0028_audit_log_sealed.sql).

The probe's two bypasses, tried as the app's own connection (in the embedded setup: the superuser that owns the
table) and as a role with only INSERT/SELECT/UPDATE/DELETE rights: a DELETE after `SET LOCAL
ragchat.audit_purge_before`, and an INSERT with OVERRIDING SYSTEM VALUE of a backdated row with id -1. Plus the
retention purge as that role, and a database with audit rows upgraded by the migration.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import conninfo, sql

from ragchat.db.migrate import MIGRATIONS_DIR, ensure_vector_extension, migrate, migration_files
from tests.support.audit import count, insert_rows

GUC_DELETE = [
    "SET LOCAL ragchat.audit_purge_before = '2999-01-01'",
    "DELETE FROM audit_log WHERE id = (SELECT min(id) FROM audit_log)",
]
BACKDATED = """INSERT INTO audit_log (id, at, actor_name, action, details) OVERRIDING SYSTEM VALUE
               VALUES (-1, '2000-01-01T00:00:00Z', 'forger', 'auth.sign_in', '{}') RETURNING id, at"""


@pytest.fixture
def dml_uri(db: str) -> Iterator[str]:
    """A login role with only INSERT/SELECT/UPDATE/DELETE on every table (and USAGE on every sequence)."""
    role = f"audit_dml_{uuid.uuid4().hex[:8]}"
    ident = sql.Identifier(role)
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(ident))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(ident))
        conn.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {}").format(ident))
        conn.execute(sql.SQL("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {}").format(ident))
    yield conninfo.make_conninfo(db, user=role)
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(ident))
        conn.execute(sql.SQL("DROP ROLE {}").format(ident))


def refused(uri: str, *statements: str) -> None:
    """The statements, in one transaction, end in the guard's (or the privilege system's) refusal."""
    with psycopg.connect(uri) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]


def backdate_is_ignored(uri: str) -> None:
    """OVERRIDING SYSTEM VALUE is accepted, but the id and time are the database's, not the INSERT's."""
    began = datetime.now(UTC)
    with psycopg.connect(uri) as conn:
        row = conn.execute(BACKDATED).fetchone()
    assert row is not None
    new_id, at = row
    assert new_id > 0 and abs(at - began) < timedelta(minutes=1), row
    assert count(uri, "id <= 0 OR at < '2001-01-01'") == 0


def test_the_probe_bypasses_fail_on_the_apps_connection(db: str) -> None:
    insert_rows(db, 3)
    refused(db, *GUC_DELETE)  # the probe's first bypass (0020 let it through)
    backdate_is_ignored(db)  # and its second
    insert_rows(db, 2, age_days=400)
    refused(db, "SELECT set_config('ragchat.audit_purge_before', '2999-01-01', true)", "DELETE FROM audit_log")
    refused(db, "DELETE FROM audit_log WHERE at < now() - interval '300 days'")  # old rows too, outside the purge
    refused(db, "UPDATE audit_log SET actor_name = 'someone else'")
    # a superuser's replication mode is a setting too: the triggers fire ALWAYS
    refused(db, "SET LOCAL session_replication_role = replica", "DELETE FROM audit_log")
    with psycopg.connect(db) as conn:  # a plain insert naming its own time is stamped too
        conn.execute("INSERT INTO audit_log (at, actor_name, action) VALUES ('1999-01-01', 'x', 'auth.sign_in')")
    assert count(db) == 7 and count(db, "at < now() - interval '1 day'") == 2


def test_a_role_with_only_dml_rights_cannot_delete_or_backdate(db: str, dml_uri: str) -> None:
    insert_rows(db, 3)
    refused(dml_uri, *GUC_DELETE)
    backdate_is_ignored(dml_uri)
    insert_rows(db, 2, age_days=400)
    refused(dml_uri, "DELETE FROM audit_log WHERE at < now() - interval '300 days'")
    refused(dml_uri, "UPDATE audit_log SET details = '{}'")
    refused(dml_uri, "TRUNCATE audit_log")
    # the purge's own marker, forged: the role is not the table's owner, so the guard refuses all the same
    forged = """INSERT INTO audit_log (actor_name, action, details) VALUES ('system', 'audit.purge',
                jsonb_build_object('xact', pg_current_xact_id()::text, 'cutoff', now() - interval '2 days'))"""
    refused(dml_uri, forged, "DELETE FROM audit_log WHERE at < now() - interval '300 days'")
    refused(dml_uri, "SELECT setval('audit_log_id_seq', 1)")  # ids cannot be rewound either
    assert count(db) == 6
    # the retention purge is the one way rows go, for this role too: only the old ones, and it says so
    with psycopg.connect(dml_uri) as conn:
        assert conn.execute("SELECT audit_purge(365)").fetchone() == (2,)
    assert count(db) == 5
    with psycopg.connect(db) as conn:
        marker = conn.execute("SELECT actor_name, details FROM audit_log WHERE action = 'audit.purge'").fetchone()
    assert marker is not None and marker[0] == "system"
    assert marker[1]["removed"] == 2 and marker[1]["keep_days"] == 365
    assert marker[1]["role"] == conninfo.conninfo_to_dict(dml_uri)["user"]
    with psycopg.connect(dml_uri) as conn, pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("SELECT audit_purge(0)")


def test_the_migration_upgrades_a_log_that_has_rows(pg_uri: str, tmp_path: Path) -> None:
    """A database at 0027 with audit rows (one of them forged with id -1 the old way) migrates; its rows stay as
    they were, and new rows continue after the highest id."""
    name = f"audit_upgrade_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    uri = conninfo.make_conninfo(pg_uri, dbname=name)
    try:
        before = tmp_path / "migrations"
        before.mkdir()
        for path in migration_files(MIGRATIONS_DIR):
            if path.name < "0028":
                shutil.copy(path, before / path.name)
        ensure_vector_extension(uri)
        migrate(uri, before)
        with psycopg.connect(uri) as conn:
            conn.execute(
                """INSERT INTO audit_log (at, actor_name, action) SELECT now() - make_interval(days => g), 'old',
                   'auth.sign_in' FROM generate_series(1, 5) g"""
            )
            conn.execute(BACKDATED)
            old = conn.execute("SELECT id, at FROM audit_log ORDER BY id").fetchall()
        assert [r[0] for r in old] == [-1, 1, 2, 3, 4, 5]
        assert "0028_audit_log_sealed.sql" in migrate(uri)
        with psycopg.connect(uri) as conn:
            assert conn.execute("SELECT id, at FROM audit_log ORDER BY id").fetchall() == old
            row = conn.execute(BACKDATED).fetchone()
            assert row is not None and row[0] == 6
        refused(uri, *GUC_DELETE)
    finally:
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
