"""Rate limits shared by every server process: fixed one-window counters in Postgres (an UNLOGGED table).

One upsert per check. `limits`/litestar's rate-limit middleware keep counters in memory, Redis or
Memcached; ragchat's only shared state is Postgres, and several server processes behind a load balancer
must see the same counts, so the counter is one SQL statement here.
"""

from __future__ import annotations

import math
import random

from ragchat.core import metrics
from ragchat.core.errors import RateLimited
from ragchat.db.pool import Pool

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
            raise RateLimited(
                f"too many {what}: the limit is {limit} per {_window(window_s)}; try again shortly",
                math.ceil(float(row["remaining"])),
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


def _window(seconds: int) -> str:
    return "minute" if seconds == 60 else f"{seconds // 60} minutes" if seconds % 60 == 0 else f"{seconds} s"
