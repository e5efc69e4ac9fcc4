"""`ragchat backup FILE` / `ragchat restore FILE`: the whole database (documents' original files included: they
live in `document_blobs`) as one `pg_dump` archive, plus a manifest and its signature, in one tar file.

The dump is consistent (pg_dump reads one snapshot, the one the manifest's row counts were read in). The
manifest says what made it: the app version, the schema version, the embedding spaces, row counts, and the
dump's size and SHA-256. With a key (BACKUP_KEY or BACKUP_KEY_FILE) the manifest is signed: an HMAC-SHA256 of
its canonical JSON, which names the dump's size and hash, so the signature covers both.

A restore trusts nothing in the file: before anything is written it checks the tar's members against the
manifest's sizes and the signature (unsigned or foreign-signed: refused unless `trust_unsigned`), then the
dump's checksum; then `restore_guard` restores it as a role without rights into a new database, compares the
result with ragchat's own schema and the manifest's row counts, migrates it, and only then swaps it in.

The PostgreSQL client tools are chosen by db/pg_tools.py (the newest found, fed as the target's version takes
it), so a backup moves between PostgreSQL 13-18 and the embedded engine (issue 44). A restore holds a
server-wide lock, first drops what a killed restore left behind, and refuses a target that a running ragchat
(or anyone) is connected to.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import re
import secrets
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
from psycopg.conninfo import make_conninfo
from pydantic import SecretStr

from ragchat import __version__
from ragchat.db import restore_guard as guard
from ragchat.db import restore_lock
from ragchat.db.capabilities import modern_pgvector
from ragchat.db.migrate import head_version, migrate
from ragchat.db.pg_tools import pg_tool, run_restore, server_major
from ragchat.db.restore_guard import BackupError

FORMAT = "ragchat-backup"
FORMAT_VERSION = 2  # 2: signed (when a key is set), counts from the dump's snapshot; 1 is still read
READS = (1, 2)
MANIFEST = "manifest.json"
SIGNATURE = "signature.json"
DUMP = "database.dump"
MAX_MANIFEST_BYTES = 1 << 20
MAX_MEMBERS = 8
KEY_MIN_CHARS = 32

DescribeSpaces = Callable[[psycopg.Connection[Any]], list[dict[str, Any]]]
#: an embedding space's halfvec HNSW index (vectors/store.py's `index_relname`): pgvector >= 0.8 only; restored
#: onto an older pgvector it is left out, and the app builds the space's `vector` index at start instead
HALFVEC_INDEX = re.compile(r"^chunk_embeddings_hnsw_\d+_half$")
__all__ = ["BackupError", "backup", "pg_tool", "read_backup", "restore", "table_counts"]


# ---- the key ---------------------------------------------------------------------------------------------------
def new_key() -> str:
    return secrets.token_urlsafe(32)


def load_key(key: SecretStr | None, key_file: Path | None) -> bytes | None:
    """BACKUP_KEY, else the first line of BACKUP_KEY_FILE; None when neither is set."""
    text = key.get_secret_value() if key is not None else None
    if text is None and key_file is not None:
        try:
            text = key_file.expanduser().read_text().strip()
        except OSError as exc:
            raise BackupError(f"BACKUP_KEY_FILE {key_file} cannot be read: {exc.strerror or exc}") from exc
    if text is None or not text.strip():
        return None
    if len(text.strip()) < KEY_MIN_CHARS:
        raise BackupError(
            f"the backup key is too short ({KEY_MIN_CHARS}+ characters): make one with `ragchat backup-key`"
        )
    return text.strip().encode()


def key_id(key: bytes) -> str:
    """Names a key without giving it away (shown when a backup was signed with another one)."""
    return hmac.new(key, b"ragchat backup key id", hashlib.sha256).hexdigest()[:12]


def canonical(manifest: dict[str, Any]) -> bytes:
    return json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def signature(manifest: dict[str, Any], key: bytes) -> dict[str, str]:
    mac = hmac.new(key, canonical(manifest), hashlib.sha256).hexdigest()
    return {"alg": "HMAC-SHA256", "key_id": key_id(key), "hmac": mac}


def check_signature(source: Path, manifest: dict[str, Any], signed: Any, key: bytes | None, trust: bool) -> bool:
    """True when signed with `key`; False for an unsigned backup let through by `trust`; else BackupError."""
    again = " (pass --trust-unsigned to restore it anyway, if you know where it came from)"
    if not isinstance(signed, dict) or not isinstance(signed.get("hmac"), str):  # pyright: ignore[reportUnknownMemberType]
        if trust:
            return False
        raise BackupError(f"{source} is not signed: refused{again}")
    if key is None:
        if trust:
            return False
        raise BackupError(
            f"{source} is signed, but no BACKUP_KEY or BACKUP_KEY_FILE is set to check it: refused{again}"
        )
    expected = signature(manifest, key)["hmac"]
    if hmac.compare_digest(expected.encode(), str(signed["hmac"]).encode()):  # pyright: ignore[reportUnknownArgumentType]
        return True
    if trust:
        return False
    said = str(signed.get("key_id", "?"))[:24]  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    raise BackupError(
        f"{source} was signed with another key (key id {said}; yours is {key_id(key)}) or altered: refused{again}"
    )


# ---- backup ------------------------------------------------------------------------------------------------------
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


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime = len(data), int(datetime.now(UTC).timestamp())
    tar.addfile(info, io.BytesIO(data))


def backup(
    uri: str, target: Path, *, spaces: DescribeSpaces, bin_dir: Path | None = None, key: bytes | None = None
) -> Manifest:
    """Dump the database at `uri` into the tar file `target` (written beside it, then renamed), signed with `key`
    when given. `spaces` names the embedding spaces for the manifest (the vectors domain's `manifest_spaces`: it
    owns that table). The counts, spaces and schema version are read in the snapshot pg_dump dumps."""
    with tempfile.TemporaryDirectory(prefix="ragchat-backup-") as tmp, psycopg.connect(uri) as conn:
        conn.isolation_level, conn.read_only = psycopg.IsolationLevel.REPEATABLE_READ, True
        snapshot = str(conn.execute("SELECT pg_export_snapshot()").fetchone()[0])  # type: ignore[index]
        rows = _counts(conn)
        embedding_spaces = spaces(conn)
        schema = None
        if "schema_migrations" in rows:
            schema = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]  # type: ignore[index]
        dump = Path(tmp) / DUMP
        result = subprocess.run(
            [
                pg_tool("pg_dump", bin_dir),
                "--format=custom",
                "--no-owner",
                "--no-privileges",
                f"--snapshot={snapshot}",
                f"--file={dump}",
                uri,
            ],
            capture_output=True,
            text=True,
        )
        conn.rollback()
        if result.returncode != 0:
            raise BackupError(f"pg_dump failed: {result.stderr.strip()[:2000]}")
        digest = hashlib.sha256()
        with dump.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        manifest = Manifest(
            app_version=__version__,
            schema_version=schema,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            embedding_spaces=embedding_spaces,
            rows=rows,
            dump_sha256=digest.hexdigest(),
            dump_bytes=dump.stat().st_size,
        )
        partial = target.with_name(target.name + ".partial")
        with tarfile.open(partial, "w") as tar:
            _add(tar, MANIFEST, json.dumps(manifest.to_json(), indent=2).encode())
            if key is not None:
                _add(tar, SIGNATURE, json.dumps(signature(manifest.to_json(), key)).encode())
            tar.add(dump, arcname=DUMP)
        partial.replace(target)
    return manifest


# ---- reading a backup ------------------------------------------------------------------------------------------
def _small_json(tar: tarfile.TarFile, entry: tarfile.TarInfo | None, what: str) -> Any:
    if entry is None:
        return None
    if not entry.isfile() or entry.issparse() or entry.size > MAX_MANIFEST_BYTES:
        raise BackupError(f"{what}: not a small file")
    try:
        return json.loads(tar.extractfile(entry).read())  # type: ignore[union-attr]
    except (ValueError, tarfile.TarError, OSError) as exc:
        raise BackupError(f"{what}: unreadable ({exc})") from exc


def read_backup(
    source: Path, workdir: Path, *, key: bytes | None = None, trust_unsigned: bool = False
) -> tuple[dict[str, Any], Path]:
    """The manifest and the extracted dump, every check done (nothing touched yet). The dump member's size is
    checked against the manifest and the file itself before a byte of it is written."""
    not_ours = f"{source} is not a ragchat backup (made by `ragchat backup`)"
    damaged = f"{source} is truncated or damaged"
    try:
        tar = tarfile.open(source, "r:")
    except (tarfile.TarError, OSError) as exc:
        raise BackupError(f"{not_ours}: {exc}") from exc
    with tar:
        members: dict[str, tarfile.TarInfo] = {}
        try:
            while (member := tar.next()) is not None:
                if len(members) >= MAX_MEMBERS or member.name in members:
                    raise BackupError(f"{not_ours}: unexpected members ({member.name!r})")
                members[member.name] = member
        except (tarfile.TarError, OSError) as exc:
            raise BackupError(f"{damaged}: {exc}") from exc
        if members.get(MANIFEST) is None:
            raise BackupError(f"{not_ours}: no manifest")
        manifest = _small_json(tar, members.get(MANIFEST), f"{not_ours}: its manifest")
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:  # pyright: ignore[reportUnknownMemberType]
            raise BackupError(f"{not_ours}: its manifest is not a ragchat manifest")
        manifest = dict[str, Any](manifest)  # pyright: ignore[reportUnknownArgumentType]
        if manifest.get("format_version") not in READS:
            raise BackupError(
                f"{source} is a ragchat backup of format {manifest.get('format_version')!r}; this ragchat "
                f"{__version__} reads formats {', '.join(map(str, READS))}"
            )
        signed = _small_json(tar, members.get(SIGNATURE), f"{damaged}: its signature")
        manifest["signed"] = check_signature(source, manifest, signed, key, trust_unsigned)
        schema = manifest.get("schema_version")
        if schema is not None and (not isinstance(schema, str) or schema > head_version()):
            raise BackupError(
                f"{source} was made by ragchat {manifest.get('app_version')} with schema version {schema}, newer "
                f"than this ragchat {__version__} knows (schema {head_version()}): restore it with that version"
            )
        entry = members.get(DUMP)
        if entry is None or not entry.isfile():
            raise BackupError(f"{damaged}: no database dump inside")
        declared, on_disk = manifest.get("dump_bytes"), source.stat().st_size
        if entry.issparse() or entry.size > on_disk or (isinstance(declared, int) and entry.size != declared):
            raise BackupError(
                f"{damaged}: its dump member says {entry.size:,} bytes"
                + (" (sparse)" if entry.issparse() else "")
                + (f", the manifest {declared:,}" if isinstance(declared, int) else "")
                + f", the file is {on_disk:,}: refused before extracting it"
            )
        dump = workdir / DUMP
        digest, written = hashlib.sha256(), 0
        try:
            src = tar.extractfile(entry)
            assert src is not None
            with dump.open("wb") as out:
                while block := src.read(min(1 << 20, entry.size - written + 1)):
                    written += len(block)
                    if written > entry.size:
                        raise BackupError(f"{damaged}: the dump is longer than its member says")
                    digest.update(block)
                    out.write(block)
        except (tarfile.TarError, OSError) as exc:
            raise BackupError(f"{damaged}: {exc}") from exc
        if not hmac.compare_digest(digest.hexdigest(), str(manifest.get("dump_sha256"))):
            raise BackupError(f"{damaged}: the dump's checksum does not match its manifest")
    return manifest, dump


def is_empty(uri: str) -> bool:
    with psycopg.connect(uri) as conn:
        row = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
        return row is None or int(row[0]) == 0


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True)


def restore(
    uri: str,
    source: Path,
    *,
    force: bool = False,
    bin_dir: Path | None = None,
    key: bytes | None = None,
    trust_unsigned: bool = False,
) -> dict[str, Any]:
    """Restore `source` into the database at `uri` and migrate it to this code's schema; returns the manifest
    (with `signed`). The target is replaced only once the restored copy has passed every check."""
    with restore_lock.work_dir() as work:
        manifest, dump = read_backup(source, work, key=key, trust_unsigned=trust_unsigned)
        server = guard.inspect_server(uri)
        restore_lock.refuse_if_in_use(server)
        if not force and not is_empty(uri):
            raise BackupError(
                "the target database is not empty: restore into an empty data directory or DATABASE_URL, or "
                "pass --force to replace everything in it"
            )
        with restore_lock.exclusive(server):
            _restore(server, manifest, dump, work, bin_dir)
    return manifest


def _restore(server: guard.Server, manifest: dict[str, Any], dump: Path, work: Path, bin_dir: Path | None) -> None:
    uri = server.uri
    target_major = server_major(uri)
    with server.admin() as conn:
        if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() is None:
            raise BackupError(
                f"the target server (PostgreSQL {target_major}) has no pgvector extension, which ragchat needs: "
                "install it there (e.g. the postgresql-NN-pgvector package), then restore again; nothing was replaced"
            )
    pg_restore = pg_tool("pg_restore", bin_dir)
    entries = guard.toc(pg_restore, dump)
    tag = secrets.token_hex(4)
    reference, scratch = f"ragchat_reference_{tag}", f"ragchat_restoring_{tag}"
    restorer: guard.Restorer | None = None
    try:
        guard.build_reference(server, reference, manifest.get("schema_version"), work)
        schema_only = work / "reference.dump"
        ref_uri = make_conninfo(uri, dbname=reference)
        made = _run([pg_tool("pg_dump", bin_dir), "--format=custom", "--schema-only", f"--file={schema_only}", ref_uri])
        if made.returncode != 0:
            raise BackupError(f"pg_dump of the reference schema failed: {made.stderr.strip()[:1000]}")
        keep = guard.filter_toc(entries, guard.toc(pg_restore, schema_only))
        restorer = guard.prepare_scratch(server, scratch)
        with guard.connect_catalog(uri, scratch) as conn:
            row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        if not modern_pgvector(str(row[0]) if row else None):
            keep = [e for e in keep if not (e.desc == "INDEX" and HALFVEC_INDEX.match(e.name))]
        listing = work / "restore.list"
        listing.write_text("".join(e.line + "\n" for e in keep))
        run_restore(
            [pg_restore, "--no-owner", "--no-privileges", f"--use-list={listing}"],
            dump,
            restorer.conninfo,
            restorer.password,
            target_major,
        )
        guard.compare_definitions(guard.definitions(uri, scratch), guard.definitions(uri, reference))
        guard.compare_counts(guard.counts(uri, scratch), manifest.get("rows"))
        guard.hand_over(server, scratch, restorer)
        migrate(make_conninfo(uri, dbname=scratch))
        guard.swap_in(server, scratch)
    except BaseException:
        server.drop_database(scratch)
        if restorer is not None and restorer.role is not None:
            guard.drop_role(server, restorer.role)
        raise
    finally:
        server.drop_database(reference)
