"""Ingestion as a service: register uploads, URLs, corpora and paths into the queue, process it (in this
process or as the worker), and retry, cancel or re-chunk a document."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, Protocol, TypedDict
from uuid import UUID

from ragchat.core.errors import Conflict, Forbidden, NotFound
from ragchat.core.principal import Principal
from ragchat.db.pool import Pool
from ragchat.documents.catalog import repository as repo
from ragchat.documents.catalog.service import owned_document
from ragchat.documents.catalog.shared import Asked, Registered
from ragchat.documents.fetch.fetcher import WebFetcher
from ragchat.documents.ingest import queue
from ragchat.documents.ingest.pipeline import IngestionPipeline, Progress, run_worker
from ragchat.documents.ingest.registration import register_bytes, register_paths
from ragchat.providers.llm.base import LLMProvider
from ragchat.settings import IngestionSettings
from ragchat.vectors.registry import SpaceRegistry


class Extractor(Protocol):
    """The metadata extraction (metadata/extraction.py), as ingestion runs it: after an ingest, and beside the
    worker. Its LLM also chooses semantic chunk boundaries (CHUNK_SEMANTIC_LLM)."""

    @property
    def llm(self) -> LLMProvider: ...

    async def run_pending(self, ids: Sequence[UUID] | None = None) -> tuple[int, int]: ...

    async def run_worker(self, stop: asyncio.Event, wake: asyncio.Event, poll_s: float = 5.0) -> None: ...


class Extraction(Protocol):
    """What ingestion needs of the metadata job (metadata/service.py's MetadataService, which the composition
    wires in, documents/api/service.py): ingestion does not import it (the "documents in layers" contract)."""

    @property
    def extractor(self) -> Extractor | None: ...

    @property
    def extract_wake(self) -> asyncio.Event: ...


class _Models(TypedDict):
    embed_batch_size: int
    chat_model: str


class IngestService:
    def __init__(
        self,
        pool: Pool,
        spaces: SpaceRegistry,
        settings: IngestionSettings,
        metadata: Extraction,
        *,
        embed_batch_size: int,
        chat_model: str,
    ) -> None:
        self.pool = pool
        self.spaces = spaces
        self.settings = settings
        self.embed_batch_size = embed_batch_size  # EMBED_BATCH_SIZE
        self.chat_model = chat_model  # CHAT_MODEL: the semantic chunker's chooser
        self.metadata = metadata  # its extractor runs after an ingest and beside the worker
        self.web = WebFetcher(settings)  # tests replace it with one that allows their local server
        self._wake = asyncio.Event()

    def _models(self) -> _Models:
        return {"embed_batch_size": self.embed_batch_size, "chat_model": self.chat_model}

    def wake(self) -> None:
        """Something was queued: the in-process worker looks now."""
        self._wake.set()

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
            if not await queue.rechunk(conn, document_id, chunking):
                row = await repo.get_document(conn, principal.user_id, document_id) or row
                if row["status"] in ("queued", "processing"):
                    raise Conflict(f"document {document_id} is {row['status']}: re-chunk it once it is done")
                raise Conflict(f"document {document_id} has no stored file to chunk again: upload it again")
            row = await repo.get_document(conn, principal.user_id, document_id) or row
        self._wake.set()
        return row

    async def register_url(self, principal: Principal, url: str) -> list[Registered]:
        """Fetch a web page or file (server/ragchat/documents/fetch/: SSRF guard, time and size limits) and queue
        it like an upload, its metadata naming `source_url` (after redirects) and `fetched_at`."""
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

    async def ingest(
        self, ids: Sequence[UUID] | None = None, on_progress: Callable[[Progress], None] | None = None
    ) -> Progress:
        """Process queued documents (only `ids` when given) in this process until none is left; then, with
        METADATA_EXTRACTION on, extract their metadata (the CLI's ingest: no worker may be running)."""
        extractor = self.metadata.extractor
        llm = extractor.llm if extractor else None  # CHUNK_SEMANTIC_LLM's boundary choice
        pipeline = IngestionPipeline(
            self.pool, self.spaces, self.settings, **self._models(), on_progress=on_progress, llm=llm
        )
        progress = await pipeline.run(ids)
        if extractor is not None and self.settings.metadata_extraction:
            await extractor.run_pending(ids)
        return progress

    async def run_worker(self, stop: asyncio.Event, poll_s: float = 2.0) -> None:
        """The ingestion worker, and beside it (its own task: the LLM never holds up an ingest) the metadata
        extractor's."""
        extractor = self.metadata.extractor
        if extractor is None:
            await run_worker(self.pool, self.spaces, self.settings, stop, self._wake, poll_s, **self._models())
            return
        llm = extractor.llm  # CHUNK_SEMANTIC_LLM's boundary choice
        extraction = asyncio.create_task(extractor.run_worker(stop, self.metadata.extract_wake), name="metadata-worker")
        try:
            await run_worker(self.pool, self.spaces, self.settings, stop, self._wake, poll_s, llm=llm, **self._models())
        finally:
            extraction.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await extraction

    async def retry(self, principal: Principal, document_id: UUID) -> dict[str, Any]:
        """Queue a failed (or stuck: processing with its lease run out) document again, attempts reset.
        Only the owner: a reader gets 403, anyone else 404; 409 when it is neither failed nor stuck."""
        async with self.pool.connection() as conn:
            done = await queue.retry(conn, principal.user_id, document_id)
            row = await owned_document(conn, principal, document_id, "retry")
        if not done:
            raise Conflict(f"document {document_id} is {row['status']}: only a failed or stuck one can be retried")
        self._wake.set()
        return row

    async def cancel(self, principal: Principal, document_id: UUID) -> dict[str, Any]:
        """Stop a queued or processing document (failed, error "cancelled"; the worker drops its work at the
        next batch). Only the owner; 409 when it is already ready or failed."""
        async with self.pool.connection() as conn:
            done = await queue.cancel(conn, principal.user_id, document_id)
            row = await owned_document(conn, principal, document_id, "cancel")
        if not done:
            status = row["status"]
            raise Conflict(f"document {document_id} is {status}: only a queued or processing one can be cancelled")
        return row

    async def retry_all_failed(self, principal: Principal) -> list[UUID]:
        """Queue again every failed document of the principal (`ragchat retry --all-failed`)."""
        async with self.pool.connection() as conn:
            rows = await repo.list_documents(conn, principal.user_id)
            ids = [r["id"] for r in rows if r["status"] == "failed" and r["owner_id"] == principal.user_id]
            retried = [i for i in ids if await queue.retry(conn, principal.user_id, i)]
        if retried:
            self._wake.set()
        return retried
