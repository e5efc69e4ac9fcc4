"""`ragchat restore` on a live server (issue 44, item 1): one restore at a time per database server, what a killed
restore left behind dropped by the next, and a target that a running ragchat (or anyone) uses refused before
anything is made. Used by db/backup.py around restore_guard's steps."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from ragchat.db.restore_guard import BackupError, Server

#: ragchat's own connections name themselves (db/pool.py's pool, the watchdog): `ragchat`, `ragchat-watchdog`
APP_NAME_PREFIX = "ragchat"
_LOCK = "ragchat.restore"
#: what a restore creates; left behind only when its process was killed (the next restore drops them)
_LEFTOVER_DATABASES = r"^ragchat_(restoring|reference)_[0-9a-f]{8}$"
_LEFTOVER_ROLES = r"^ragchat_restore_[0-9a-f]{12}$"
WORKDIR_PREFIX = "ragchat-restore-"
SETTLE_S = 3.0  # how long a just-closed session may linger before the target counts as in use


def refuse_if_in_use(server: Server, settle_s: float = SETTLE_S) -> None:
    """BackupError when other sessions use the target: the swap renames it, which PostgreSQL refuses while
    anyone is connected, and a server that kept its connections would go on with the old types' OIDs. A session
    whose client has just closed lingers in pg_stat_activity for a moment (its backend is still exiting): only
    those still there after `settle_s` count."""
    deadline = time.monotonic() + settle_s
    with server.admin() as conn:
        while True:
            names = [
                str(r[0] or "")
                for r in conn.execute(
                    "SELECT application_name FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                    (server.target,),
                )
            ]
            if not names or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
    if not names:
        return
    ours = [n for n in names if n.startswith(APP_NAME_PREFIX)]
    if ours:
        raise BackupError(
            f"the target database {server.target} is in use by other sessions of a running ragchat server or "
            f"worker ({len(ours)} connections named {', '.join(sorted(set(ours)))}): stop the server and its workers "
            "first, then restore; nothing was replaced"
        )
    said = ", ".join(sorted({n or "unnamed" for n in names}))[:300]
    raise BackupError(
        f"the target database {server.target} is in use by other sessions ({len(names)}: {said}): close them and "
        "restore again; nothing was replaced"
    )


@contextmanager
def exclusive(server: Server) -> Iterator[list[str]]:
    """Hold the server-wide restore lock (a session advisory lock: it goes with a killed process) and drop what
    a killed restore left behind; yields the names dropped. BackupError when another restore holds it."""
    with server.admin() as conn:
        row = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (_LOCK,)).fetchone()
        if row is None or not row[0]:
            raise BackupError("another ragchat restore is running on this database server: wait for it to finish")
        try:
            yield _drop_leftovers(server, conn)
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (_LOCK,))


def _drop_leftovers(server: Server, conn: psycopg.Connection[Any]) -> list[str]:
    replaced = "^" + re.escape(server.target[:40]) + "_replaced_[0-9a-f]{8}$"
    databases = [
        str(r[0])
        for r in conn.execute(
            "SELECT datname FROM pg_database WHERE datname ~ %s OR datname ~ %s ORDER BY 1",
            (_LEFTOVER_DATABASES, replaced),
        )
    ]
    for name in databases:  # FORCE: ends the sessions of a pg_restore its killed parent left running
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    roles = [str(r[0]) for r in conn.execute("SELECT rolname FROM pg_roles WHERE rolname ~ %s", (_LEFTOVER_ROLES,))]
    for role in roles:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
    return databases + roles


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def work_dir() -> Iterator[Path]:
    """A temporary directory for the extracted dump, marked with this process's id. First removes those of
    restores whose process is gone: a SIGKILL skips the cleanup and would leave a copy of the dump behind."""
    for old in Path(tempfile.gettempdir()).glob(WORKDIR_PREFIX + "*"):
        try:
            pid = int((old / "pid").read_text())
        except (OSError, ValueError):
            continue
        if not _alive(pid):
            shutil.rmtree(old, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=WORKDIR_PREFIX) as tmp:
        (Path(tmp) / "pid").write_text(str(os.getpid()))
        yield Path(tmp)
