"""The database watchdog: probes the database every second or so, on a connection of its own.

While the database does not answer, the pool's gate is closed (requests get a 503 at once instead of after
the pool timeout) and the embedded PostgreSQL, if its postmaster died, is restarted. When the database
answers again, the pool replaces the connections the outage broke and the gate opens: requests recover
without a restart of the server. A connection of the probe's that broke although the database answers
(it restarted between two probes) makes the pool check its idle connections too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection

from ragchat.db.embedded import EmbeddedPostgres
from ragchat.db.pool import GatedPool, Pool

log = logging.getLogger(__name__)
T = TypeVar("T")

#: While the database is down, probe at least this often (quick recovery, cheap: a refused connect).
DOWN_INTERVAL_S = 0.25
#: After a failed restart of the embedded server, wait this long before the next (doubling, capped).
RESTART_BACKOFF_S = (1.0, 30.0)

_detached: set[asyncio.Task[Any]] = set()


async def bounded(coro: Coroutine[Any, Any, T], seconds: float) -> T:
    """`coro`'s result within `seconds`, else TimeoutError at once.

    Unlike `asyncio.wait_for`, a late coroutine is cancelled without waiting for it: psycopg spends seconds
    trying to cancel a query on a server that does not answer, and the caller should not.
    """
    task = asyncio.ensure_future(coro)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        _detached.add(task)
        task.add_done_callback(_forget)
        raise TimeoutError(f"no answer within {seconds:g} s")
    return task.result()


def _forget(task: asyncio.Task[Any]) -> None:
    _detached.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: no "exception was never retrieved" warning


@dataclass(frozen=True)
class DatabaseStatus:
    """One probe's result (no connection string or server message: `/api/health` is public)."""

    ok: bool
    latency_ms: float | None = None  # the round trip of `SELECT 1` (and a connect, when one was needed)
    error: str | None = None  # why it did not answer, in words
    checked_at: float = 0.0  # time.monotonic() of the probe


def describe_failure(exc: BaseException) -> str:
    """Why a probe failed, in words (no server message: it may name hosts, users, sockets)."""
    if isinstance(exc, TimeoutError):
        return str(exc) or "no answer in time"
    if isinstance(exc, psycopg.OperationalError):
        return "cannot connect or the connection was lost"
    return f"probe failed ({type(exc).__name__})"


async def probe_pool(pool: Pool, seconds: float) -> DatabaseStatus:
    """`SELECT 1` on a pool connection within `seconds` (for a runtime without a watchdog, e.g. tests')."""
    began = time.monotonic()

    async def select_one() -> None:
        async with pool.connection(timeout=seconds) as conn:
            await conn.execute("SELECT 1")

    try:
        await bounded(select_one(), seconds)
    except Exception as exc:
        return DatabaseStatus(ok=False, error=describe_failure(exc), checked_at=time.monotonic())
    return DatabaseStatus(ok=True, latency_ms=round((time.monotonic() - began) * 1000, 2), checked_at=began)


