"""The corpus fixtures' one family: files registered for an owner and run through the real ingestion pipeline,
returned as `{filename: document id}` (a `Corpus`), every document ready.

Each test module that needs its own texts defines `corpus` with `ingest_files(...)`; the integration tests'
default `corpus` (tests/integration/conftest.py) is `CHAT_FILES`.

The same files under the same settings give the same rows, so a test process ingests each corpus once: into a
database holding nothing else yet (just after tests/conftest.py's `db` emptied it), the rows the ingest left
are kept (`Snapshot`) and put back, in milliseconds, for every later test asking for that corpus in an empty
database. A corpus asked for in a database already holding rows is ingested as it always was."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
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
    and check every one is ready (or put back the rows an earlier ingest of the same corpus left)."""
    key = _key(embedder, settings, files, owner, metadata) if _KEEP[0] else None
    fresh = key is not None and await _empty(pool)
    if fresh and key is not None and key in _SNAPSHOTS:
        snap = _SNAPSHOTS[key]
        try:
            await _restore(pool, snap)
            return dict(snap.ids)
        except psycopg.errors.InsufficientPrivilege:  # TEST_DATABASE_URL's user is no superuser: ingest each time
            _SNAPSHOTS.clear()
            _KEEP[0] = False
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
    if fresh and key is not None:
        _SNAPSHOTS[key] = await _snapshot(pool, ids)
    return ids


@dataclass
class Snapshot:
    """What one ingest into an empty database left: each non-empty table's rows (COPY binary), the column
    sequences' positions and the vector indexes (tests/conftest.py drops them with the rows)."""

    ids: Corpus
    tables: list[tuple[str, bytes]] = field(default_factory=list)
    sequences: list[tuple[str, int]] = field(default_factory=list)
    indexes: list[str] = field(default_factory=list)


_SNAPSHOTS: dict[str, Snapshot] = {}
_KEEP = [True]  # False once a restore was refused (it holds triggers off: a superuser's right)
_GROUPS = ("ingestion", "embeddings", "retrieval")  # what decides the rows an ingest writes
_SKIP_PATHS = ("data_dir",)  # where this test's files are, not what it ingests


def _key(
    embedder: Any,
    settings: Settings,
    files: dict[str, bytes | str],
    owner: UUID,
    metadata: dict[str, dict[str, Any]] | None,
) -> str | None:
    """What the corpus's rows depend on, digested; None when the ingest asks the LLM (a test's scripted replies
    are part of its rows)."""
    if settings.ingestion.metadata_extraction or settings.ingestion.chunk_semantic_llm:
        return None
    digest = hashlib.sha256()
    for name, data in files.items():
        raw = data.encode() if isinstance(data, str) else data
        digest.update(f"{name}\0{len(raw)}\0".encode() + raw)
    shown = {group: settings.model_dump(mode="json")[group] for group in _GROUPS}
    for values in shown.values():
        for name in _SKIP_PATHS:
            values.pop(name, None)
    made_by = f"{type(embedder).__qualname__}:{getattr(embedder, 'model', '')}:{getattr(embedder, 'dims', '')}"
    digest.update(json.dumps([shown, str(owner), metadata, made_by], sort_keys=True, default=str).encode())
    return digest.hexdigest()


async def _tables(conn: Any) -> list[str]:
    rows = await (
        await conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations' "
            "ORDER BY tablename"
        )
    ).fetchall()
    return [r["tablename"] for r in rows]


async def _empty(pool: Any) -> bool:
    """Nothing in the database but the local user, as tests/conftest.py's `db` leaves it."""
    async with pool.connection() as conn:
        tables = [t for t in await _tables(conn) if t != "users"]
        busy = sql.SQL(" OR ").join(sql.SQL("EXISTS (SELECT 1 FROM {})").format(sql.Identifier(t)) for t in tables)
        row = await (
            await conn.execute(
                sql.SQL(
                    "SELECT ({}) AS busy, (SELECT count(*) FROM users) AS users, "
                    "(SELECT count(*) FROM users WHERE username IS NULL AND id = %s) AS local"
                ).format(busy),
                (LOCAL_OWNER_ID,),
            )
        ).fetchone()
    return bool(row and not row["busy"] and row["users"] == 1 and row["local"] == 1)


async def _snapshot(pool: Any, ids: Corpus) -> Snapshot:
    snap = Snapshot(dict(ids))
    async with pool.connection() as conn:
        for name in await _tables(conn):
            table = sql.Identifier(name)
            row = await (
                await conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {}) AS any").format(table))
            ).fetchone()
            if not row or not row["any"]:
                continue
            data = bytearray()
            async with conn.cursor().copy(sql.SQL("COPY {} TO STDOUT (FORMAT binary)").format(table)) as copy:
                async for block in copy:
                    data += block
            snap.tables.append((name, bytes(data)))
        sequences = await (
            await conn.execute(
                "SELECT format('%I', sequencename) AS name, last_value FROM pg_sequences "
                "WHERE schemaname = 'public' AND last_value IS NOT NULL"
            )
        ).fetchall()
        snap.sequences = [(r["name"], r["last_value"]) for r in sequences]
        indexes = await (
            await conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' "
                "AND indexname LIKE 'chunk_embeddings_hnsw_%'"
            )
        ).fetchall()
        snap.indexes = [r["indexdef"] for r in indexes]
    return snap


async def _restore(pool: Any, snap: Snapshot) -> None:
    """`snap`'s rows into the emptied tables, with foreign keys and triggers held off while they load (the rows
    are one consistent whole, derived statistics included), then the sequences and the vector indexes."""
    async with pool.connection() as conn, conn.transaction():
        await conn.execute("SET LOCAL session_replication_role = replica")
        for name, data in snap.tables:
            table = sql.Identifier(name)
            await conn.execute(sql.SQL("DELETE FROM {}").format(table))  # the local user, kept by `db`
            async with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN (FORMAT binary)").format(table)) as copy:
                await copy.write(data)
        for name, value in snap.sequences:
            await conn.execute("SELECT setval(%s::regclass, %s)", (name, value))
        for definition in snap.indexes:
            await conn.execute(definition.encode())
