"""Processing queued documents: parse → chunk → embed → store, in three overlapping stages.

The documents table is the job queue: rows are claimed with `FOR UPDATE SKIP LOCKED`, so any number of
worker processes (the CLI, `ragchat worker`, the server's in-process worker) can share it. A claim is a lease
(`lease_until`, `worker_id`) for INGEST_LEASE_S seconds, renewed by a heartbeat every third of that while the
worker lives: a slow document is never taken twice, a killed worker's is taken again once its lease runs out,
and after INGEST_MAX_ATTEMPTS claims it is failed with the last error. A document cancelled, deleted or taken
over meanwhile is dropped at the next batch (the store checks the lease under a row lock). A document's
chunks and vectors are written and its status flipped to `ready` in one transaction, so search never sees
half of one. Vectors go into the active embedding space (server/vectors).

Fair and bounded (issue 43): the claim lets owners take turns (queue.claim). Two lanes per worker: "light"
documents (small text and office files) are parsed here in a thread, batch after batch; "heavy" ones (images,
PDFs, files over INLINE_BLOB) each in a child process (parsing/isolated.py), at most INGEST_HEAVY_SLOTS at
once, while the light lane goes on claiming, so a 300-page scan never holds up another user's note. A heavy
document cancelled while it is parsed has its child killed within INGEST_CANCEL_POLL_S.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np
import psycopg
from psycopg_pool import PoolTimeout

from ragchat.core.errors import DatabaseUnavailable, RagchatError
from ragchat.db.pool import Pool
from ragchat.documents.catalog import chunk_store, ocr_lines
from ragchat.documents.catalog import repository as repo
from ragchat.documents.catalog.shared import BEIR_RECORD_TYPE, DetectedLanguage, LeaseLost
from ragchat.documents.chunking.llm import llm_chooser
from ragchat.documents.chunking.sentences import content_hash, embedding_text
from ragchat.documents.chunking.strategy import blocking_embed, chunk_document
from ragchat.documents.ingest import queue
from ragchat.documents.ingest.language import LanguageDetection, detection_for
from ragchat.documents.parsing.isolated import parse_in_child
from ragchat.documents.parsing.limits import Cancelled, ParseLimits
from ragchat.documents.parsing.ocr import PageLayout
from ragchat.documents.parsing.parsers import ParsedDocument, ParseError, Section, parse
from ragchat.observability import metrics, tracing
from ragchat.providers.embeddings.base import EmbeddingProvider
from ragchat.settings import IngestionSettings
from ragchat.vectors import store as vectors
from ragchat.vectors.registry import ActiveSpace, SpaceRegistry

log = logging.getLogger(__name__)


@dataclass
class Prepared:
    id: UUID
    owner: UUID
    title: str
    chunks: list[Any]
    hashes: list[str]  # of each chunk's embedding text (title + content), made again when it is embedded
    page_count: int | None
    metadata: dict[str, Any]
    source_path: str | None
    vectors: np.ndarray | None = None
    space: ActiveSpace | None = None
    embedded: int = 0  # chunks this worker embedded for it (the rest came from the vector cache)
    chunking: dict[str, Any] | None = None  # the strategy used and why (documents.chunking)
    filled: int = 0  # rows of `vectors` set so far
    language: DetectedLanguage | None = None  # its text-search configuration (ingest/language.py)
    ocr_pages: list[tuple[int, PageLayout]] = field(default_factory=list)  # OCR lines with boxes, per page

    def put(self, index: int, vector: np.ndarray) -> None:
        if self.vectors is None:
            self.vectors = np.empty((len(self.hashes), vector.shape[0]), dtype=np.float32)
        self.vectors[index] = vector
        self.filled += 1

    def text(self, index: int) -> str:
        return embedding_text(self.title, self.chunks[index].content)


@dataclass
class Progress:
    documents_done: int = 0
    documents_failed: int = 0
    chunks_done: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks_total: int = 0  # chunks of the documents parsed so far (stored, under way or failed later)
    documents_parsed: int = 0

    def eta_s(self, documents: int, elapsed_s: float) -> float | None:
        """Seconds left for `documents` in all, from the chunk rate so far (documents not parsed yet are
        assumed to be as long as the parsed ones); None until something was embedded."""
        embedded = self.chunks_embedded + self.chunks_reused
        if not embedded or not self.documents_parsed or elapsed_s <= 0:
            return None
        expected = self.chunks_total / self.documents_parsed * max(documents - self.documents_failed, 0)
        return max(expected - embedded, 0.0) / (embedded / elapsed_s)

    failures: list[tuple[str, str]] = field(default_factory=list)


INLINE_BLOB = 1 << 20  # a claim brings files up to this size with it; a bigger one is read when its turn comes


def parse_document(
    content_type: str,
    filename: str,
    data: bytes,
    limits: ParseLimits | None = None,
    progress: Callable[[str], None] | None = None,
) -> ParsedDocument:
    """The parsed file (a BEIR record is already text), within `limits` (the defaults when None); `progress`
    hears what a long parse is doing (OCR: "OCR page 3 of 12")."""
    if content_type == BEIR_RECORD_TYPE:
        record = json.loads(data)
        return ParsedDocument(
            title=record.get("title") or record["_id"],
            sections=[Section(text=record.get("text") or "")] if (record.get("text") or "").strip() else [],
            metadata={},
        )
    return parse(data, filename, limits, progress)


class IngestionPipeline:
    """Claims queued documents and runs them through three overlapping stages: prepare, embed, store."""

    def __init__(
        self,
        pool: Pool,
        spaces: SpaceRegistry,
        settings: IngestionSettings,
        *,
        embed_batch_size: int,
        chat_model: str,
        on_progress: Callable[[Progress], None] | None = None,
        llm: Any | None = None,  # CHUNK_SEMANTIC_LLM: the semantic chunker asks it to choose among cuts
        wake: asyncio.Event | None = None,  # set when something is queued: looked at while heavy parses run
    ) -> None:
        self.pool = pool
        self.wake = wake or asyncio.Event()
        self.heavy: set[asyncio.Task[None]] = set()  # heavy documents being parsed in child processes
        self.llm = llm if settings.chunk_semantic_llm else None
        self.spaces = spaces
        self.settings = settings
        self.on_progress = on_progress or (lambda _p: None)
        self.progress = Progress()
        self.embed_batch_size = embed_batch_size  # EMBED_BATCH_SIZE
        self.chat_model = chat_model  # CHAT_MODEL: the semantic chunker's chooser
        self.group_chunks = max(embed_batch_size * 4, 64)
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease_s = settings.ingest_lease_s
        self.lost: set[UUID] = set()  # claimed, then cancelled, deleted or taken over: dropped, never stored
        self.in_flight = 0  # groups handed to the embed stage and not yet stored or dropped
        self.drained = asyncio.Event()  # set while no group is in flight
        self.drained.set()
        self.requeued = False  # a document went back to the queue after a fault that may pass
        self.loop: asyncio.AbstractEventLoop | None = None  # the semantic chunker embeds through it from a thread
        self.languages: LanguageDetection | None = None  # built on first run (the server's configurations)

    def _alive(self, docs: list[Prepared]) -> list[Prepared]:
        return [d for d in docs if d.id not in self.lost]

    async def _heartbeat(self) -> None:
        """Renew this worker's leases every third of the lease; note the documents it no longer holds."""
        while True:
            await asyncio.sleep(self.lease_s / 3)
            try:
                async with self.pool.connection() as conn:
                    await queue.renew_leases(conn, self.worker_id, self.lease_s)
            except Exception as exc:  # the database is away: the next beat tries again (the store re-checks)
                log.warning("could not renew ingestion leases: %s", exc)

    async def _check_held(self, docs: list[Prepared]) -> list[Prepared]:
        """Between batches: drop the documents cancelled, deleted or taken over since they were claimed."""
        docs = self._alive(docs)
        if not docs:
            return docs
        async with self.pool.connection() as conn:
            kept = await queue.held(conn, self.worker_id, [d.id for d in docs])
        for d in docs:
            if d.id not in kept:
                log.info("document %s was cancelled, deleted or taken over: its work is dropped", d.id)
                self.lost.add(d.id)
        return self._alive(docs)

    async def run(self, ids: Sequence[UUID] | None = None) -> Progress:
        """Process queued documents (only `ids` when given) until none is left to claim (documents queued
        again after a passing fault included: they come back, after their backoff, until INGEST_MAX_ATTEMPTS)."""
        self.languages = self.languages or await detection_for(self.pool, self.settings.text_search_config)
        while True:
            self.requeued = False
            await self._round(ids)
            if not self.requeued:
                return self.progress
            async with self.pool.connection() as conn:
                wait = await queue.next_due(conn, ids)
            if wait:
                await asyncio.sleep(
                    min(wait, self.settings.ingest_retry_backoff_s * 2**self.settings.ingest_max_attempts)
                )

    async def _round(self, ids: Sequence[UUID] | None) -> None:
        prepared: asyncio.Queue[list[Prepared] | None] = asyncio.Queue(maxsize=2)
        embedded: asyncio.Queue[list[Prepared] | None] = asyncio.Queue(maxsize=2)
        stages = [
            asyncio.create_task(self._prepare_stage(ids, prepared)),
            asyncio.create_task(self._embed_stage(prepared, embedded)),
            asyncio.create_task(self._store_stage(embedded)),
        ]
        heartbeat = asyncio.create_task(self._heartbeat())
        try:
            await asyncio.gather(*stages)
        finally:
            heartbeat.cancel()
            for task in stages:
                task.cancel()

    async def _prepare_stage(self, ids: Sequence[UUID] | None, out: asyncio.Queue[list[Prepared] | None]) -> None:
        group: list[Prepared] = []
        self.loop = asyncio.get_running_loop()

        async def flush() -> None:
            nonlocal group
            if group:
                self.in_flight += 1
                self.drained.clear()
                await out.put(group)
                group = []

        try:
            while True:
                async with self.pool.connection() as conn:
                    given_up = await queue.give_up_expired(conn, max_attempts=self.settings.ingest_max_attempts)
                    if given_up:
                        log.warning("%d documents failed: their worker stopped on every attempt", given_up)
                    rows = await queue.claim(
                        conn,
                        limit=32,
                        ids=ids,
                        worker_id=self.worker_id,
                        lease_s=self.lease_s,
                        inline=INLINE_BLOB,
                        heavy_limit=self.settings.ingest_heavy_slots - len(self.heavy),
                        heavy_per_owner=self.settings.ingest_heavy_per_user,
                    )
                if not rows:
                    if not self.heavy:
                        break
                    await flush()
                    await self._await_heavy_or_work()
                    continue
                try:
                    target = await self.spaces.for_ingest()
                except RagchatError as exc:  # the embedding model cannot answer: say why on each document
                    for row in rows:
                        await self._fail(row["id"], row["filename"], exc.message, retry=True)
                    continue
                for row in (r for r in rows if r["heavy"]):
                    task = asyncio.create_task(self._prepare_heavy(row, target, out), name=f"parse-{row['id']}")
                    self.heavy.add(task)
                    task.add_done_callback(self.heavy.discard)
                light = [r for r in rows if not r["heavy"]]
                if not light:
                    continue
                results = await asyncio.to_thread(self._prepare_rows, light, target.embedder)
                with tracing.span("ingest.parse", jobs=[r["id"] for r in light], **{"ragchat.documents": len(light)}):
                    parsed = await self._parsed(light, results)
                for ready in parsed:
                    group.append(ready)
                    if sum(len(d.chunks) for d in group) >= self.group_chunks:
                        await flush()
            await flush()
        finally:
            for task in list(self.heavy):
                task.cancel()
            await asyncio.gather(*self.heavy, return_exceptions=True)
            await out.put(None)

    async def _await_heavy_or_work(self) -> None:
        """While heavy documents are parsed and nothing else was claimed: wait until one finishes, something is
        queued (the upload route's wake) or a poll's time has passed, then claim again."""
        waker = asyncio.create_task(self.wake.wait())
        try:
            await asyncio.wait([waker, *self.heavy], timeout=2.0, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waker.cancel()
        self.wake.clear()

    async def _prepare_heavy(self, row: dict[str, Any], target: ActiveSpace, out: asyncio.Queue[Any]) -> None:
        """Parse one heavy document in a child process (killed if it is cancelled meanwhile), chunk it here and
        hand it to the embed stage as a group of its own."""
        doc_id, name = row["id"], row["filename"]
        spent = 0  # pixels counted for OCR so far: the child tells page by page, so a cancelled parse counts too

        def count(pixels: int) -> None:
            nonlocal spent
            spent = pixels

        try:
            if row["data"] is None:  # its bytes did not come with the claim
                async with self.pool.connection() as conn:
                    row["data"] = await repo.blob(conn, doc_id)
            data = row.pop("data", None)
            if data is None:
                raise ParseError("the file's bytes are missing; upload it again")
            limits = await self._limits_for(row["owner_id"])
            with tracing.span("ingest.parse", jobs=[doc_id], **{"ragchat.documents": 1}):
                done = await parse_in_child(
                    bytes(data),
                    name,
                    limits,
                    on_note=self._noter(doc_id),
                    wanted=lambda: self._holds(doc_id),
                    poll_s=self.settings.ingest_cancel_poll_s,
                    on_pixels=count,
                )
            del data
            spent = done.ocr_pixels
            result: Prepared | str = await asyncio.to_thread(self._chunked, row, done.document, target.embedder)
        except Cancelled:
            log.info("document %s was cancelled, deleted or taken over while parsed: its parse was stopped", doc_id)
            self.lost.add(doc_id)
            return
        except ParseError as exc:
            result = str(exc)
        except Exception as exc:  # a bug must fail one document, not the worker
            log.exception("failed to parse %s", name)
            result = f"could not read {name}: {type(exc).__name__}: {exc}"
        finally:
            if spent:  # against the owner's OCR_USER_MEGAPIXELS_PER_DAY, whatever became of the parse
                await self._count_ocr(row["owner_id"], doc_id, spent)
        parsed = await self._parsed([row], [result])
        if parsed:
            self.in_flight += 1
            self.drained.clear()
            await out.put(parsed)

    async def _count_ocr(self, owner: UUID, document_id: UUID, pixels: int) -> None:
        try:
            async with self.pool.connection() as conn:
                await queue.record_ocr(conn, owner, document_id, pixels)
        except Exception as exc:  # the database is away: the pixels go uncounted, the document goes on
            log.warning("could not count the OCR pixels of %s: %s", document_id, exc)

    async def _holds(self, document_id: UUID) -> bool:
        """Whether this worker still holds the document (asked while its child parses it)."""
        if document_id in self.lost:
            return False
        async with self.pool.connection() as conn:
            return bool(await queue.held(conn, self.worker_id, [document_id]))

    async def _limits_for(self, owner: UUID) -> ParseLimits:
        """The parse limits, with what the owner has left today of OCR_USER_MEGAPIXELS_PER_DAY."""
        async with self.pool.connection() as conn:
            used = await queue.ocr_used(conn, owner)
        limits = ParseLimits.from_settings(self.settings)
        return dataclasses.replace(limits, ocr_user_megapixels_left=limits.ocr_user_megapixels_per_day - used / 1e6)

    def _landed(self) -> None:
        """A group left the pipeline (stored, failed or dropped)."""
        self.in_flight -= 1
        if not self.in_flight:
            self.drained.set()

    async def _parsed(self, rows: Sequence[dict[str, Any]], results: list[Prepared | str]) -> list[Prepared]:
        """Record the chunk totals of what parsed (so the page shows N of M at once) and fail what did not."""
        parsed = [r for r in results if not isinstance(r, str) and r.id not in self.lost]
        async with self.pool.connection() as conn:
            await queue.set_progress(conn, {r.id: len(r.chunks) for r in parsed}, total=True)
        self.progress.chunks_total += sum(len(r.chunks) for r in parsed)
        self.progress.documents_parsed += len(parsed)
        for row, result in zip(rows, results, strict=True):
            if isinstance(result, str):
                await self._fail(row["id"], row["filename"], result)
        return parsed

    def _prepare_rows(self, rows: Sequence[dict[str, Any]], embedder: EmbeddingProvider) -> list[Prepared | str]:
        """Parse and chunk (runs in a worker thread). A string result is the failure reason."""
        results: list[Prepared | str] = []
        for row in rows:
            try:
                results.append(self._prepare_one(row, embedder))
            except ParseError as exc:
                results.append(str(exc))
            except Exception as exc:  # a parser bug must fail one document, not the worker
                log.exception("failed to parse %s", row["filename"])
                results.append(f"could not read {row['filename']}: {type(exc).__name__}: {exc}")
        return results

    def _prepare_one(self, row: dict[str, Any], embedder: EmbeddingProvider) -> Prepared:
        data = row.pop("data", None)  # the row no longer holds the bytes: they go once parsed
        if data is None:
            raise ParseError("the file's bytes are missing; upload it again")
        limits = ParseLimits.from_settings(self.settings)
        parsed = parse_document(row["content_type"], row["filename"], bytes(data), limits, self._noter(row["id"]))
        del data
        return self._chunked(row, parsed, embedder)

    def _chunked(self, row: dict[str, Any], parsed: ParsedDocument, embedder: EmbeddingProvider) -> Prepared:
        """The parsed document chunked (runs in a worker thread)."""
        asked = row.get("chunking") or {}  # set at upload, by `ingest --chunk` or a re-chunk
        tokens = min(int(asked.get("tokens") or self.settings.chunk_tokens), embedder.max_tokens)
        chunked = chunk_document(
            parsed.sections,
            row["filename"],
            embedder.count_tokens,
            blocking_embed(embedder, self.loop),
            strategy=asked.get("requested") or self.settings.chunk_strategy,
            max_tokens=tokens,
            overlap=min(self.settings.chunk_overlap * tokens // self.settings.chunk_tokens, tokens - 1),
            max_chars=self.settings.chunk_max_chars,
            choose=llm_chooser(self.llm, self.chat_model, self.loop) if self.llm and self.loop else None,
        )
        chunks = chunked.chunks
        if not chunks:
            raise ParseError("no text found in the document (empty or whitespace only)")
        title = parsed.title or row["title"]
        if row["content_type"] != BEIR_RECORD_TYPE and title == Path(row["filename"]).stem:
            title = row["title"] or title
        meta = dict(parsed.metadata)
        return Prepared(
            id=row["id"],
            owner=row["owner_id"],
            title=title,
            chunks=chunks,
            hashes=[content_hash(embedding_text(title, c.content)) for c in chunks],
            page_count=parsed.metadata.get("page_count"),
            metadata=meta,
            source_path=(row["metadata"] or {}).get("source_path"),
            chunking=chunked.record,
            language=self.languages.detect([c.content for c in chunks]) if self.languages else None,
            ocr_pages=[(s.page, s.ocr) for s in parsed.sections if s.ocr is not None and s.page is not None],
        )

    def _noter(self, document_id: UUID) -> Callable[[str], None]:
        """For the parse (in a worker thread): each progress line goes to the document's row (`progress_note`,
        shown while it is read), without waiting for it."""
        loop = self.loop

        async def note(text: str) -> None:
            try:
                async with self.pool.connection() as conn:
                    await queue.set_note(conn, document_id, self.worker_id, text)
            except Exception as exc:  # a progress line is worth no failure
                log.warning("could not record the progress of %s: %s", document_id, exc)

        def send(text: str) -> None:
            if loop is not None and not loop.is_closed():
                asyncio.run_coroutine_threadsafe(note(text), loop)

        return send

    async def _embed_stage(
        self, inp: asyncio.Queue[list[Prepared] | None], out: asyncio.Queue[list[Prepared] | None]
    ) -> None:
        try:
            while (group := await inp.get()) is not None:
                try:
                    with tracing.span("ingest.embed", jobs=[d.id for d in group], **{"ragchat.documents": len(group)}):
                        group = await self._embed_group(group)
                except Exception as exc:
                    log.exception("embedding failed")
                    for doc in group:
                        await self._fail(doc.id, doc.title, f"embedding failed: {exc}", retry=True)
                    group = []
                if group:
                    await out.put(group)
                else:
                    self._landed()
        finally:
            await out.put(None)

    async def _embed_group(self, group: list[Prepared]) -> list[Prepared]:
        """Embed the group's chunks (cached vectors reused) straight into each document's vector array; returns
        the documents still held at the end."""
        group = await self._check_held(group)
        if not group:
            return group
        target = await self.spaces.for_ingest()
        places: dict[str, list[tuple[Prepared, int]]] = {}  # where each distinct text's vector goes
        for doc in group:
            doc.vectors, doc.filled, doc.embedded = None, 0, 0
            for i, h in enumerate(doc.hashes):
                places.setdefault(h, []).append((doc, i))
        async with self.pool.connection() as conn:
            for owner in {d.owner for d in group}:
                hashes = list({h for d in group if d.owner == owner for h in d.hashes})
                for h, v in (await vectors.cached_vectors(conn, target.space, owner, hashes)).items():
                    for doc, i in places.pop(h, ()):
                        doc.put(i, v)
        todo = list(places)
        for h in todo:
            places[h][0][0].embedded += 1
        step = self.embed_batch_size  # progress after every batch: the page's bar and ETA move steadily
        for start in range(0, len(todo), step):
            if start and not await self._check_held(group):  # all cancelled or deleted: stop embedding
                return []
            batch = todo[start : start + step]
            made = await target.embedder.embed_documents([places[h][0][0].text(places[h][0][1]) for h in batch])
            for h, v in zip(batch, made, strict=True):
                for doc, i in places.pop(h):
                    doc.put(i, v)
            self.progress.chunks_embedded += len(batch)
            metrics.CHUNKS_EMBEDDED.inc(len(batch))
            await self._report_partial(group)
            self.on_progress(self.progress)
        self.progress.chunks_reused += sum(len(d.hashes) for d in group) - len(todo)
        group = self._alive(group)
        for doc in group:
            assert doc.filled == len(doc.hashes), "every chunk has its vector"
            doc.space = target
        return group

    async def _report_partial(self, group: list[Prepared]) -> None:
        """chunks_done of every document of the group with some of its chunks embedded (one statement; a
        document done in one batch goes from 0 to ready)."""
        async with self.pool.connection() as conn:
            await queue.set_progress(conn, {d.id: d.filled for d in self._alive(group) if d.filled})

    async def _store_stage(self, inp: asyncio.Queue[list[Prepared] | None]) -> None:
        while (group := await inp.get()) is not None:
            try:
                for doc in group:
                    with tracing.span("ingest.store", jobs=[doc.id], **{"ragchat.document_id": str(doc.id)}):
                        await self._store(doc)
                    doc.chunks, doc.vectors, doc.ocr_pages = [], None, []  # memory goes back as each is stored
            finally:
                self._landed()

    async def _store(self, doc: Prepared, retried: bool = False) -> None:
        assert doc.vectors is not None and doc.space is not None
        stored = [
            chunk_store.StoredChunk(i, c.content, c.page, c.section, c.token_count, h, v, c.location)
            for i, (c, h, v) in enumerate(zip(doc.chunks, doc.hashes, doc.vectors, strict=True))
        ]
        try:
            async with self.pool.connection() as conn, conn.transaction():
                await chunk_store.store_chunks(
                    conn,
                    document_id=doc.id,
                    owner=doc.owner,
                    title=doc.title,
                    chunks=stored,
                    space=doc.space.space,
                    page_count=doc.page_count,
                    metadata=doc.metadata,
                    replaces_source=doc.source_path,
                    worker_id=self.worker_id,
                    chunking=doc.chunking,
                    language=doc.language,
                )
                await ocr_lines.replace_lines(conn, doc.id, doc.ocr_pages)  # [] deletes what a re-ingest left
        except LeaseLost:
            log.info("document %s was cancelled, deleted or taken over before it was stored: dropped", doc.id)
            self.lost.add(doc.id)
            return
        except chunk_store.SpaceChanged:
            if retried:
                await self._fail(doc.id, doc.title, "the embedding model switched twice while this document was stored")
                return
            self.spaces.invalidate()  # a re-embed switched models meanwhile: embed again with the new one
            if await self._embed_group([doc]):
                await self._store(doc, retried=True)
            return
        except Exception as exc:
            log.exception("storing %s failed", doc.id)
            await self._fail(doc.id, doc.title, f"could not store chunks: {exc}", retry=True)
            return
        log.info(
            "stored document %s: %d chunks (%d embedded here, %d from the cache) by worker %s",
            doc.id,
            len(stored),
            doc.embedded,
            len(stored) - doc.embedded,
            self.worker_id,
        )
        self.progress.documents_done += 1
        self.progress.chunks_done += len(stored)
        self.on_progress(self.progress)

    async def _fail(self, document_id: UUID, name: str, reason: str, *, retry: bool = False) -> None:
        """Record the failure while this worker holds the document. `retry` (a fault that may pass: the model
        or the database) queues it again until INGEST_MAX_ATTEMPTS; a bad file fails at once."""
        limit = self.settings.ingest_max_attempts if retry else 0
        async with self.pool.connection() as conn:
            status = await queue.mark_failed(
                conn,
                document_id,
                reason,
                worker_id=self.worker_id,
                retry_below=limit,
                backoff_s=self.settings.ingest_retry_backoff_s,
            )
        self.requeued = self.requeued or status == "queued"
        if status != "failed":  # queued again, or no longer ours (cancelled, deleted, taken over)
            return
        self.progress.documents_failed += 1
        metrics.DOCUMENTS_FAILED.inc()
        self.progress.failures.append((name, reason))
        self.on_progress(self.progress)


async def run_worker(
    pool: Pool,
    spaces: SpaceRegistry,
    settings: IngestionSettings,
    stop: asyncio.Event,
    wake: asyncio.Event | None = None,
    poll_s: float = 2.0,
    llm: Any | None = None,
    *,
    embed_batch_size: int,
    chat_model: str,
) -> None:
    """Process queued documents until `stop` is set (`ragchat worker` and the server's in-process worker).

    `wake` (set by the upload route) starts the next round at once; otherwise the queue is polled.
    """
    wake = wake or asyncio.Event()
    down = False
    while not stop.is_set():
        wake.clear()
        try:
            pipeline = IngestionPipeline(
                pool, spaces, settings, embed_batch_size=embed_batch_size, chat_model=chat_model, llm=llm, wake=wake
            )
            progress = await pipeline.run()
            if progress.documents_done or progress.documents_failed:
                log.info("ingested %d documents (%d failed)", progress.documents_done, progress.documents_failed)
        except (DatabaseUnavailable, psycopg.OperationalError, PoolTimeout) as exc:
            if not down:  # one line per outage, not a traceback every poll
                log.warning("ingestion waits for the database: %s", str(exc).splitlines()[0] if str(exc) else exc)
            down = True
        except Exception:
            log.exception("ingestion worker iteration failed")
        else:
            if down:
                log.warning("the database answers again: ingestion goes on")
            down = False
        waiters = [asyncio.create_task(stop.wait()), asyncio.create_task(wake.wait())]
        await asyncio.wait(waiters, timeout=poll_s, return_when=asyncio.FIRST_COMPLETED)
        for waiter in waiters:
            waiter.cancel()
