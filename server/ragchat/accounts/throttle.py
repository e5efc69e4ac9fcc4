"""Failed logins slow down the guesser, never lock out the owner (issue 33).

Two counters per attempt, in Postgres (`login_failures`, shared by every server process):

- per (username, client address): after `LOGIN_FREE_FAILURES` failures, each further failure makes that address
  wait before it may try that name again: `LOGIN_DELAY_BASE_S` (1 s), then twice as long each time, up to
  `LOGIN_DELAY_MAX_S`. An attempt inside the
  wait is a 429 with `Retry-After`, answered before the password is looked at. A success clears the pair.
- per username, from every address: after the same number of failures, every attempt on that name (right or
  wrong, from anywhere) is held `0.25 s × 2^(n - free)`, at most `LOGIN_GLOBAL_DELAY_MAX_S` (a few seconds),
  before the password is checked. This is a slow-down, never a refusal: the owner at a new address gets in
  after at most that long, however many addresses guess.

Failures are forgotten `LOGIN_FAILURE_MEMORY_S` after the last one. The client address is the proxy-aware one
(web/proxies.py), so a client behind an untrusted hop cannot pick a fresh address per guess.
"""

from __future__ import annotations

import asyncio
import math
import random

from ragchat.core.errors import RateLimited
from ragchat.db.pool import Pool
from ragchat.observability import metrics
from ragchat.settings import AccountSettings

GLOBAL_BASE_S = 0.25

_FAIL_SQL = """
INSERT INTO login_failures AS f (key, failures, last_failure_at, next_at)
VALUES (%(key)s, 1, now(), now())
ON CONFLICT (key) DO UPDATE SET
    failures = CASE WHEN f.last_failure_at < now() - make_interval(secs => %(memory)s) THEN 1 ELSE f.failures + 1 END,
    last_failure_at = now(),
    next_at = now() + make_interval(secs => least(%(max)s, CASE
        WHEN f.last_failure_at < now() - make_interval(secs => %(memory)s) THEN 0.0
        WHEN f.failures + 1 <= %(free)s THEN 0.0
        ELSE %(base)s * power(2, least(f.failures + 1 - %(free)s - 1, 40)) END))
RETURNING failures
"""

_READ_SQL = """
SELECT key, failures, extract(epoch FROM next_at - now()) AS wait_s FROM login_failures
WHERE key = ANY(%(keys)s) AND last_failure_at >= now() - make_interval(secs => %(memory)s)
"""


def pair_key(who: str, ip: str) -> str:
    return f"a:{who}|{ip[:100]}"


def name_key(who: str) -> str:
    return f"u:{who}"


class LoginThrottle:
    def __init__(self, pool: Pool, settings: AccountSettings) -> None:
        self.pool = pool
        self.free = settings.login_free_failures
        self.base_s = settings.login_delay_base_s
        self.max_s = settings.login_delay_max_s
        self.global_max_s = settings.login_global_delay_max_s
        self.memory_s = settings.login_failure_memory_s

    def global_delay(self, failures: int) -> float:
        """The hold on every attempt at a name that has failed `failures` times lately (from anywhere)."""
        if failures < self.free or self.global_max_s <= 0:
            return 0.0
        return min(self.global_max_s, GLOBAL_BASE_S * 2 ** min(failures - self.free, 20))

    async def before(self, who: str, ip: str) -> None:
        """429 if this address must still wait for this name; else hold the name's global slow-down."""
        if self.free <= 0:
            return
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(_READ_SQL, {"keys": [pair_key(who, ip), name_key(who)], "memory": self.memory_s})
            ).fetchall()
        by_key = {r["key"]: r for r in rows}
        pair = by_key.get(pair_key(who, ip))
        if pair is not None and float(pair["wait_s"]) > 0:
            wait = math.ceil(float(pair["wait_s"]))
            metrics.RATE_LIMITED.labels("login-fail").inc()
            raise RateLimited(f"too many failed logins for this name from your address: try again in {wait} s", wait)
        name = by_key.get(name_key(who))
        hold = self.global_delay(int(name["failures"])) if name is not None else 0.0
        if hold > 0:
            await asyncio.sleep(hold)

    async def failed(self, who: str, ip: str) -> None:
        if self.free <= 0:
            return
        params = {"memory": self.memory_s, "max": self.max_s, "free": self.free, "base": self.base_s}
        async with self.pool.connection() as conn:
            await conn.execute(_FAIL_SQL, {**params, "key": pair_key(who, ip)})
            # the name's row keeps only the count (its next_at is not used)
            await conn.execute(_FAIL_SQL, {**params, "key": name_key(who), "max": 0.0})
            if random.random() < 0.01:  # now and then, forget what is long past
                await conn.execute(
                    "DELETE FROM login_failures WHERE last_failure_at < now() - make_interval(secs => %s)",
                    (self.memory_s,),
                )

    async def succeeded(self, who: str, ip: str) -> None:
        async with self.pool.connection() as conn:
            await conn.execute("DELETE FROM login_failures WHERE key = %s", (pair_key(who, ip),))
