"""The migration runner: ordered, recorded, idempotent, safe under concurrent start-up."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from ragchat.db.migrate import SchemaError, migrate, migration_files


def test_migrations_are_recorded_and_idempotent(pg_uri: str) -> None:
    assert migrate(pg_uri) == []  # already applied by the session fixture
    with psycopg.connect(pg_uri) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == [p.name[:4] for p in migration_files()]


def test_concurrent_runners_apply_each_file_once(pg_uri: str, tmp_path: Path) -> None:
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute("CREATE DATABASE migrate_race")
    uri = make_conninfo(pg_uri, dbname="migrate_race")
    try:
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        results: list[list[str]] = []
        errors: list[BaseException] = []

        def run() -> None:
            try:
                results.append(migrate(uri))
            except BaseException as exc:  # pragma: no cover - surfaced by the assert below
                errors.append(exc)

        threads = [threading.Thread(target=run) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        applied = sorted(name for r in results for name in r)
        assert applied == sorted(p.name for p in migration_files())
    finally:
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS migrate_race WITH (FORCE)")


def test_failed_migration_rolls_back(pg_uri: str, tmp_path: Path) -> None:
    (tmp_path / "0001_ok.sql").write_text("CREATE TABLE mig_ok (id int);")
    (tmp_path / "0002_bad.sql").write_text("CREATE TABLE mig_half (id int); SELECT no_such_function();")
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute("CREATE DATABASE migrate_bad")
    uri = make_conninfo(pg_uri, dbname="migrate_bad")
    try:
        with pytest.raises(SchemaError, match=r"migration 0002_bad.sql failed and was rolled back; .* at version 0001"):
            migrate(uri, tmp_path)
        with psycopg.connect(uri) as conn:
            tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname='public'")}
            versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
        assert "mig_ok" in tables and "mig_half" not in tables
        assert versions == ["0001"]
    finally:
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS migrate_bad WITH (FORCE)")
