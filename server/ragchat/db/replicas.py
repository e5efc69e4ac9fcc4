"""Read replicas (DATABASE_READ_URL): searches, listings and facets on a streaming replica, the rest on the primary.

Routing is by request type: only the read paths that take a `ReadRouter` (the searcher, the document listings,
facet counts, suggestions) may use a replica; writes, job claims, threads, a document's own status and every
other read stay on the primary. On top of that, a user's reads go to the primary for a window after their own
write in this process (`max_lag_s` + one check interval), so a new upload shows in their listing at once.

Health: every `check_s` seconds the primary's WAL position is sampled and each replica's replayed position read.
A replica's lag is how long ago the primary was first seen past the position the replica has replayed now (0
when it has replayed everything seen). Unlike `now() - pg_last_xact_replay_timestamp()`, an idle primary does
not make it grow. A replica that does not answer, lags more than `max_lag_s`, is not a standby of the primary or
is at another schema version is skipped, with one log line when it goes and one when it comes back. A read that
fails on a replica is run again on the primary.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from uuid import UUID

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg_pool import PoolTimeout

from ragchat.core.errors import DatabaseUnavailable
from ragchat.db.pool import Conn, GatedPool, Pool, make_pool
from ragchat.observability import metrics
from ragchat.settings import DatabaseSettings, split_urls

log = logging.getLogger(__name__)

T = TypeVar("T")

#: pg_control_system() is for superusers and pg_monitor: without the right, the system check is skipped
_SYSTEM = """CASE WHEN has_function_privilege('pg_control_system()', 'EXECUTE')
            THEN (SELECT system_identifier FROM pg_control_system()) END AS system"""
_PRIMARY_SQL = f"""SELECT pg_current_wal_lsn() - '0/0'::pg_lsn AS lsn, {_SYSTEM},
       (SELECT max(version) FROM schema_migrations) AS schema"""
_REPLICA_SQL = f"""SELECT pg_is_in_recovery() AS standby,
       COALESCE(pg_last_wal_replay_lsn(), pg_current_wal_lsn()) - '0/0'::pg_lsn AS replay, {_SYSTEM},
       (SELECT max(version) FROM schema_migrations) AS schema"""
#: errors that say this one statement was cancelled (a recovery conflict on a replica): run it again on the
#: primary, but the replica stays in use
_STATEMENT_ERRORS = (pg_errors.QueryCanceled, pg_errors.SerializationFailure)


def redact(url: str) -> str:
    """host:port/dbname, for logs and /readyz (no user or password)."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(unparsable URL)"
    host = str(info.get("host") or "localhost")
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or ''}"


@dataclass
class Replica:
    name: str
    url: str
    pool: GatedPool
    healthy: bool = False
    lag_s: float | None = None
    reason: str | None = "not checked yet"
    checked: bool = False
    reads: int = 0  # reads sent to it
    fallbacks: int = 0  # of those, run again on the primary

    def status(self) -> dict[str, Any]:
        return {
            "replica": self.name,
            "healthy": self.healthy,
            "lag_s": None if self.lag_s is None else round(self.lag_s, 3),
            "reason": self.reason,
            "reads": self.reads,
            "fallbacks": self.fallbacks,
        }


