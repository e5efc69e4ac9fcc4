"""Metadata as a service: a person's metadata on uploads and edits, and the LLM extraction's queue."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from ragchat.core.errors import NotFound
from ragchat.core.principal import Principal
from ragchat.db.pool import Pool
from ragchat.documents.catalog import repository as repo
from ragchat.documents.catalog.service import writable_document
from ragchat.documents.catalog.shared import Registered
from ragchat.documents.metadata import repository as meta_repo
from ragchat.documents.metadata.extraction import MetadataExtractor
from ragchat.documents.metadata.fields import apply_patch


class MetadataService:
    def __init__(self, pool: Pool, extractor: MetadataExtractor | None = None) -> None:
        self.pool = pool
        self.extractor = extractor  # LLM metadata extraction (metadata/extraction.py)
        self.extract_wake = asyncio.Event()  # its worker runs beside the ingestion worker (IngestService)

    async def set_upload_metadata(
        self, principal: Principal, registered: Sequence[Registered], metadata: dict[str, Any]
    ) -> None:
        """A person's metadata (checked) on the documents just queued (not on duplicates)."""
        ids = [r.document_id for r in registered if r.document_id and r.status in ("queued", "requeued")]
        if ids and metadata:
            async with self.pool.connection() as conn:
                await repo.add_metadata(conn, principal.user_id, ids, metadata)

    async def update_metadata(
        self, principal: Principal, document_id: UUID, patch: dict[str, Any] | None, *, title: str | None = None
    ) -> dict[str, Any]:
        """Merge a person's (checked) keys into the metadata (null removes one) and/or set a new title. The
        owner or a collection writer; a reader gets 403, anyone else 404."""
        async with self.pool.connection() as conn:
            await writable_document(conn, principal, document_id, "edit its metadata")
            async with conn.transaction():
                row = await meta_repo.lock_metadata(conn, document_id)
                if row is None:
                    raise NotFound(f"document {document_id} not found")
                # The title lives in the `title` metadata key too, so that chunking the file again keeps it.
                patch = {**(patch or {}), **({"title": title} if title is not None else {})}
                await meta_repo.write_metadata(conn, document_id, apply_patch(row["metadata"] or {}, patch))
                if isinstance(patch.get("title"), str):
                    await meta_repo.write_title(conn, document_id, patch["title"])
            return await writable_document(conn, principal, document_id, "edit its metadata")

    async def request_extraction(self, principal: Principal, document_id: UUID | None = None) -> list[UUID]:
        """Queue the LLM extraction again: for one document (owner or collection writer: 403 for a reader, 404
        for anyone else) or for every document of the principal; the worker takes them when they are ready."""
        async with self.pool.connection() as conn:
            if document_id is not None:
                await writable_document(conn, principal, document_id, "extract its metadata")
                ids = [document_id]
            else:
                ids = await meta_repo.owned_ids(conn, principal.user_id)
            queued = await meta_repo.mark_pending(conn, ids)
        self.extract_wake.set()
        return queued

    async def extract_pending(self, ids: Sequence[UUID] | None = None) -> tuple[int, int]:
        """Run the extraction in this process for what waits (only `ids` when given): (done, failed)."""
        if self.extractor is None:
            return 0, 0
        return await self.extractor.run_pending(ids)
