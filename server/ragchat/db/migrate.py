"""Apply `migrations/NNNN_*.sql` in order, each in its own transaction, under an advisory lock.

The directory is the installed package's copy (`ragchat/_bundle/migrations`) or the checkout's (ragchat/resources.py).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import LiteralString, cast

import psycopg

from ragchat.resources import migrations_dir

log = logging.getLogger(__name__)

MIGRATIONS_DIR = migrations_dir()
_LOCK_KEY = 7_261_730_412  # arbitrary constant shared by every ragchat process
_NAME = re.compile(r"^(\d{4})_[\w-]+\.sql$")


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[Path]:
    files = sorted(p for p in directory.iterdir() if _NAME.match(p.name))
    versions = [p.name[:4] for p in files]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration numbers in {directory}")
    return files


def head_version(directory: Path = MIGRATIONS_DIR) -> str:
    """The newest migration this code ships (e.g. "0016")."""
    files = migration_files(directory)
    return files[-1].name[:4] if files else "0000"


#: the schema version a database is at (None: no migration table yet)
CURRENT_VERSION_SQL = "SELECT max(version) AS version FROM schema_migrations"


def ensure_vector_extension(uri: str) -> None:
    """`CREATE EXTENSION vector` must exist before a pool registers the vector type."""
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


def migrate(uri: str, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply pending migrations; return the names applied. Safe to call from many processes at once."""
    applied: list[str] = []
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
        try:
            conn.execute(
                """CREATE TABLE IF NOT EXISTS schema_migrations (
                       version text PRIMARY KEY,
                       name text NOT NULL,
                       applied_at timestamptz NOT NULL DEFAULT now())"""
            )
            done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            for path in migration_files(directory):
                version = path.name[:4]
                if version in done:
                    continue
                log.info("applying migration %s", path.name)
                with conn.transaction():
                    conn.execute(cast(LiteralString, path.read_text()))  # our own migration files
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                        (version, path.name),
                    )
                applied.append(path.name)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
    return applied