@dataclass
class ReadRouter:
    """Chooses the pool a read runs on. Without replicas every read goes to the primary."""

    primary: Pool
    replicas: list[Replica] = field(default_factory=list)
    max_lag_s: float = 30.0
    check_s: float = 2.0
    probe_timeout_s: float = 2.0
    _history: deque[tuple[float, int]] = field(default_factory=deque)
    _writes: dict[UUID, float] = field(default_factory=dict)
    _next: int = 0
    _primary_schema: str | None = None
    _primary_system: int | None = None

    # -- routing ---------------------------------------------------------------------------------------------

    @property
    def write_window_s(self) -> float:
        """How long after a user's write their reads stay on the primary."""
        return self.max_lag_s + self.check_s

    def note_write(self, user_id: UUID) -> None:
        if not self.replicas:
            return
        now = time.monotonic()
        self._writes[user_id] = now
        if len(self._writes) > 10_000:  # forget the expired ones
            cutoff = now - self.write_window_s
            self._writes = {u: t for u, t in self._writes.items() if t > cutoff}

    def choose(self, user_id: UUID | None = None) -> Replica | None:
        """A healthy replica (round robin), or None: the primary (no replica usable, or the user just wrote)."""
        if not self.replicas:
            return None
        if user_id is not None:
            wrote = self._writes.get(user_id)
            if wrote is not None and time.monotonic() - wrote < self.write_window_s:
                return None
        healthy = [r for r in self.replicas if r.healthy]
        if not healthy:
            return None
        self._next = (self._next + 1) % len(healthy)
        return healthy[self._next]

    async def run(self, user_id: UUID | None, read: Callable[[Pool], Awaitable[T]]) -> T:
        """`read(pool)` on a replica when one is usable for this user, else (or when it fails there) the primary."""
        replica = self.choose(user_id)
        if replica is None:
            return await read(self.primary)
        replica.reads += 1
        try:
            return await read(replica.pool)
        except (psycopg.OperationalError, PoolTimeout, DatabaseUnavailable) as exc:
            replica.fallbacks += 1
            metrics.REPLICA_FALLBACKS.labels(replica.name).inc()
            if not isinstance(exc, _STATEMENT_ERRORS):
                self._mark(replica, False, f"a read failed: {_describe(exc)}", None)
            return await read(self.primary)

    # -- health ----------------------------------------------------------------------------------------------

    async def open(self) -> None:
        """Open the replica pools (without waiting for them) and check each once, saying how each one is."""
        for replica in self.replicas:
            await replica.pool.open(wait=False)
        if self.replicas:
            await self.check()
            for replica in self.replicas:
                if replica.healthy:
                    log.info("read replica %s in use (lag %.1f s)", replica.name, replica.lag_s or 0.0)

    async def close(self) -> None:
        for replica in self.replicas:
            await replica.pool.close()

    async def loop(self) -> None:
        while True:
            await asyncio.sleep(self.check_s)
            try:
                await self.check()
            except Exception:  # never let the loop die: log and keep checking
                log.exception("read replica check failed")

    async def check(self) -> None:
        """Sample the primary's WAL position, then measure each replica against the samples."""
        try:
            await asyncio.wait_for(self._sample_primary(), self.probe_timeout_s)
        except Exception as exc:  # the primary is the watchdog's business; the replicas keep their state
            log.debug("read replicas: the primary could not be sampled: %s", _describe(exc))
            return
        await asyncio.gather(*(self._check_replica(r) for r in self.replicas))

    async def _sample_primary(self) -> None:
        async with self.primary.connection(timeout=self.probe_timeout_s) as conn:
            row = await (await conn.execute(_PRIMARY_SQL)).fetchone()
        assert row is not None
        now = time.monotonic()
        self._primary_schema = row["schema"]
        self._primary_system = None if row["system"] is None else int(row["system"])
        lsn = int(row["lsn"])
        if not self._history or self._history[-1][1] != lsn:
            self._history.append((now, lsn))
        # keep what measures a lag up to twice the limit; the oldest kept sample bounds a longer lag from below
        horizon = now - 2 * self.max_lag_s - 2 * self.check_s
        while len(self._history) > 1 and self._history[1][0] < horizon:
            self._history.popleft()

    def lag_of(self, replayed: int) -> float:
        """Seconds since the primary was first seen past `replayed` (0: nothing seen is missing)."""
        for seen_at, lsn in self._history:
            if lsn > replayed:
                return max(0.0, time.monotonic() - seen_at)
        return 0.0

    async def _check_replica(self, replica: Replica) -> None:
        try:
            row = await asyncio.wait_for(self._probe(replica.url), self.probe_timeout_s)
        except pg_errors.UndefinedTable:
            self._mark(replica, False, "has no ragchat tables (a wrong database name?)", None)
            return
        except Exception as exc:
            self._mark(replica, False, f"does not answer: {_describe(exc)}", None)
            return
        if (
            row["system"] is not None
            and self._primary_system is not None
            and int(row["system"]) != self._primary_system
        ):
            self._mark(replica, False, "is not a replica of DATABASE_URL (another database system)", None)
            return
        if not row["standby"]:
            if row["system"] is not None and int(row["system"]) == self._primary_system:  # DATABASE_URL itself
                self._mark(replica, True, None, 0.0)
            else:
                self._mark(replica, False, "is not a standby (promoted?)", None)
            return
        if row["schema"] != self._primary_schema:
            self._mark(replica, False, f"is at schema {row['schema']}, the primary at {self._primary_schema}", None)
            return
        lag = self.lag_of(int(row["replay"]))
        if lag > self.max_lag_s:
            self._mark(replica, False, f"lags {lag:.1f} s behind the primary (limit {self.max_lag_s:g} s)", lag)
            return
        if not replica.healthy and not replica.pool.closed:
            await replica.pool.check()  # back: drop the connections a restart broke before reads use them
        self._mark(replica, True, None, lag)

    async def _probe(self, url: str) -> dict[str, Any]:
        conn = await Conn.connect(
            url, autocommit=True, row_factory=dict_row, connect_timeout=max(2, int(self.probe_timeout_s))
        )
        async with conn:
            row = await (await conn.execute(_REPLICA_SQL)).fetchone()
        assert row is not None
        return row

    def _mark(self, replica: Replica, healthy: bool, reason: str | None, lag: float | None) -> None:
        """Record a check's outcome; one log line when a replica goes out of use and one when it comes back."""
        was, first = replica.healthy, not replica.checked
        replica.checked = True
        replica.healthy, replica.reason, replica.lag_s = healthy, reason, lag
        metrics.REPLICA_HEALTHY.labels(replica.name).set(1 if healthy else 0)
        if lag is not None:
            metrics.REPLICA_LAG.labels(replica.name).set(lag)
        if healthy and not was and not first:
            log.info("read replica %s is back: searches and listings use it again", replica.name)
        elif not healthy and (was or first):
            log.warning(
                "read replica %s skipped: it %s; searches and listings go to the primary until it is back",
                replica.name,
                reason,
            )

    def status(self) -> list[dict[str, Any]]:
        return [r.status() for r in self.replicas]


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def build_router(primary: Pool, settings: DatabaseSettings) -> ReadRouter:
    """The router over `primary` and one pool per DATABASE_READ_URL entry (closed: call `open()`)."""
    replicas = [
        Replica(
            name=redact(url),
            url=url,
            pool=make_pool(
                url,
                min_size=0,
                max_size=settings.db_pool_max,
                timeout=min(settings.db_pool_timeout_s, settings.db_probe_timeout_s),
                prepared_statements=settings.database_prepared_statements,
            ),
        )
        for url in split_urls(settings.database_read_url)
    ]
    return ReadRouter(
        primary,
        replicas,
        max_lag_s=settings.database_read_max_lag,
        check_s=settings.database_read_check_s,
        probe_timeout_s=settings.db_probe_timeout_s,
    )
