"""The corpus fixtures' one family: files registered for an owner and run through the real ingestion pipeline,
returned as `{filename: document id}` (a `Corpus`), every document ready.

Each test module that needs its own texts defines `corpus` with `ingest_files(...)`; the integration tests'
default `corpus` (tests/integration/conftest.py) is `CHAT_FILES`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from psycopg import sql

from ragchat.core.principal import LOCAL_OWNER_ID
from ragchat.documents.ingest.registration import register_bytes
from ragchat.settings import Settings
from tests.support.services import make_pipeline

Corpus = dict[str, UUID]


async def ingest_files(
    pool: Any,
    embedder: Any,
    settings: Settings,
    files: dict[str, bytes | str],
    *,
    owner: UUID = LOCAL_OWNER_ID,
    metadata: dict[str, dict[str, Any]] | None = None,
) -> Corpus:
    """Register `{filename: bytes or text}` for `owner` (with `metadata[filename]` when given), ingest them all,
    and check every one is ready."""
    ids: Corpus = {}
    for name, data in files.items():
        raw = data.encode() if isinstance(data, str) else data
        extra = (metadata or {}).get(name)
        registered = await register_bytes(
            pool, owner, name, raw, settings.ingestion, **({"metadata": extra} if extra else {})
        )
        document_id = registered[0].document_id
        assert document_id is not None, registered
        ids[name] = document_id
    await make_pipeline(pool, embedder, settings).run()
    async with pool.connection() as conn:
        rows = await (
            await conn.execute("SELECT id, status FROM documents WHERE id = ANY(%s)", (list(ids.values()),))
        ).fetchall()
    assert {r["status"] for r in rows} == {"ready"}, rows
    return ids


@dataclass
class Snapshot:
    """Every non-empty table's rows (COPY binary) and the next value of each column sequence, as an ingest left
    them: a module whose tests share one large corpus ingests it once and puts it back after each test's
    truncation (tests/conftest.py `db`) in milliseconds."""

    tables: list[tuple[str, bytes]] = field(default_factory=list)
    sequences: list[tuple[str, int]] = field(default_factory=list)


async def take_snapshot(pool: Any) -> Snapshot:
    snap = Snapshot()
    async with pool.connection() as conn:
        names = await (
            await conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
        ).fetchall()
        for row in names:
            table = sql.Identifier(row["tablename"])
            data = bytearray()
            async with conn.cursor().copy(sql.SQL("COPY {} TO STDOUT (FORMAT binary)").format(table)) as copy:
                async for block in copy:
                    data += block
            count = await (await conn.execute(sql.SQL("SELECT count(*) AS n FROM {}").format(table))).fetchone()
            if count and count["n"]:
                snap.tables.append((row["tablename"], bytes(data)))
        sequences = await (
            await conn.execute(
                "SELECT format('%I', sequencename) AS name, last_value FROM pg_sequences "
                "WHERE schemaname = 'public' AND last_value IS NOT NULL"
            )
        ).fetchall()
        snap.sequences = [(r["name"], r["last_value"]) for r in sequences]
    return snap


async def restore_snapshot(pool: Any, snap: Snapshot) -> None:
    """Put `snap`'s rows back into the emptied tables (foreign keys and triggers held off while it loads: the
    rows are a consistent whole, derived statistics included), then the sequences where they were."""
    async with pool.connection() as conn, conn.transaction():
        await conn.execute("SET LOCAL session_replication_role = replica")
        for name, data in snap.tables:
            table = sql.Identifier(name)
            await conn.execute(sql.SQL("DELETE FROM {}").format(table))  # the kept rows (the local user)
            async with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN (FORMAT binary)").format(table)) as copy:
                await copy.write(data)
        for name, value in snap.sequences:
            await conn.execute("SELECT setval(%s::regclass, %s)", (name, value))


async def ingest_once(
    cache: dict[str, Any], pool: Any, embedder: Any, settings: Settings, files: dict[str, bytes | str]
) -> Corpus:
    """`ingest_files` for the first test of a module (`cache`: a module-scoped dict), the snapshot it left for
    the others."""
    if "snapshot" not in cache:
        cache["ids"] = await ingest_files(pool, embedder, settings, files)
        cache["snapshot"] = await take_snapshot(pool)
    else:
        await restore_snapshot(pool, cache["snapshot"])
    return dict(cache["ids"])
