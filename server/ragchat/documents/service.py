"""The documents domain as one object: register uploads and paths, ingest, list, get, delete, run workers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any
from uuid import UUID

from ragchat.core.errors import Conflict, Forbidden, NotFound
from ragchat.core.principal import Principal
from ragchat.db.pool import Pool
from ragchat.documents.catalog import listing
from ragchat.documents.catalog import repository as repo
from ragchat.documents.catalog.listing import ListQuery
from ragchat.documents.fetch.fetcher import WebFetcher
from ragchat.documents.ingest.pipeline import IngestionPipeline, Progress, run_worker
from ragchat.documents.ingest.registration import Asked, Registered, register_bytes, register_paths
from ragchat.documents.metadata import repository as meta_repo
from ragchat.documents.metadata.extraction import MetadataExtractor
from ragchat.documents.metadata.fields import apply_patch
from ragchat.settings import Settings
from ragchat.vectors.registry import SpaceRegistry


class DocumentService:
    def __init__(
        self, pool: Pool, spaces: SpaceRegistry, settings: Settings, extractor: MetadataExtractor | None = None
    ) -> None:
        self.pool = pool
        self.spaces = spaces
        self.settings = settings
        self.web = WebFetcher(settings)  # tests replace it with one that allows their local server
        self.extractor = extractor  # LLM metadata extraction (server/documents/extraction.py)
        self._wake = asyncio.Event()
        self._extract_wake = asyncio.Event()

    # ---- registration -------------------------------------------------------------------------------------
    async def register_upload(
        self, principal: Principal, filename: str, data: bytes, asked: Asked | None = None
    ) -> list[Registered]:
        """Queue one uploaded file (with the chunking and metadata `asked`, on new documents only); the in-process
        worker starts on it at once."""
        out = await register_bytes(self.pool, principal.user_id, filename, data, self.settings, asked=asked)
        self._wake.set()
        return out

    async def set_chunking(
        self, principal: Principal, registered: Sequence[Registered], chunking: dict[str, Any]
    ) -> None:
        """The chunking asked for, on documents just queued (not on duplicates) by another path (a URL)."""
        ids = [r.document_id for r in registered if r.document_id and r.status in ("queued", "requeued")]
        if ids:
            async with self.pool.connection() as conn:
                await repo.set_chunking(conn, principal.user_id, ids, chunking)

    async def rechunk(self, principal: Principal, document_id: UUID, chunking: dict[str, Any]) -> dict[str, Any]:
        """Queue a ready or failed document again to be chunked as `chunking` asks. The owner or a collection
        writer (a reader gets 403, anyone else 404); 409 while it is queued or processing."""
        async with self.pool.connection() as conn:
            row = await repo.get_document(conn, principal.user_id, document_id)
            if row is None:
                raise NotFound(f"document {document_id} not found")
            if row["access"] == "read":
                raise Forbidden("only the document's owner or a collection writer can re-chunk it")
            if not await repo.rechunk(conn, document_id, chunking):
                row = await repo.get_document(conn, principal.user_id, document_id) or row
                if row["status"] in ("queued", "processing"):
                    raise Conflict(f"document {document_id} is {row['status']}: re-chunk it once it is done")
                raise Conflict(f"document {document_id} has no stored file to chunk again: upload it again")
            row = await repo.get_document(conn, principal.user_id, document_id) or row
        self._wake.set()
        return row

    async def register_url(self, principal: Principal, url: str) -> list[Registered]:
        """Fetch a web page or file (server/documents/web.py: SSRF guard, time and size limits) and queue it like
        an upload, its metadata naming `source_url` (after redirects) and `fetched_at`."""
        page = await self.web.fetch(url)
        owner, settings = principal.user_id, self.settings
        out = await register_bytes(
            self.pool, owner, page.filename, page.data, settings, title=page.title, metadata=page.metadata
        )
        self._wake.set()
        return out

    async def register_bulk(self, principal: Principal, filename: str, data: bytes) -> list[Registered]:
        """Queue a corpus (e.g. a BEIR `.jsonl`) without the upload size limit, retrying earlier failures."""
        return await register_bytes(
            self.pool, principal.user_id, filename, data, self.settings, check_size=False, retry_failed=True
        )

    async def register_paths(
        self, principal: Principal, paths: Sequence[Path], *, retry_failed: bool = False, asked: Asked | None = None
    ) -> list[Registered]:
        return await register_paths(
            self.pool, principal.user_id, paths, self.settings, retry_failed=retry_failed, asked=asked
        )

    # ---- processing ---------------------------------------------------------------------------------------
    async def ingest(
        self, ids: Sequence[UUID] | None = None, on_progress: Callable[[Progress], None] | None = None
    ) -> Progress:
        """Process queued documents (only `ids` when given) in this process until none is left; then, with
        METADATA_EXTRACTION on, extract their metadata (the CLI's ingest: no worker may be running)."""
        llm = self.extractor.llm if self.extractor else None  # CHUNK_SEMANTIC_LLM's boundary choice
        pipeline = IngestionPipeline(self.pool, self.spaces, self.settings, on_progress=on_progress, llm=llm)
        progress = await pipeline.run(ids)
        if self.extractor is not None and self.settings.metadata_extraction:
            await self.extractor.run_pending(ids)
        return progress

    async def run_worker(self, stop: asyncio.Event, poll_s: float = 2.0) -> None:
        """The ingestion worker, and beside it (its own task: the LLM never holds up an ingest) the metadata
        extractor's."""
        if self.extractor is None:
            await run_worker(self.pool, self.spaces, self.settings, stop, self._wake, poll_s)
            return
        llm = self.extractor.llm  # CHUNK_SEMANTIC_LLM's boundary choice
        extraction = asyncio.create_task(self.extractor.run_worker(stop, self._extract_wake), name="metadata-worker")
        try:
            await run_worker(self.pool, self.spaces, self.settings, stop, self._wake, poll_s, llm=llm)
        finally:
            extraction.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await extraction

    # ---- reading ------------------------------------------------------------------------------------------
    async def list(self, principal: Principal, collection_id: UUID | None = None) -> list[dict[str, Any]]:
        """Everything the principal may read: their own documents and those shared through collections."""
        async with self.pool.connection() as conn:
            return await repo.list_documents(conn, principal.user_id, collection_id)

    async def get(self, principal: Principal, document_id: UUID) -> dict[str, Any] | None:
        async with self.pool.connection() as conn:
            return await repo.get_document(conn, principal.user_id, document_id)

    async def read_chunks(
        self,
        principal: Principal,
        document_id: UUID,
        *,
        start: int = 0,
        end: int | None = None,
        page: int | None = None,
        limit: int = 50,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The document and up to `limit` of its chunks from index `start` to `end` (inclusive; of one page when
        `page` is given), only if the principal may read it; otherwise 404 (missing or not theirs: the same)."""
        async with self.pool.connection() as conn:
            document = await repo.get_document(conn, principal.user_id, document_id)
            if document is None:
                raise NotFound(f"document {document_id} not found")
            chunks = await repo.read_chunks(
                conn, principal.user_id, document_id, start=start, end=end, page=page, limit=limit
            )
        return document, chunks

    async def list_page(self, principal: Principal, query: ListQuery) -> tuple[list[dict[str, Any]], int]:
        """One filtered, sorted page of what the principal may read, and how many match in all."""
        async with self.pool.connection() as conn:
            return await listing.list_page(conn, principal.user_id, query)

    async def chunk_page(
        self, principal: Principal, document_id: UUID, *, offset: int, limit: int, chunk_id: int | None = None
    ) -> tuple[list[dict[str, Any]], int, int]:
        """Chunks of a readable document in order (404 otherwise): from `offset`, or with `chunk_id` the page
        around that chunk (404 when it is not one of the document's). Returns (chunks, total, offset)."""
        async with self.pool.connection() as conn:
            if await repo.get_document(conn, principal.user_id, document_id) is None:
                raise NotFound(f"document {document_id} not found")
            if chunk_id is not None:
                ordinal = await listing.chunk_ordinal(conn, document_id, chunk_id)
                if ordinal is None:
                    raise NotFound(f"chunk {chunk_id} is not a chunk of document {document_id}")
                offset = max(0, ordinal - limit // 2)
            rows, total = await listing.chunk_page(conn, document_id, offset=offset, limit=limit)
        return rows, total, offset

    async def open_file(self, principal: Principal, document_id: UUID) -> tuple[dict[str, Any], int]:
        """A readable document and the size of its original file (404 when either is missing)."""
        async with self.pool.connection() as conn:
            row = await repo.get_document(conn, principal.user_id, document_id)
            size = None if row is None else await listing.blob_size(conn, document_id)
        if row is None or size is None:
            raise NotFound(f"document {document_id} not found")
        return row, size

    def file_slices(self, document_id: UUID, size: int) -> AsyncIterator[bytes]:
        return listing.blob_slices(self.pool, document_id, size)

    async def bulk(self, principal: Principal, action: str, ids: Sequence[UUID]) -> dict[UUID, str | None]:
        """Delete or retry many documents at once, with the single routes' rules; per id None or why not."""
        unique = list(dict.fromkeys(ids))
        async with self.pool.connection() as conn:
            if action == "delete":
                return await listing.bulk_delete(conn, principal.user_id, unique)
            out = await listing.bulk_retry(conn, principal.user_id, unique)
        if any(v is None for v in out.values()):
            self._wake.set()
        return out

    async def delete(self, principal: Principal, document_id: UUID) -> None:
        """The owner deletes; a reader gets 403 (they know it exists); anyone else 404."""
        async with self.pool.connection() as conn:
            if await repo.delete_document(conn, principal.user_id, document_id):
                return
            if await repo.get_document(conn, principal.user_id, document_id) is not None:
                raise Forbidden("only the document's owner can delete it (you can remove it from a collection)")
        raise NotFound(f"document {document_id} not found")

    # ---- retry and cancel -----------------------------------------------------------------------------------
    async def retry(self, principal: Principal, document_id: UUID) -> dict[str, Any]:
        """Queue a failed (or stuck: processing with its lease run out) document again, attempts reset.
        Only the owner: a reader gets 403, anyone else 404; 409 when it is neither failed nor stuck."""
        async with self.pool.connection() as conn:
            done = await repo.retry(conn, principal.user_id, document_id)
            row = await self._owned(conn, principal, document_id, "retry")
        if not done:
            raise Conflict(f"document {document_id} is {row['status']}: only a failed or stuck one can be retried")
        self._wake.set()
        return row

    async def cancel(self, principal: Principal, document_id: UUID) -> dict[str, Any]:
        """Stop a queued or processing document (failed, error "cancelled"; the worker drops its work at the
        next batch). Only the owner; 409 when it is already ready or failed."""
        async with self.pool.connection() as conn:
            done = await repo.cancel(conn, principal.user_id, document_id)
            row = await self._owned(conn, principal, document_id, "cancel")
        if not done:
            status = row["status"]
            raise Conflict(f"document {document_id} is {status}: only a queued or processing one can be cancelled")
        return row

    async def retry_all_failed(self, principal: Principal) -> list[UUID]:
        """Queue again every failed document of the principal (`ragchat retry --all-failed`)."""
        async with self.pool.connection() as conn:
            rows = await repo.list_documents(conn, principal.user_id)
            ids = [r["id"] for r in rows if r["status"] == "failed" and r["owner_id"] == principal.user_id]
            retried = [i for i in ids if await repo.retry(conn, principal.user_id, i)]
        if retried:
            self._wake.set()
        return retried

    @staticmethod
    async def _owned(conn: Any, principal: Principal, document_id: UUID, what: str) -> dict[str, Any]:
        row = await repo.get_document(conn, principal.user_id, document_id)
        if row is None:
            raise NotFound(f"document {document_id} not found")
        if row["owner_id"] != principal.user_id:
            raise Forbidden(f"only the document's owner can {what} it")
        return row

    # ---- collections ----------------------------------------------------------------------------------------
    async def check_collection_writable(self, principal: Principal, collection_id: UUID) -> None:
        """Before an upload into a collection: 403 for a reader of it, 404 when the principal cannot see it."""
        async with self.pool.connection() as conn:
            if not await repo.can_write_collection(conn, principal.user_id, collection_id):
                if await repo.collection_role(conn, principal.user_id, collection_id) == "read":
                    raise Forbidden(f"you may only read collection {collection_id}: ask its owner for write access")
                raise NotFound(f"collection {collection_id} not found")

    async def add_to_collection(self, principal: Principal, document_id: UUID, collection_id: UUID) -> None:
        async with self.pool.connection() as conn:
            await repo.add_to_collection(conn, principal.user_id, document_id, collection_id)

    # ---- metadata (server/documents/metadata.py, extraction.py) ----------------------------------------------
    async def set_upload_metadata(
        self, principal: Principal, registered: Sequence[Registered], metadata: dict[str, Any]
    ) -> None:
        """A person's metadata (checked) on the documents just queued (not on duplicates)."""
        ids = [r.document_id for r in registered if r.document_id and r.status in ("queued", "requeued")]
        if ids and metadata:
            async with self.pool.connection() as conn:
                await meta_repo.add_metadata(conn, principal.user_id, ids, metadata)

    async def update_metadata(self, principal: Principal, document_id: UUID, patch: dict[str, Any]) -> dict[str, Any]:
        """Merge a person's (checked) keys into the metadata (null removes one). The owner or a collection
        writer; a reader gets 403, anyone else 404."""
        async with self.pool.connection() as conn:
            await self._writable(conn, principal, document_id, "edit its metadata")
            async with conn.transaction():
                row = await meta_repo.lock_metadata(conn, document_id)
                if row is None:
                    raise NotFound(f"document {document_id} not found")
                await meta_repo.write_metadata(conn, document_id, apply_patch(row["metadata"] or {}, patch))
            return await self._writable(conn, principal, document_id, "edit its metadata")

    async def request_extraction(self, principal: Principal, document_id: UUID | None = None) -> list[UUID]:
        """Queue the LLM extraction again: for one document (owner or collection writer: 403 for a reader, 404
        for anyone else) or for every document of the principal; the worker takes them when they are ready."""
        async with self.pool.connection() as conn:
            if document_id is not None:
                await self._writable(conn, principal, document_id, "extract its metadata")
                ids = [document_id]
            else:
                ids = await meta_repo.owned_ids(conn, principal.user_id)
            queued = await meta_repo.mark_pending(conn, ids)
        self._extract_wake.set()
        return queued

    async def extract_pending(self, ids: Sequence[UUID] | None = None) -> tuple[int, int]:
        """Run the extraction in this process for what waits (only `ids` when given): (done, failed)."""
        if self.extractor is None:
            return 0, 0
        return await self.extractor.run_pending(ids)

    @staticmethod
    async def _writable(conn: Any, principal: Principal, document_id: UUID, what: str) -> dict[str, Any]:
        row = await repo.get_document(conn, principal.user_id, document_id)
        if row is None:
            raise NotFound(f"document {document_id} not found")
        if row.get("access", "owner") == "read":
            raise Forbidden(f"only the document's owner or a collection writer can {what}")
        return row
