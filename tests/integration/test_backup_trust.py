"""Issue 43, items 1-2: a restore trusts nothing in the file. A tampered dump (a materialized view calling
`COPY ... TO PROGRAM`, a function in an untrusted language, an allowed function's body changed) is refused and
never runs, signed or not; unsigned and foreign-signed backups need --trust-unsigned; a sparse 1 GB member is
refused before a byte of it is written; row counts that differ from the manifest are refused; a refused or
failed `--force` restore leaves the target as it was."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from ragchat.db.backup import BackupError, backup, canonical, read_backup, restore, signature, table_counts
from ragchat.db.migrate import head_version, migrate
from ragchat.vectors.store import manifest_spaces
from tests.integration import test_ops_backup

new_db = test_ops_backup.new_db  # the fixture: new, empty databases on the test server
KEY = b"a-test-key-that-is-long-enough-0123456789"
OTHER = b"another-key-that-is-long-enough-9876543210"


def _pg(name: str) -> str:
    from ragchat.db.backup import pg_tool

    return pg_tool(name)


@pytest.fixture
def drop_dir() -> Iterator[Path]:
    """Where the attack's program would write: a directory the database server's OS user can write to."""
    path = Path(tempfile.mkdtemp(prefix="ragchat-pwn-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def package(dump: bytes, rows: dict[str, int], path: Path, *, key: bytes | None, **extra: Any) -> Path:
    """A backup as its author would make it: a manifest with the dump's checksum and size recomputed."""
    manifest: dict[str, Any] = {
        "format": "ragchat-backup",
        "format_version": 2,
        "app_version": "0.0.0",
        "schema_version": head_version(),
        "created_at": "2026-01-01T00:00:00+00:00",
        "embedding_spaces": [],
        "rows": rows,
        "dump_sha256": hashlib.sha256(dump).hexdigest(),
        "dump_bytes": len(dump),
        **extra,
    }
    manifest = {k: v for k, v in manifest.items() if v is not None}
    parts = {"manifest.json": json.dumps(manifest).encode()}
    if key is not None:
        parts["signature.json"] = json.dumps(signature(manifest, key)).encode()
    parts["database.dump"] = dump
    with tarfile.open(path, "w") as tar:
        for name, data in parts.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def attacker_dump(uri: str, tmp_path: Path, evil_sql: str) -> tuple[bytes, dict[str, int]]:
    """ragchat's schema plus `evil_sql`, dumped by pg_dump (the file is what an attacker would place)."""
    migrate(uri)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(evil_sql)  # type: ignore[arg-type]
    out = tmp_path / "evil.dump"
    subprocess.run([_pg("pg_dump"), "--format=custom", "--no-owner", f"--file={out}", uri], check=True)
    return out.read_bytes(), table_counts(uri)


def filled_target(new_db: Callable[[], str], source: str, tmp_path: Path) -> str:
    """A target that already holds a restore of `source` (so --force has something to lose)."""
    target = new_db()
    restore(
        target,
        backup(source, tmp_path / "prior.backup", spaces=manifest_spaces, key=KEY) and tmp_path / "prior.backup",
        key=KEY,
    )
    return target


def test_signatures(db: str, new_db: Any, tmp_path: Path) -> None:
    signed = tmp_path / "signed.backup"
    backup(db, signed, spaces=manifest_spaces, key=KEY)
    unsigned = tmp_path / "unsigned.backup"
    backup(db, unsigned, spaces=manifest_spaces)
    with tarfile.open(signed) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        dump = tar.extractfile("database.dump").read()  # type: ignore[union-attr]
    lied = package(dump, {**manifest["rows"], "documents": 7}, tmp_path / "lied.backup", key=OTHER)

    cases = [
        (unsigned, KEY, r"is not signed: refused \(pass --trust-unsigned"),
        (signed, OTHER, "signed with another key"),
        (signed, None, "no BACKUP_KEY or BACKUP_KEY_FILE is set"),
        (lied, KEY, "signed with another key"),
    ]
    for path, key, message in cases:
        target = new_db()
        with pytest.raises(BackupError, match=message):
            restore(target, path, key=key)
        assert table_counts(target) == {}, path

    assert restore(new_db(), signed, key=KEY)["signed"] is True
    assert restore(new_db(), unsigned, trust_unsigned=True)["signed"] is False
    # the signature covers the manifest, and through its checksum the dump: a changed byte is refused
    with tarfile.open(signed) as tar:
        sig = tar.extractfile("signature.json").read()  # type: ignore[union-attr]
    tampered = dict(manifest, created_at="2030-01-01T00:00:00+00:00")
    assert json.loads(sig)["hmac"] != signature(tampered, KEY)["hmac"]
    assert canonical(manifest) != canonical(tampered)


