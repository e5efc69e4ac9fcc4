"""Schema versions (issue 31): a database newer than the code is refused naming both versions; a migration that
fails half-way is rolled back and named; `ragchat migrate [--status]`."""

from __future__ import annotations

import json
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

from ragchat.db.migrate import (
    MIGRATIONS_DIR,
    SchemaError,
    applied_versions,
    file_checksum,
    head_version,
    migrate,
    migration_files,
)

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
    as_json = ragchat(empty_db, tmp_path, "migrate", "--status", "--json")
    assert as_json.returncode == 0, as_json.stderr
    status = json.loads(as_json.stdout)
    assert status["schema_version"] is None and status["code_schema_version"] == HEAD
    assert status["pending"] == [p.name for p in migration_files()] and status["changed"] == []

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


def checksums(uri: str) -> dict[str, str | None]:
    with psycopg.connect(uri) as conn:
        return {r[0]: r[1] for r in conn.execute("SELECT name, checksum FROM schema_migrations")}


def test_an_edited_applied_migration_is_refused_at_start(empty_db: str, tmp_path: Path) -> None:
    migrations = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, migrations)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    migrate(empty_db, migrations)
    recorded = checksums(empty_db)
    assert recorded == {p.name: file_checksum(p) for p in migration_files(migrations)}
    assert migrate(empty_db, migrations) == []  # unchanged files: started again without a word

    edited = migration_files(migrations)[6]
    edited.write_text(edited.read_text() + "\n-- a comment added after the release\n")
    with pytest.raises(SchemaError) as refused:
        migrate(empty_db, migrations)
    message = refused.value.message
    assert f"migration {edited.name} changed after it was applied" in message, message
    assert recorded[edited.name][:12] in message and f"git checkout -- migrations/{edited.name}" in message
    assert "\n" not in message
    assert checksums(empty_db) == recorded  # nothing recorded over the applied file's checksum

    edited.write_bytes(edited.read_bytes()[: -len(b"\n-- a comment added after the release\n")].replace(b"\n", b"\r\n"))
    assert migrate(empty_db, migrations) == []  # the same file with CRLF line endings is the same migration


def test_an_edited_migration_stops_every_command_with_one_line(empty_db: str, tmp_path: Path) -> None:
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    migrate(empty_db)
    name = migration_files()[3].name
    with psycopg.connect(empty_db, autocommit=True) as conn:  # as if the file had been edited after it was applied
        conn.execute("UPDATE schema_migrations SET checksum = repeat('0', 64) WHERE name = %s", (name,))
    for args in (("migrate", "--status"), ("migrate",), ("user", "list")):
        done = ragchat(empty_db, tmp_path, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert f"ragchat: migration {name} changed after it was applied" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def test_checksums_are_recorded_on_the_first_start_of_an_older_database(empty_db: str) -> None:
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    migrate(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:  # schema_migrations as releases before 0.5 left it
        conn.execute("ALTER TABLE schema_migrations DROP COLUMN checksum")
        conn.execute("INSERT INTO schema_migrations (version, name) VALUES ('0000', '0000_from_another_branch.sql')")
    assert migrate(empty_db) == []
    recorded = checksums(empty_db)
    assert recorded.pop("0000_from_another_branch.sql") is None  # no file here to take a checksum of
    assert recorded == {p.name: file_checksum(p) for p in migration_files()}
