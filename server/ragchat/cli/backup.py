"""`ragchat backup FILE` and `ragchat restore FILE [--force]` (server/ragchat/db/backup.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ragchat.cli.common import where
from ragchat.db.backup import backup, restore
from ragchat.db.pool import open_database
from ragchat.settings import Settings
from ragchat.vectors.store import manifest_spaces


def backup_command(settings: Settings, args: argparse.Namespace) -> int:
    database = open_database(settings)
    try:
        manifest = backup(database.uri, Path(args.file), spaces=manifest_spaces, bin_dir=settings.pg_bin_dir)
    finally:
        database.close()
    documents = manifest.rows.get("documents", 0)
    print(
        f"backed up {where(settings)} to {args.file}: schema {manifest.schema_version}, {documents} documents, "
        f"{manifest.dump_bytes:,} bytes"
    )
    return 0


def restore_command(settings: Settings, args: argparse.Namespace) -> int:
    database = open_database(settings)
    try:
        manifest = restore(database.uri, Path(args.file), force=args.force, bin_dir=settings.pg_bin_dir)
    finally:
        database.close()
    print(
        f"restored {args.file} (ragchat {manifest['app_version']}, schema {manifest['schema_version']}, "
        f"made {manifest['created_at']}) into {where(settings)}"
    )
    return 0


def add_commands(sub: Any) -> None:
    b = sub.add_parser("backup", help="write the database (documents' files included) and a manifest to FILE")
    b.add_argument("file", metavar="FILE", help="the backup file to write (a tar: pg_dump and a manifest)")
    b.set_defaults(func=backup_command)
    r = sub.add_parser("restore", help="restore a backup into an empty data directory or DATABASE_URL")
    r.add_argument("file", metavar="FILE", help="a file written by `ragchat backup`")
    r.add_argument("--force", action="store_true", help="replace everything in a database that is not empty")
    r.set_defaults(func=restore_command)