@pytest.mark.slow  # a reference database is migrated per restore: ~40 s each on a busy machine
def test_format_1_backup_restores_with_trust_unsigned(db: str, new_db: Any, tmp_path: Path) -> None:
    """A backup of an earlier release: format 1, unsigned, no dump_bytes."""
    plain = tmp_path / "plain.backup"
    made = backup(db, plain, spaces=manifest_spaces)
    with tarfile.open(plain) as tar:
        dump = tar.extractfile("database.dump").read()  # type: ignore[union-attr]
    old = package(dump, made.rows, tmp_path / "v1.backup", key=None, format_version=1, dump_bytes=None)
    with pytest.raises(BackupError, match="not signed"):
        restore(new_db(), old, key=KEY)
    target = new_db()
    assert restore(target, old, key=KEY, trust_unsigned=True)["format_version"] == 1
    assert table_counts(target) == table_counts(db)


MATVIEW_ATTACK = """
CREATE FUNCTION pwn() RETURNS int LANGUAGE plpgsql AS $f$
BEGIN EXECUTE 'COPY (SELECT 1) TO PROGRAM ''id > {file}; cat > /dev/null'''; RETURN 1; END $f$;
CREATE MATERIALIZED VIEW innocent AS SELECT pwn() AS x;
"""


def test_materialized_view_running_a_program_is_refused_and_never_runs(
    new_db: Any, tmp_path: Path, drop_dir: Path
) -> None:
    pwned = drop_dir / "pwned"
    evil, rows = attacker_dump(new_db(), tmp_path, MATVIEW_ATTACK.format(file=pwned))
    pwned.unlink()  # written once while the attacker made the view

    # the control: restored the old way (pg_restore as the superuser), the dump runs its command
    control = new_db()
    subprocess.run([_pg("pg_restore"), "--no-owner", f"--dbname={control}", str(tmp_path / "evil.dump")])
    assert pwned.exists(), "the attack is real"
    pwned.unlink()

    signed = package(evil, rows, tmp_path / "signed.backup", key=KEY)
    unsigned = package(evil, rows, tmp_path / "unsigned.backup", key=None)
    for path, kwargs, message in [
        (signed, {"key": KEY}, r"not ragchat's.*FUNCTION public.pwn\(\).*MATERIALIZED VIEW public.innocent"),
        (unsigned, {"trust_unsigned": True}, "MATERIALIZED VIEW DATA public.innocent"),
        (unsigned, {"key": KEY}, "not signed"),
    ]:
        target = new_db()
        with pytest.raises(BackupError, match=message):
            restore(target, path, **kwargs)
        assert not pwned.exists() and table_counts(target) == {}


@pytest.mark.slow  # a reference database is migrated per restore: ~40 s each on a busy machine
def test_a_function_with_an_allowed_name_cannot_run_a_program(
    db: str, new_db: Any, tmp_path: Path, drop_dir: Path
) -> None:
    """Past the name filter: bm25_shard's body runs COPY TO PROGRAM and a CHECK on `users` calls it for
    every restored row. pg_restore's role has no right to run programs, so the restore fails and nothing ran;
    a `--force` target keeps its data."""
    pwned = drop_dir / "pwned"
    evil_sql = f"""
    CREATE OR REPLACE FUNCTION bm25_shard() RETURNS smallint LANGUAGE plpgsql AS $f$
    BEGIN EXECUTE 'COPY (SELECT 1) TO PROGRAM ''id > {pwned}; cat > /dev/null'''; RETURN 1; END $f$;
    ALTER TABLE users ADD CONSTRAINT users_check CHECK (bm25_shard() > 0);
    """
    evil, rows = attacker_dump(new_db(), tmp_path, evil_sql)
    assert rows["users"] >= 1
    pwned.unlink(missing_ok=True)
    target = filled_target(new_db, db, tmp_path)
    before = table_counts(target)
    with pytest.raises(BackupError, match=r"(?s)pg_restore failed.*permission denied|must be superuser"):
        restore(target, package(evil, rows, tmp_path / "x.backup", key=KEY), key=KEY, force=True)
    assert not pwned.exists()
    assert table_counts(target) == before  # --force: the target is untouched


