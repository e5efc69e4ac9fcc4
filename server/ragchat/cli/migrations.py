"""`ragchat migrate [--status] [--json]`: apply the pending schema migrations, or say where the database stands.

`serve`, `worker` and every command migrate at start anyway; this is for upgrades done as a separate step
(before starting the new version everywhere) and for a look without changing anything.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import psycopg

from ragchat import __version__
from ragchat.cli.common import where
from ragchat.db.migrate import (
    SchemaError,
    applied_versions,
    changed_message,
    changed_migrations,
    check_not_newer,
    migrate,
    migration_files,
)
from ragchat.db.migrate import ensure_vector_extension as ensure_extension
from ragchat.db.pool import open_database
from ragchat.settings import Settings


def migrate_command(settings: Settings, args: argparse.Namespace) -> int:
    database = open_database(settings.database)
    try:
        done = applied_versions(database.uri)
        current = done[-1][0] if done else None
        files = migration_files()
        head = files[-1].name[:4] if files else "0000"
        pending = [p.name for p in files if p.name[:4] not in {v for v, _ in done}]
        if args.status:
            with psycopg.connect(database.uri, autocommit=True) as conn:
                changed = changed_migrations(conn) if done else []
            if args.json:
                status = {
                    "database": where(settings),
                    "schema_version": current,
                    "code_schema_version": head,
                    "version": __version__,
                    "applied": [name for _, name in done],
                    "pending": pending,
                    "changed": [c.name for c in changed],
                }
                print(json.dumps(status, indent=2))
            else:
                print(f"database: {where(settings)}; schema version {current or 'none (empty)'}")
                print(f"this ragchat {__version__}: schema version {head}")
            try:
                check_not_newer(current)
                if changed:
                    raise SchemaError(changed_message(changed))
            except SchemaError as exc:
                print(f"ragchat: {exc.message}", file=sys.stderr)
                return 2
            if not args.json:
                print(f"{len(pending)} pending: " + ", ".join(pending) if pending else "up to date")
            return 0
        print(f"database: {where(settings)}; schema version {current or 'none (empty)'}")
        print(f"this ragchat {__version__}: schema version {head}")
        ensure_extension(database.uri)
        applied = migrate(database.uri)
        print(f"applied {len(applied)}: " + ", ".join(applied) if applied else "up to date: nothing to apply")
        return 0
    finally:
        database.close()


def add_commands(sub: Any) -> None:
    m = sub.add_parser("migrate", help="apply pending database migrations (--status: only show them)")
    m.add_argument("--status", action="store_true", help="show the schema versions and pending migrations")
    m.add_argument("--json", action="store_true", help="with --status: print it as JSON")
    m.set_defaults(func=migrate_command)
