"""Work measured instead of wall-clock time: a test that a query stays bounded asserts how many table rows it
read (Postgres's own per-transaction counters), which a busy machine does not change; the time is printed."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

_READ = """SELECT relname, seq_tup_read + coalesce(idx_tup_fetch, 0) AS n
           FROM pg_stat_xact_user_tables WHERE seq_tup_read + coalesce(idx_tup_fetch, 0) > 0"""


@dataclass
class Work:
    tables: dict[str, int] = field(default_factory=dict)  # table → rows read (sequential reads, index fetches)
    seconds: float = 0.0  # printed, never asserted

    @property
    def rows(self) -> int:
        return sum(self.tables.values())


async def _counters(conn: Any) -> dict[str, int]:
    rows = await (await conn.execute(_READ)).fetchall()
    return {str(r["relname"] if isinstance(r, dict) else r[0]): int(r["n"] if isinstance(r, dict) else r[1])
            for r in rows}  # fmt: skip


@asynccontextmanager
async def work_of(conn: Any) -> AsyncIterator[Work]:
    """The table rows read by what runs on `conn` inside the block (one transaction: Postgres keeps the
    counters per transaction)."""
    work = Work()
    async with conn.transaction():
        before = await _counters(conn)
        start = time.perf_counter()
        yield work
        work.seconds = time.perf_counter() - start
        after = await _counters(conn)
    work.tables = {t: n - before.get(t, 0) for t, n in after.items() if n > before.get(t, 0)}
