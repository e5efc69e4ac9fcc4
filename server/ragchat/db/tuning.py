"""Memory for the embedded PostgreSQL: `shared_buffers` sized from the data and the machine.

The engine's default, 128 MB, is right for a small library and wrong for a large one: at a million chunks the
HNSW index alone is 1.1 GB and the chunk table 1.3 GB, so every search re-reads pages through the kernel
(bench/search.py, 1M chunks: hybrid p95 36 ms with 128 MB, 22 ms with 3.2 GB; the keyword arm's database
time halves). `EMBEDDED_SHARED_BUFFERS=auto` (the default) asks for the cluster's size on disk, at least the
engine's 128 MB and at most a quarter of the memory this process may use (the cgroup limit in a container).

The value is written with `ALTER SYSTEM` (PostgreSQL's own `postgresql.auto.conf`) and needs a restart. It is
changed only when the wanted size is at least twice or at most half the current one, so a growing library
restarts the engine a few times in its life, not at every start. The process that started the server restarts
it at once (nobody else is connected yet: it holds the data directory's lock); a process that found it running
leaves it to the next start. A size the operator gives (`2GB`) is applied the same way; `off` leaves the
engine's configuration alone.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from ragchat.settings import ENGINE_DEFAULT_MB, parse_size_mb

log = logging.getLogger(__name__)

MB = 1024 * 1024


@dataclass(frozen=True)
class BufferPlan:
    current_mb: int
    wanted_mb: int
    reason: str

    @property
    def change(self) -> bool:
        return self.wanted_mb >= 2 * self.current_mb or 2 * self.wanted_mb <= self.current_mb


def memory_limit_bytes(cgroup_root: Path = Path("/sys/fs/cgroup")) -> int:
    """Physical memory, or the cgroup v2/v1 limit when it is lower."""
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for name in ("memory.max", "memory/memory.limit_in_bytes"):
        try:
            raw = (cgroup_root / name).read_text().strip()
        except OSError:
            continue
        if raw.isdigit():
            total = min(total, int(raw))
    return total


def auto_mb(cluster_bytes: int, memory_bytes: int) -> int:
    """As much as the data, between the engine's default and a quarter of memory (PostgreSQL's own advice for
    a dedicated machine), in 128 MB steps."""
    data = -(-cluster_bytes // (128 * MB)) * 128  # rounded up
    ceiling = memory_bytes // 4 // MB // 128 * 128  # rounded down
    return max(ENGINE_DEFAULT_MB, min(data, ceiling))


def plan(conn: psycopg.Connection[tuple[object, ...]], setting: str, memory_bytes: int) -> BufferPlan:
    row = conn.execute("SELECT pg_size_bytes(current_setting('shared_buffers')) / %s", (MB,))
    current = int(row.fetchone()[0])  # type: ignore[index]  # always there
    asked = parse_size_mb(setting)
    if asked is not None:  # never more than half of memory: a server that cannot allocate it would not start
        return BufferPlan(current, min(asked, memory_bytes // 2 // MB), f"EMBEDDED_SHARED_BUFFERS={setting}")
    cluster = int(conn.execute("SELECT sum(pg_database_size(oid)) FROM pg_database").fetchone()[0])  # type: ignore[index]
    wanted = auto_mb(cluster, memory_bytes)
    return BufferPlan(current, wanted, f"auto: {cluster // MB} MB of data, {memory_bytes // MB} MB of memory")


def tune_shared_buffers(uri: str, setting: str) -> BufferPlan | None:
    """ALTER SYSTEM when the plan says so; the plan, or None with `off`. The caller restarts the server."""
    if setting.strip().lower() == "off":
        return None
    with psycopg.connect(uri, autocommit=True) as conn:
        p = plan(conn, setting, memory_limit_bytes())
        if p.change:
            conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(f"{p.wanted_mb}MB")))
            conn.execute("SELECT pg_reload_conf()")  # pg_settings.pending_restart then tells an operator
            log.info("embedded postgres shared_buffers %d MB -> %d MB (%s)", p.current_mb, p.wanted_mb, p.reason)
        else:
            log.info("embedded postgres shared_buffers %d MB (%s: %d MB wanted)", p.current_mb, p.reason, p.wanted_mb)
    return p


def forget_shared_buffers(pgdata: Path) -> None:
    """Take our ALTER SYSTEM line out of `postgresql.auto.conf` while the server is down (it did not start with
    it), so the next start uses the engine's default again."""
    conf = pgdata / "postgresql.auto.conf"
    lines = conf.read_text().splitlines(keepends=True)
    conf.write_text("".join(line for line in lines if not line.lstrip().startswith("shared_buffers")))
