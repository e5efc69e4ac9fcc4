"""Rate limits shared by every server process: fixed one-window counters in Postgres (an UNLOGGED table).

One upsert per check. `limits`/litestar's rate-limit middleware keep counters in memory, Redis or
Memcached; ragchat's only shared state is Postgres, and several server processes behind a load balancer
must see the same counts, so the counter is one SQL statement here.

Leases bound work running at once (e.g. whole-document summaries per user): one row per running piece of
work in the same table, `window_start` its expiry, renewed while it runs and deleted when it ends. A process
that dies leaves rows that stop counting once they expire. Taking one counts the live rows under a
transaction-level advisory lock on the key (safe behind PgBouncer in transaction mode).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
from datetime import datetime

import anyio

from ragchat.core.errors import RateLimited
from ragchat.db.pool import Pool
from ragchat.observability import metrics

log = logging.getLogger(__name__)
RELEASE_TIMEOUT_S = 10.0

_HIT_SQL = """
INSERT INTO rate_limits AS r (key, window_start, count)
VALUES (%(key)s, to_timestamp(floor(extract(epoch FROM now()) / %(window)s) * %(window)s), %(cost)s)
ON CONFLICT (key, window_start) DO UPDATE SET count = r.count + EXCLUDED.count
RETURNING r.count, extract(epoch FROM r.window_start + make_interval(secs => %(window)s) - now()) AS remaining
"""

_PEEK_SQL = """
SELECT count, extract(epoch FROM window_start + make_interval(secs => %(window)s) - now()) AS remaining
FROM rate_limits
WHERE key = %(key)s AND window_start = to_timestamp(floor(extract(epoch FROM now()) / %(window)s) * %(window)s)
"""


_LEASES_SQL = """
SELECT count(*) AS running, extract(epoch FROM min(window_start) - now()) AS soonest
FROM rate_limits WHERE key = %(key)s AND window_start > now()
"""

_TAKE_SQL = """
INSERT INTO rate_limits (key, window_start, count)
VALUES (%(key)s, clock_timestamp() + make_interval(secs => %(ttl)s), 1)
ON CONFLICT DO NOTHING
RETURNING window_start
"""

_RENEW_SQL = """
UPDATE rate_limits SET window_start = clock_timestamp() + make_interval(secs => %(ttl)s)
WHERE key = %(key)s AND window_start = %(expires)s
RETURNING window_start
"""


class Lease:
    """One held slot of a `RateLimiter.lease` key: renewed every third of its time to live until released, or
    until `max_s` (a holder that never releases it, e.g. work cancelled before it began, loses it then)."""

    def __init__(self, limiter: RateLimiter, key: str, expires: datetime, ttl_s: float, max_s: float) -> None:
        self.limiter = limiter
        self.key = key
        self.expires = expires
        self.ttl_s = ttl_s
        self.max_s = max_s
        self._stop = asyncio.Event()
        self._released = False
        self._renewer = asyncio.get_running_loop().create_task(self._renew())

    async def _renew(self) -> None:
        until = asyncio.get_running_loop().time() + self.max_s
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.ttl_s / 3)
            if self._stop.is_set():
                return
            if asyncio.get_running_loop().time() > until:
                log.warning("the lease %s was held longer than %g s: no longer renewed", self.key, self.max_s)
                return
            try:
                async with self.limiter.pool.connection() as conn:
                    params = {"key": self.key, "expires": self.expires, "ttl": self.ttl_s}
                    row = await (await conn.execute(_RENEW_SQL, params)).fetchone()
                if row is not None:
                    self.expires = row["window_start"]
            except Exception as exc:  # the database hiccuped: the lease lapses at worst, the work goes on
                log.info("could not renew the lease %s: %s", self.key, exc)

    async def release(self) -> None:
        """Give the slot back (once; later calls do nothing). Never raises; finishes even while cancelled."""
        if self._released:
            return
        self._released = True
        self._stop.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(RELEASE_TIMEOUT_S):
            await asyncio.wait([self._renewer])  # a renewal in flight ends first: `expires` is the row's
            try:
                async with self.limiter.pool.connection() as conn:
                    await conn.execute(
                        "DELETE FROM rate_limits WHERE key = %s AND window_start = %s", (self.key, self.expires)
                    )
            except Exception as exc:  # it expires by itself
                log.info("could not release the lease %s: %s", self.key, exc)


class RateLimiter:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def hit(self, key: str, limit: int, *, cost: int = 1, window_s: int = 60, what: str = "requests") -> None:
        """Count `cost` against `key` in the current window; RateLimited (429) once past `limit`."""
        if limit <= 0:
            return
        async with self.pool.connection() as conn:
            row = await (await conn.execute(_HIT_SQL, {"key": key, "window": window_s, "cost": cost})).fetchone()
            if random.random() < 0.01:  # now and then, forget windows long gone
                await conn.execute("DELETE FROM rate_limits WHERE window_start < now() - interval '1 day'")
        assert row is not None
        if int(row["count"]) > limit:
            metrics.RATE_LIMITED.labels(key.split(":", 1)[0]).inc()
            wait = max(1, math.ceil(float(row["remaining"])))
            raise RateLimited(
                f"too many {what}: the limit is {limit} per {_window(window_s)}; try again in {wait} s", wait
            )

    async def check(self, key: str, limit: int, *, window_s: int = 60, what: str = "requests") -> None:
        """RateLimited if `key` is already past `limit` in this window (without counting)."""
        if limit <= 0:
            return
        async with self.pool.connection() as conn:
            row = await (await conn.execute(_PEEK_SQL, {"key": key, "window": window_s})).fetchone()
        if row is not None and int(row["count"]) >= limit:
            raise RateLimited(
                f"too many {what}: try again in {math.ceil(float(row['remaining']))} s",
                math.ceil(float(row["remaining"])),
            )

    async def lease(
        self, key: str, limit: int, *, ttl_s: float = 60.0, max_s: float = 7200.0, what: str = "tasks"
    ) -> Lease | None:
        """One of `limit` slots of `key` (held until `Lease.release`, at most `max_s`); RateLimited (429) when
        all are taken. None when `limit` is 0 (no bound)."""
        if limit <= 0:
            return None
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"lease:{key}",))
            row = await (await conn.execute(_LEASES_SQL, {"key": key})).fetchone()
            assert row is not None
            if int(row["running"]) >= limit:
                metrics.RATE_LIMITED.labels(key.split(":", 1)[0]).inc()
                raise RateLimited(
                    f"too many {what} at once: at most {limit} run at the same time; wait for one to finish",
                    math.ceil(float(row["soonest"] or 1)),
                )
            taken = await (await conn.execute(_TAKE_SQL, {"key": key, "ttl": ttl_s})).fetchone()
        if taken is None:  # the same microsecond as another lease of the key: cannot happen under the lock
            raise RateLimited(f"too many {what} at once; try again", 1)
        return Lease(self, key, taken["window_start"], ttl_s, max_s)


def _window(seconds: int) -> str:
    if seconds == 3600:
        return "hour"
    return "minute" if seconds == 60 else f"{seconds // 60} minutes" if seconds % 60 == 0 else f"{seconds} s"
