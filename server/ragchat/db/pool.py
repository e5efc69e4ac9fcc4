"""The async connection pool and the database lifecycle (embedded server, migrations, pool)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pgvector.psycopg import register_vector_async
from psycopg import AsyncConnection
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from ragchat.core.errors import DatabaseUnavailable
from ragchat.db.embedded import EmbeddedPostgres, start_embedded
from ragchat.db.migrate import ensure_vector_extension, migrate
from ragchat.settings import DatabaseSettings

log = logging.getLogger(__name__)


#: A connection whose rows are dicts (column name → value); every repository function takes one.
Conn = AsyncConnection[DictRow]
#: The pool every process shares (built by the runtime).
Pool = AsyncConnectionPool[Conn]


#: How long the pool keeps retrying to replace a lost connection before it gives up (and grows again on demand
#: or when the watchdog sees the database back). psycopg_pool's default, 5 min with doubling delays, would let
#: a connection come back minutes after the database did.
RECONNECT_TIMEOUT_S = 5.0
#: the `application_name` of the pool's connections (unless DATABASE_URL names one): `ragchat restore` refuses a
#: target these sessions use (db/restore_guard.py)
APPLICATION_NAME = "ragchat"


async def _configure(conn: Conn) -> None:
    await register_vector_async(conn)


class GatedPool(AsyncConnectionPool[Conn]):
    """The pool, with a gate the database watchdog closes while the database does not answer.

    Every connection is taken through `getconn` (`connection()` calls it): while the gate is closed it raises
    `DatabaseUnavailable` (503) at once instead of waiting out the pool timeout.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate_closed = False
        self.gate_message: str | None = None  # the 503's detail while closed (None: DatabaseUnavailable's own)
        #: called when a connection comes back broken (the watchdog probes at once rather than at its next turn)
        self.on_broken: Callable[[], None] | None = None

    async def getconn(self, timeout: float | None = None) -> Conn:  # noqa: ASYNC109 (psycopg_pool's signature)
        if self.gate_closed:
            raise self._unavailable()
        return await super().getconn(timeout)

    async def putconn(self, conn: Conn) -> None:
        broken = conn.broken
        await super().putconn(conn)
        if broken and self.on_broken is not None:
            self.on_broken()

    def _unavailable(self) -> DatabaseUnavailable:
        return DatabaseUnavailable(self.gate_message) if self.gate_message else DatabaseUnavailable()

    async def close_gate(self, message: str | None = None) -> None:
        """Refuse connections from now on (503 with `message`), and fail the requests already waiting for one."""
        self.gate_message = message
        self.gate_closed = True
        if self.closed:
            return
        async with self._lock:
            waiting = list(self._waiting)
            self._waiting.clear()
        for client in waiting:
            await client.fail(self._unavailable())

    async def open_gate(self) -> None:
        """Give connections again, after replacing the idle ones the outage broke."""
        if not self.closed:
            await self.check()
        self.gate_closed = False


def make_pool(
    uri: str, *, min_size: int = 1, max_size: int = 10, timeout: float = 10.0, prepared_statements: bool = True
) -> GatedPool:
    """A closed pool (call `await pool.open()`); rows come back as dicts, vectors as pgvector values.
    `prepared_statements=False` (DATABASE_PREPARED_STATEMENTS): never prepare server-side, for a connection
    pooler in transaction mode that cannot keep them (PgBouncer before 1.21, or with max_prepared_statements 0)."""
    kwargs: dict[str, Any] = {"row_factory": dict_row}
    if not conninfo_to_dict(uri).get("application_name"):
        kwargs["application_name"] = APPLICATION_NAME
    if not prepared_statements:
        kwargs["prepare_threshold"] = None
    return GatedPool(
        uri,
        connection_class=AsyncConnection[DictRow],
        kwargs=kwargs,
        min_size=min_size,
        max_size=max_size,
        configure=_configure,
        open=False,
        timeout=timeout,
        reconnect_timeout=RECONNECT_TIMEOUT_S,
    )


@dataclass
class Database:
    """Resolved connection URI, plus the embedded server when we started one."""

    uri: str
    embedded: EmbeddedPostgres | None = None

    def close(self) -> None:
        if self.embedded is not None:
            self.embedded.stop()
            self.embedded = None


def open_database(settings: DatabaseSettings) -> Database:
    """DATABASE_URL, or the embedded server started on the data directory; nothing applied."""
    if settings.database_url:
        return Database(uri=settings.database_url)
    embedded = start_embedded(settings.data_dir, settings.embedded_shared_buffers)
    return Database(uri=embedded.uri, embedded=embedded)


def prepare_database(settings: DatabaseSettings) -> Database:
    """Resolve DATABASE_URL (or start the embedded server), create the extension, apply migrations. A schema
    newer than this code, or a migration that fails, stops here (SchemaError) with the embedded server stopped."""
    database = open_database(settings)
    try:
        ensure_vector_extension(database.uri)
        applied = migrate(database.uri)
    except BaseException:
        database.close()
        raise
    if applied:
        log.info("applied migrations: %s", ", ".join(applied))
    return database
