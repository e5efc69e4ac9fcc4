"""Schema versions (issue 31): a database newer than the code is refused naming both versions; a migration that
fails half-way is rolled back and named; `ragchat migrate [--status]`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ragchat.db.migrate import MIGRATIONS_DIR, SchemaError, applied_versions, head_version, migrate, migration_files

HEAD = head_version()


@pytest.fixture
def empty_db(pg_uri: str) -> Iterator[str]:
    """A new, empty database on the test server."""
    name = f"ops_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield make_conninfo(**{**conninfo_to_dict(pg_uri), "dbname": name})
    finally:
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def tables(uri: str) -> set[str]:
    with psycopg.connect(uri) as conn:
        return {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}


def test_a_failing_migration_is_rolled_back_and_named(empty_db: str, tmp_path: Path) -> None:
    migrations = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, migrations)
    following = f"{int(HEAD) + 1:04d}"
    (migrations / f"{following}_half_way.sql").write_text(
        "CREATE TABLE half_done (id int);\nINSERT INTO half_done VALUES (1);\nSELECT 1 / 0;\n"
    )
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    with pytest.raises(SchemaError) as failed:
        migrate(empty_db, migrations)
    message = failed.value.message
    assert f"{following}_half_way.sql failed and was rolled back" in message, message
    assert f"stays at version {HEAD}" in message and "division by zero" in message
    assert "half_done" not in tables(empty_db)  # nothing of it left
    assert applied_versions(empty_db)[-1][0] == HEAD  # the ones before it stay applied
    assert migrate(empty_db) == []  # this code's own migrations: up to date


def test_a_newer_schema_is_refused_naming_both_versions(empty_db: str) -> None:
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    migrate(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations (version, name) VALUES ('9990', '9990_from_the_future.sql')")
    with pytest.raises(SchemaError) as refused:
        migrate(empty_db)
    assert "9990" in refused.value.message and f"schema {HEAD}" in refused.value.message


def ragchat(uri: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": uri, "RAGCHAT_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run(
        [sys.executable, "-c", "import sys; from ragchat.cli import main; sys.exit(main(sys.argv[1:]))", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


def test_migrate_command(empty_db: str, tmp_path: Path) -> None:
    status = ragchat(empty_db, tmp_path, "migrate", "--status")
    assert status.returncode == 0, status.stderr
    assert "schema version none (empty)" in status.stdout and "pending: 0001_" in status.stdout
    assert tables(empty_db) == set()  # --status changes nothing

    applied = ragchat(empty_db, tmp_path, "migrate")
    assert applied.returncode == 0, applied.stderr
    assert f"applied {len(migration_files())}: 0001_" in applied.stdout  # numbers may have gaps between branches
    again = ragchat(empty_db, tmp_path, "migrate", "--status")
    assert "up to date" in again.stdout and f"schema version {HEAD}" in again.stdout

    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations (version, name) VALUES ('9990', '9990_from_the_future.sql')")
    for args in (("migrate", "--status"), ("migrate",), ("user", "list")):
        newer = ragchat(empty_db, tmp_path, *args)
        assert newer.returncode == 2, (args, newer.stdout, newer.stderr)
        assert "9990" in newer.stderr and f"(schema {HEAD})" in newer.stderr, newer.stderr