@pytest.mark.slow  # a reference database is migrated per restore: ~40 s each on a busy machine
def test_untrusted_language_and_changed_bodies_are_refused(db: str, new_db: Any, tmp_path: Path) -> None:
    cases = {
        # an unknown function in an untrusted language: refused by name
        "CREATE FUNCTION backdoor() RETURNS int LANGUAGE internal AS 'pg_backend_pid'": "FUNCTION public.backdoor()",
        # an allowed name in an untrusted language: the restore role may not create it
        "CREATE OR REPLACE FUNCTION bm25_shard() RETURNS smallint LANGUAGE internal AS 'pg_backend_pid'": (
            "permission denied for language internal"
        ),
        # an allowed trigger function whose body would run later as the app's user: refused after the restore
        "CREATE OR REPLACE FUNCTION audit_log_guard() RETURNS trigger LANGUAGE plpgsql AS "
        "$f$BEGIN RETURN OLD; END$f$": "not ragchat's: function CREATE OR REPLACE FUNCTION public.audit_log_guard",
    }
    target = filled_target(new_db, db, tmp_path)
    before = table_counts(target)
    for evil_sql, message in cases.items():
        evil, rows = attacker_dump(new_db(), tmp_path, evil_sql)
        with pytest.raises(BackupError, match=message):
            restore(target, package(evil, rows, tmp_path / "x.backup", key=KEY), key=KEY, force=True)
        assert table_counts(target) == before, evil_sql
    with psycopg.connect(db) as conn:
        roles = conn.execute("SELECT count(*) FROM pg_roles WHERE rolname LIKE 'ragchat_restore_%'").fetchone()
        dbs = conn.execute("SELECT count(*) FROM pg_database WHERE datname LIKE 'ragchat_%'").fetchone()
    assert roles == (0,) and dbs == (0,)  # the throwaway role and databases are gone


@pytest.mark.slow  # a reference database is migrated per restore: ~40 s each on a busy machine
def test_row_counts_are_checked(db: str, new_db: Any, tmp_path: Path) -> None:
    good = tmp_path / "good.backup"
    made = backup(db, good, spaces=manifest_spaces, key=KEY)
    with tarfile.open(good) as tar:
        dump = tar.extractfile("database.dump").read()  # type: ignore[union-attr]
    lied = package(dump, {**made.rows, "users": made.rows["users"] + 2}, tmp_path / "lied.backup", key=KEY)
    target = new_db()
    with pytest.raises(
        BackupError, match=rf"users: {made.rows['users'] + 2} in the manifest, {made.rows['users']} restored"
    ):
        restore(target, lied, key=KEY)
    assert table_counts(target) == {}


def _sparse_backup(tmp_path: Path, manifest: dict[str, Any]) -> Path:
    work = tmp_path / "sparse"
    work.mkdir(exist_ok=True)
    (work / "manifest.json").write_text(json.dumps(manifest))
    with (work / "database.dump").open("wb") as f:
        f.truncate(1 << 30)  # 1 GB of holes
    out = tmp_path / f"sparse-{len(list(tmp_path.iterdir()))}.backup"
    subprocess.run(["tar", "--sparse", "-cf", str(out), "-C", str(work), "manifest.json", "database.dump"], check=True)
    return out


def test_sparse_member_is_refused_before_it_is_written(new_db: Any, tmp_path: Path) -> None:
    base = {
        "format": "ragchat-backup",
        "app_version": "0.0.0",
        "schema_version": head_version(),
        "created_at": "x",
        "embedding_spaces": [],
        "rows": {},
        "dump_sha256": "0" * 64,
    }
    for manifest in (
        {**base, "format_version": 1},  # an older manifest: no dump_bytes
        {**base, "format_version": 2, "dump_bytes": 1 << 30},  # says 1 GB, the file is 10 KB
    ):
        archive = _sparse_backup(tmp_path, manifest)
        assert archive.stat().st_size < 64 * 1024
        work = tmp_path / f"work-{manifest['format_version']}"
        work.mkdir()
        started = time.monotonic()
        with pytest.raises(BackupError, match="refused before extracting it"):
            read_backup(archive, work, trust_unsigned=True)
        assert time.monotonic() - started < 2
        assert sum(p.stat().st_size for p in work.iterdir()) == 0
        with pytest.raises(BackupError, match="refused before extracting it"):
            restore(new_db(), archive, trust_unsigned=True)


@pytest.mark.slow  # a reference database is migrated per restore: ~40 s each on a busy machine
def test_target_in_use_is_left_alone(db: str, new_db: Any, tmp_path: Path) -> None:
    archive = tmp_path / "a.backup"
    backup(db, archive, spaces=manifest_spaces, key=KEY)
    target = filled_target(new_db, db, tmp_path)
    before = table_counts(target)
    with psycopg.connect(target):  # a running server's session
        with pytest.raises(BackupError, match="in use by other sessions"):
            restore(target, archive, key=KEY, force=True)
    assert table_counts(target) == before
    with psycopg.connect(make_conninfo(target, dbname="postgres")) as conn:
        assert conn.execute("SELECT count(*) FROM pg_database WHERE datname LIKE 'ragchat_%'").fetchone() == (0,)
