"""Apply `migrations/NNNN_*.sql` in order, each in its own transaction, under a transaction-level advisory lock.

The directory is the installed package's copy (`ragchat/_bundle/migrations`) or the checkout's (ragchat/resources.py).
Each applied file's SHA-256 is recorded in `schema_migrations.checksum`; at every start an applied migration whose
file changed since is refused (a change to the schema goes in a new migration). Rows applied before checksums
were kept get the current file's recorded on the first start that sees them.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, LiteralString, cast

import psycopg

from ragchat import __version__
from ragchat.core.errors import RagchatError
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


class SchemaError(RagchatError):
    """The database's schema cannot be used by this code: newer than it, or a migration failed."""

    code = "schema_error"


def head_version(directory: Path = MIGRATIONS_DIR) -> str:
    """The newest migration this code ships (e.g. "0016")."""
    files = migration_files(directory)
    return files[-1].name[:4] if files else "0000"


def file_checksum(path: Path) -> str:
    """A migration file's SHA-256 (line endings normalised: a checkout with CRLF endings is the same file)."""
    return hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()


@dataclass(frozen=True)
class ChangedMigration:
    """An applied migration whose file is not the one applied."""

    name: str
    recorded: str
    now: str


def changed_message(changed: list[ChangedMigration]) -> str:
    names = ", ".join(c.name for c in changed)
    first = changed[0]
    return (
        f"migration {names} changed after it was applied to this database (sha256 recorded "
        f"{first.recorded[:12]}…, the file now {first.now[:12]}…): put the file back as released "
        f"(e.g. `git checkout -- migrations/{first.name}`); a schema change goes in a new migration"
    )


#: the schema version a database is at (None: no migration table yet)
CURRENT_VERSION_SQL = "SELECT max(version) AS version FROM schema_migrations"


def ensure_vector_extension(uri: str) -> None:
    """`CREATE EXTENSION vector` must exist before a pool registers the vector type."""
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


def applied_versions(uri: str) -> list[tuple[str, str]]:
    """(version, name) of the migrations applied to the database, oldest first ([] for an empty database)."""
    with psycopg.connect(uri, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        if not exists or not exists[0]:
            return []
        return [(r[0], r[1]) for r in conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")]


def check_not_newer(current: str | None, directory: Path = MIGRATIONS_DIR) -> None:
    """SchemaError when the database was migrated by a newer ragchat than this one."""
    head = head_version(directory)
    if current is not None and current > head:
        raise SchemaError(
            f"the database schema is at version {current}, newer than this ragchat {__version__} knows "
            f"(schema {head}): run the newer ragchat, or restore a backup made by this version"
        )


def migrate(uri: str, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply pending migrations; return the names applied. Safe to call from many processes at once, and
    through a pooler in transaction mode: the lock is a transaction's (`pg_advisory_xact_lock`), taken by each
    migration's own transaction, which checks again under it that no other process applied it first.
    Refuses a schema newer than this code's; a migration that fails is rolled back (its transaction) and named,
    the ones before it stay applied."""
    applied: list[str] = []
    # prepare_threshold=None: statements run more than 5 times here must not be prepared on the server, which a
    # pooler in transaction mode (PgBouncer < 1.21) would hand to another client
    with psycopg.connect(uri, autocommit=True, prepare_threshold=None) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            conn.execute(
                """CREATE TABLE IF NOT EXISTS schema_migrations (
                       version text PRIMARY KEY,
                       name text NOT NULL,
                       applied_at timestamptz NOT NULL DEFAULT now(),
                       checksum text)"""
            )
            if not _has_checksum_column(conn):  # a database migrated before checksums were kept
                conn.execute("ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text")
        done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        check_not_newer(max(done) if done else None, directory)
        check_checksums(conn, directory)
        for path in migration_files(directory):
            version = path.name[:4]
            if version in done:
                continue
            try:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                    if conn.execute("SELECT 1 FROM schema_migrations WHERE version = %s", (version,)).fetchone():
                        continue  # another process applied it while this one waited for the lock
                    log.info("applying migration %s", path.name)
                    conn.execute(cast(LiteralString, path.read_text()))  # our own migration files
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                        (version, path.name, file_checksum(path)),
                    )
            except psycopg.Error as exc:
                at = max([*done, *(n[:4] for n in applied)], default="none")
                raise SchemaError(
                    f"migration {path.name} failed and was rolled back; the schema stays at version {at}: "
                    f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
                ) from exc
            applied.append(path.name)
    return applied


def _has_checksum_column(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        """SELECT 1 FROM pg_attribute
            WHERE attrelid = 'schema_migrations'::regclass AND attname = 'checksum' AND NOT attisdropped"""
    ).fetchone()
    return row is not None


def changed_migrations(conn: psycopg.Connection[Any], directory: Path = MIGRATIONS_DIR) -> list[ChangedMigration]:
    """Applied migrations whose file differs from the checksum recorded when they were applied (rows without a
    checksum, and versions this code has no file for, are not compared)."""
    files = {p.name[:4]: p for p in migration_files(directory)}
    if not _has_checksum_column(conn):
        return []
    changed: list[ChangedMigration] = []
    for version, recorded in conn.execute("SELECT version, checksum FROM schema_migrations ORDER BY version"):
        path = files.get(version)
        if path is None or recorded is None:
            continue
        now = file_checksum(path)
        if now != recorded:
            changed.append(ChangedMigration(path.name, recorded, now))
    return changed


def check_checksums(conn: psycopg.Connection[Any], directory: Path = MIGRATIONS_DIR) -> None:
    """Refuse applied migrations edited since (SchemaError); record the checksums of rows that have none."""
    changed = changed_migrations(conn, directory)
    if changed:
        raise SchemaError(changed_message(changed))
    files = {p.name[:4]: p for p in migration_files(directory)}
    missing = [r[0] for r in conn.execute("SELECT version FROM schema_migrations WHERE checksum IS NULL")]
    known = [(file_checksum(files[v]), v) for v in missing if v in files]
    if known:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            with conn.cursor() as cur:
                cur.executemany(
                    "UPDATE schema_migrations SET checksum = %s WHERE version = %s AND checksum IS NULL", known
                )
        log.info("recorded the checksums of %d migrations applied before checksums were kept", len(known))
