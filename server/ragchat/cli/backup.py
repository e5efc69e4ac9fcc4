"""`ragchat backup FILE`, `ragchat restore FILE [--force] [--trust-unsigned]` and `ragchat backup-key [FILE]`
(server/ragchat/db/backup.py)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ragchat.cli.common import where
from ragchat.db.backup import BackupError, backup, load_key, new_key, restore
from ragchat.db.pool import open_database
from ragchat.settings import Settings
from ragchat.vectors.store import manifest_spaces


def backup_command(settings: Settings, args: argparse.Namespace) -> int:
    key = load_key(settings.server.backup_key, settings.server.backup_key_file)
    database = open_database(settings.database)
    try:
        manifest = backup(
            database.uri, Path(args.file), spaces=manifest_spaces, bin_dir=settings.server.pg_bin_dir, key=key
        )
    finally:
        database.close()
    documents = manifest.rows.get("documents", 0)
    print(
        f"backed up {where(settings)} to {args.file}: schema {manifest.schema_version}, {documents} documents, "
        f"{manifest.dump_bytes:,} bytes, {'signed' if key else 'UNSIGNED'}"
    )
    if key is None:
        print(
            "warning: no BACKUP_KEY or BACKUP_KEY_FILE is set, so this backup is unsigned and restores only with "
            "--trust-unsigned; make a key with `ragchat backup-key FILE` (docs/operator/backup.md)",
            file=sys.stderr,
        )
    return 0


def restore_command(settings: Settings, args: argparse.Namespace) -> int:
    key = load_key(settings.server.backup_key, settings.server.backup_key_file)
    database = open_database(settings.database)
    try:
        manifest = restore(
            database.uri,
            Path(args.file),
            force=args.force,
            bin_dir=settings.server.pg_bin_dir,
            key=key,
            trust_unsigned=args.trust_unsigned,
        )
    finally:
        database.close()
    print(
        f"restored {args.file} (ragchat {manifest['app_version']}, schema {manifest['schema_version']}, "
        f"made {manifest['created_at']}, {'signature checked' if manifest['signed'] else 'UNSIGNED, trusted'}) "
        f"into {where(settings)}"
    )
    return 0


def backup_key_command(settings: Settings, args: argparse.Namespace) -> int:
    key = new_key()
    if args.file is None:
        print(key)
        return 0
    path = Path(args.file).expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise BackupError(f"{path} exists: a key is not overwritten (backups signed with it need it)") from None
    with os.fdopen(fd, "w") as f:
        f.write(key + "\n")
    print(
        f"wrote a new backup key to {path} (mode 600): set BACKUP_KEY_FILE={path}, and keep a copy apart from "
        "the backups"
    )
    return 0


def add_commands(sub: Any) -> None:
    b = sub.add_parser("backup", help="write the database (documents' files included) and a manifest to FILE")
    b.add_argument("file", metavar="FILE", help="the backup file to write (a tar: pg_dump, manifest, signature)")
    b.set_defaults(func=backup_command)
    r = sub.add_parser(
        "restore",
        help="restore a backup into an empty data directory or DATABASE_URL (stop the server and workers first)",
    )
    r.add_argument("file", metavar="FILE", help="a file written by `ragchat backup`")
    r.add_argument("--force", action="store_true", help="replace everything in a database that is not empty")
    r.add_argument(
        "--trust-unsigned",
        action="store_true",
        help="restore a backup that is unsigned (older releases, no key set) or signed with another key",
    )
    r.set_defaults(func=restore_command)
    k = sub.add_parser("backup-key", help="make a new key to sign backups with (BACKUP_KEY / BACKUP_KEY_FILE)")
    k.add_argument("file", metavar="FILE", nargs="?", help="write it to FILE (mode 600) instead of printing it")
    k.set_defaults(func=backup_key_command)
