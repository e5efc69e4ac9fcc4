"""The corpus fixtures' one family: files registered for an owner and run through the real ingestion pipeline,
returned as `{filename: document id}` (a `Corpus`), every document ready.

Each test module that needs its own texts defines `corpus` with `ingest_files(...)`; the integration tests'
default `corpus` (tests/integration/conftest.py) is `CHAT_FILES`."""

from __future__ import annotations

from typing import Any
from uuid import UUID

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