class DatabaseWatchdog:
    """Probes the database until cancelled (`run`); `status` is the last probe's result."""

    def __init__(
        self,
        pool: GatedPool,
        uri: str,
        *,
        embedded: EmbeddedPostgres | None = None,
        interval_s: float = 1.0,
        timeout_s: float = 2.0,
    ) -> None:
        self.pool = pool
        self.uri = uri
        self.embedded = embedded
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.status = DatabaseStatus(ok=True, checked_at=time.monotonic())  # the pool has just connected
        self.restarts = 0  # of the embedded server, by this process
        self._conn: AsyncConnection[Any] | None = None
        self._timeouts = 0
        self._down_since: float | None = None
        self._detail: str | None = None  # the driver's message of the last failure (for the log only)
        self._restart_failures = 0
        self._next_restart = 0.0
        self._wake = asyncio.Event()
        pool.on_broken = self._wake.set  # a request's connection broke: probe now

    def fresh(self) -> bool:
        """The last probe is recent enough to stand for now (the loop runs, or the database is known down)."""
        age = time.monotonic() - self.status.checked_at
        return not self.status.ok or age <= 2 * self.interval_s + self.timeout_s

    async def run(self) -> None:
        try:
            while True:
                try:
                    await self.tick()
                except Exception:  # a bug here must not end the watching
                    log.exception("database watchdog: probe round failed")
                pause = self.interval_s if self.status.ok else min(self.interval_s, DOWN_INTERVAL_S)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), pause)
                self._wake.clear()
        finally:
            await self._drop(self._conn)

    async def tick(self) -> None:
        """One probe, and what follows from it: close or open the gate, restart the embedded server."""
        status = await self.probe()
        if not status.ok:
            await self._lost(status)
            if self.embedded is not None and await self._restart():
                status = await self.probe()
        if status.ok and self.pool.gate_closed:
            await self._back()

    async def probe(self) -> DatabaseStatus:
        """`SELECT 1` on the watchdog's connection (reconnecting if it broke), within the probe timeout.

        A timeout counts as down only on the second in a row: a probe delayed by a busy event loop is not
        an outage. A refused or broken connection counts at once.
        """
        began = time.monotonic()
        try:
            broke = await bounded(self._select_one(), self.timeout_s)
        except TimeoutError as exc:
            self._detail = None
            self._timeouts += 1
            self._conn = None  # the cancelled probe closes it
            if self._timeouts < 2 and self.status.ok:
                return self.status
            self.status = DatabaseStatus(ok=False, error=describe_failure(exc), checked_at=time.monotonic())
            return self.status
        except Exception as exc:
            self._timeouts = 0
            self._detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            self.status = DatabaseStatus(ok=False, error=describe_failure(exc), checked_at=time.monotonic())
            return self.status
        self._timeouts = 0
        latency = round((time.monotonic() - began) * 1000, 2)
        if broke and self.status.ok:  # it restarted between two probes: the pool's idle connections broke too
            log.warning("the database restarted; replacing the pool's broken connections")
            await self.pool.check()
        self.status = DatabaseStatus(ok=True, latency_ms=latency, checked_at=began)
        return self.status

    async def _select_one(self) -> bool:
        """True when the watchdog's existing connection had broken (and a new one answered)."""
        broke = False
        conn = self._conn
        if conn is not None:
            try:
                await conn.execute("SELECT 1")
                return False
            except psycopg.Error:
                broke = True
                await self._drop(conn)
            except asyncio.CancelledError:
                await self._drop(conn)
                raise
        conn = await AsyncConnection.connect(
            self.uri,
            autocommit=True,
            connect_timeout=max(2, round(self.timeout_s)),
            application_name="ragchat-watchdog",
        )
        self._conn = conn
        try:
            await conn.execute("SELECT 1")
        except BaseException:
            await self._drop(conn)
            raise
        return broke

    async def _drop(self, conn: AsyncConnection[Any] | None) -> None:
        if conn is None:
            return
        if self._conn is conn:
            self._conn = None
        try:
            await conn.close()
        except Exception:
            log.debug("closing the watchdog's connection failed", exc_info=True)

    async def _lost(self, status: DatabaseStatus) -> None:
        if not self.pool.gate_closed:
            self._down_since = time.monotonic()
            detail = f": {self._detail}" if self._detail else ""
            log.warning("the database does not answer (%s%s): requests get 503 until it does", status.error, detail)
            await self.pool.close_gate(
                "The database (the embedded Postgres server) does not answer; it is being restarted: retry shortly."
                if self.embedded is not None
                else "The database does not answer: check that Postgres is running and that DATABASE_URL is right, "
                "then retry."
            )

    async def _back(self) -> None:
        await self.pool.open_gate()
        took = time.monotonic() - self._down_since if self._down_since is not None else 0.0
        self._down_since = None
        log.warning("the database answers again (down %.1f s)", took)

    async def _restart(self) -> bool:
        """Restart the embedded server if its postmaster died; True when it was restarted."""
        assert self.embedded is not None
        now = time.monotonic()
        if now < self._next_restart:
            return False
        try:
            restarted = await asyncio.to_thread(self.embedded.restart_if_dead)
        except Exception as exc:
            self._restart_failures += 1
            first, cap = RESTART_BACKOFF_S
            delay = min(cap, first * 2 ** (self._restart_failures - 1))
            self._next_restart = time.monotonic() + delay
            log.error(
                "could not restart the embedded postgres (%s; next try in %.0f s): see %s and %s",
                type(exc).__name__,
                delay,
                self.embedded.log_path,
                self.embedded.pgdata / "log",
            )
            return False
        if not restarted:
            return False
        self._restart_failures = 0
        self.restarts += 1
        if self.embedded.uri != self.uri:  # e.g. another port (Windows): new connections go there
            self.uri = self.embedded.uri
            self.pool.conninfo = self.embedded.uri
        log.warning("the embedded postgres had stopped: restarted it (%d restart(s) so far)", self.restarts)
        return True
