"""The embedded PostgreSQL (pgserver: PostgreSQL 16 + pgvector) used when DATABASE_URL is unset.

pgserver's own messages (initdb and pg_ctl output, restarts) go to `data_dir/logs/postgres.log`, not the
console; the server's log is `pgdata/log` (pgserver's choice). Warnings and errors still reach the console,
one line each. The database watchdog (server/db/watchdog.py) restarts the server when its postmaster dies.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

LOG_FILE = "postgres.log"  # under data_dir/logs


@dataclass
class EmbeddedPostgres:
    """A handle on a pgserver instance; `stop()` releases it (the last process out stops the server)."""

    server: Any
    uri: str
    log_path: Path | None = None

    @property
    def pgdata(self) -> Path:
        return Path(self.server.pgdata)

    def stop(self) -> None:
        try:
            self.server.cleanup()
        except Exception:  # already stopped or another process owns it
            log.debug("pgserver cleanup failed", exc_info=True)

    def restart_if_dead(self) -> bool:
        """Start the server again if its postmaster is gone (killed, crashed); True when this call started it.

        Blocking (pg_ctl waits for the server): run it in a thread. Under pgserver's inter-process lock, so of
        several processes sharing the data directory one restarts it and the others find it running.
        """
        from pgserver.utils import PostmasterInfo

        with self.server._lock:
            try:
                info = PostmasterInfo.read_from_pgdata(self.pgdata)
            except (AssertionError, ValueError, OSError):  # postmaster.pid half written: a server is starting
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


def _remove_stale_locks(pgdata: Path, info: Any) -> None:
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
    """Forwards pgserver's warnings and errors to our logger, first line only (pgserver dumps whole logs)."""

    def __init__(self, path: Path) -> None:
        super().__init__(level=logging.WARNING)
        self.path = path

    def emit(self, record: logging.LogRecord) -> None:
        try:
            first = next(iter(record.getMessage().strip().splitlines()), "")
        except Exception:  # a malformed record: say something rather than nothing
            first = str(record.msg)
        log.log(record.levelno, "postgres: %s (details in %s)", first[:300], self.path)


def _send_pgserver_log_to(path: Path) -> None:
    """pgserver's logger → `path` (once per path); it no longer propagates to the console."""
    logger = logging.getLogger("pgserver")
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


def start_embedded(data_dir: Path) -> EmbeddedPostgres:
    """Start (or attach to) the pgserver in `data_dir/pgdata`. A second process on the same dir reuses it."""
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    root = Path(data_dir).expanduser().resolve()
    log_path = root / "logs" / LOG_FILE
    _send_pgserver_log_to(log_path)
    from pgserver import get_server  # pyright: ignore[reportPrivateImportUsage]

    pgdata = root / "pgdata"
    pgdata.mkdir(parents=True, exist_ok=True)
    server = get_server(pgdata, cleanup_mode="stop")
    uri = server.get_uri()
    log.info("embedded postgres at %s (log: %s; server log: %s)", pgdata, log_path, pgdata / "log")
    return EmbeddedPostgres(server=server, uri=uri, log_path=log_path)
