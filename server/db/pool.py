"""The async connection pool and the database lifecycle (embedded server, migrations, pool)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from pgvector.psycopg import register_vector_async
from psycopg import AsyncConnection
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from server.db.embedded import EmbeddedPostgres, start_embedded
from server.db.migrate import ensure_vector_extension, migrate
from server.settings import Settings

log = logging.getLogger(__name__)


#: A connection whose rows are dicts (column name → value); every repository function takes one.
Conn = AsyncConnection[DictRow]
#: The pool every process shares (built by the runtime).
Pool = AsyncConnectionPool[Conn]


async def _configure(conn: Conn) -> None:
    await register_vector_async(conn)


def make_pool(uri: str, *, min_size: int = 1, max_size: int = 10) -> Pool:
    """A closed pool (call `await pool.open()`); rows come back as dicts, vectors as pgvector values."""
    return AsyncConnectionPool(
        uri,
        connection_class=AsyncConnection[DictRow],
        kwargs={"row_factory": dict_row},
        min_size=min_size,
        max_size=max_size,
        configure=_configure,
        open=False,
        timeout=10.0,
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


def prepare_database(settings: Settings) -> Database:
    """Resolve DATABASE_URL (or start the embedded server), create the extension, apply migrations."""
    embedded = None
    uri = settings.database_url
    if not uri:
        embedded = start_embedded(settings.data_dir)
        uri = embedded.uri
    ensure_vector_extension(uri)
    applied = migrate(uri)
    if applied:
        log.info("applied migrations: %s", ", ".join(applied))
    return Database(uri=uri, embedded=embedded)


@asynccontextmanager
async def open_pool(uri: str, settings: Settings) -> AsyncIterator[Pool]:
    pool = make_pool(uri, min_size=settings.db_pool_min, max_size=settings.db_pool_max)
    await pool.open(wait=True)
    try:
        yield pool
    finally:
        await pool.close()
