"""Ingestion: register files as queued documents, then parse → chunk → embed → store them.

The documents table is the job queue: rows are claimed with `FOR UPDATE SKIP LOCKED`, so any number of
worker processes (the CLI, `ragchat worker`, the server's in-process worker) can share it. A document's
chunks are written and its status flipped to `ready` in one transaction, so search never sees half of one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

import numpy as np
from psycopg_pool import AsyncConnectionPool

from server.documents import repository as repo
from server.documents.chunking import chunk_sections, content_hash, embedding_text
from server.documents.parsers import (
    ParsedDocument,
    ParseError,
    Section,
    UnsupportedFormat,
    content_type_for,
    iter_beir_jsonl,
    parse,
)
from server.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from server.retrieval.embedder import Embedder
from server.settings import Settings

log = logging.getLogger(__name__)

BEIR_RECORD_TYPE = "application/x-beir-record"
Outcome = Literal["queued", "duplicate", "requeued", "rejected"]


@dataclass
class Registered:
    filename: str
    status: Outcome
    document_id: UUID | None = None
    error: str | None = None


def validate_upload(filename: str, size: int, settings: Settings, *, check_size: bool = True) -> str:
    """Content type for an acceptable upload; raise a clear domain error otherwise."""
    if size == 0:
        raise BadRequest(f"{filename}: file is empty")
    if check_size and size > settings.max_upload_bytes:
        raise PayloadTooLarge(
            f"{filename}: {size / 1048576:.1f} MB is over the {settings.max_upload_mb:g} MB limit (MAX_UPLOAD_MB)"
        )
    try:
        return content_type_for(filename)
    except UnsupportedFormat as exc:
        raise UnsupportedMediaType(f"{filename}: {exc}") from exc


async def register_bytes(
    pool: AsyncConnectionPool,
    owner: UUID,
    filename: str,
    data: bytes,
    settings: Settings,
    *,
    source_path: str | None = None,
    check_size: bool = True,
    retry_failed: bool = True,
) -> list[Registered]:
    """Queue one uploaded file (a BEIR `.jsonl` corpus becomes one document per record)."""
    try:
        content_type = validate_upload(filename, len(data), settings, check_size=check_size)
    except (BadRequest, PayloadTooLarge, UnsupportedMediaType) as exc:
        return [Registered(filename, "rejected", error=exc.message)]
    if Path(filename).suffix.lower() == ".jsonl":
        try:
            records = list(iter_beir_jsonl(data))
        except ParseError as exc:
            return [Registered(filename, "rejected", error=f"{filename}: {exc}")]
        docs = [
            repo.NewDocument(
                filename=f"{filename}#{r.source_id}",
                title=r.title or r.source_id,
                content_type=BEIR_RECORD_TYPE,
                sha256=hashlib.sha256(raw).hexdigest(),
                data=raw,
                metadata={"source_id": r.source_id, "source_path": f"{source_path or filename}#{r.source_id}"},
            )
            for r in records
            for raw in [json.dumps({"_id": r.source_id, "title": r.title, "text": r.text}).encode()]
        ]
    else:
        meta = {"source_path": source_path} if source_path else {}
        docs = [
            repo.NewDocument(
                filename=filename,
                title=Path(filename).stem,
                content_type=content_type,
                sha256=hashlib.sha256(data).hexdigest(),
                data=data,
                metadata=meta,
            )
        ]
    return await _insert_all(pool, owner, docs, retry_failed)


async def _insert_all(
    pool: AsyncConnectionPool, owner: UUID, docs: Sequence[repo.NewDocument], retry_failed: bool
) -> list[Registered]:
    out: list[Registered] = []
    async with pool.connection() as conn, conn.transaction():
        for doc in docs:
            doc_id, created, status = await repo.insert_document(conn, owner, doc)
            if created:
                out.append(Registered(doc.filename, "queued", doc_id))
            elif status == "failed" and retry_failed and await repo.requeue_failed(conn, owner, doc_id):
                out.append(Registered(doc.filename, "requeued", doc_id))
            elif status == "failed":
                out.append(Registered(doc.filename, "duplicate", doc_id, "failed before with the same content"))
            else:
                out.append(Registered(doc.filename, "duplicate", doc_id, f"already ingested ({status})"))
    return out


def iter_files(paths: Iterable[Path]) -> Iterable[Path]:
    """Files under the given paths (folders recursively, hidden entries skipped), sorted per folder."""
    for path in paths:
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if not name.startswith("."):
                        yield Path(root) / name
        else:
            yield path


async def register_paths(
    pool: AsyncConnectionPool, owner: UUID, paths: Iterable[Path], settings: Settings, *, retry_failed: bool = False
) -> list[Registered]:
    """Queue every supported file under `paths`; unsupported or unreadable files come back rejected.

    A BEIR `.jsonl` corpus is a bulk import and is exempt from MAX_UPLOAD_MB here (not over HTTP).
    """
    out: list[Registered] = []
    for path in iter_files(paths):
        name = str(path)
        if not path.is_file():
            out.append(Registered(name, "rejected", error=f"{name}: no such file"))
            continue
        bulk = path.suffix.lower() == ".jsonl"
        try:
            validate_upload(name, path.stat().st_size, settings, check_size=not bulk)
        except (BadRequest, PayloadTooLarge, UnsupportedMediaType) as exc:
            out.append(Registered(name, "rejected", error=exc.message))
            continue
        data = await asyncio.to_thread(path.read_bytes)
        out.extend(
            await register_bytes(
                pool,
                owner,
                path.name,
                data,
                settings,
                source_path=str(path.resolve()),
                check_size=not bulk,
                retry_failed=retry_failed,
            )
        )
    return out


# ---------------------------------------------------------------------------------------------- processing


@dataclass
class Prepared:
    id: UUID
    owner: UUID
    title: str
    chunks: list[Any]
    texts: list[str]
    hashes: list[str]
    page_count: int | None
    metadata: dict[str, Any]
    source_path: str | None
    vectors: np.ndarray | None = None


@dataclass
class Progress:
    documents_done: int = 0
    documents_failed: int = 0
    chunks_done: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)


def parse_document(content_type: str, filename: str, data: bytes) -> ParsedDocument:
    if content_type == BEIR_RECORD_TYPE:
        record = json.loads(data)
        return ParsedDocument(
            title=record.get("title") or record["_id"],
            sections=[Section(text=record.get("text") or "")] if (record.get("text") or "").strip() else [],
            metadata={},
        )
    return parse(data, filename)


class IngestionPipeline:
    """Claims queued documents and runs them through three overlapping stages: prepare, embed, store."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        embedder: Embedder,
        settings: Settings,
        *,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.pool = pool
        self.embedder = embedder
        self.settings = settings
        self.on_progress = on_progress or (lambda _p: None)
        self.progress = Progress()
        self.group_chunks = max(settings.embed_batch_size * 4, 64)

    async def run(self, ids: Sequence[UUID] | None = None) -> Progress:
        """Process queued documents (only `ids` when given) until none is left to claim."""
        prepared: asyncio.Queue[list[Prepared] | None] = asyncio.Queue(maxsize=2)
        embedded: asyncio.Queue[list[Prepared] | None] = asyncio.Queue(maxsize=2)
        stages = [
            asyncio.create_task(self._prepare_stage(ids, prepared)),
            asyncio.create_task(self._embed_stage(prepared, embedded)),
            asyncio.create_task(self._store_stage(embedded)),
        ]
        try:
            await asyncio.gather(*stages)
        finally:
            for task in stages:
                task.cancel()
        return self.progress

    async def _prepare_stage(self, ids: Sequence[UUID] | None, out: asyncio.Queue[list[Prepared] | None]) -> None:
        try:
            group: list[Prepared] = []
            size = 0
            while True:
                async with self.pool.connection() as conn:
                    rows = await repo.claim(conn, limit=32, ids=ids)
                if not rows:
                    break
                results = await asyncio.to_thread(self._prepare_rows, rows)
                for row, result in zip(rows, results, strict=True):
                    if isinstance(result, str):
                        await self._fail(row["id"], row["filename"], result)
                        continue
                    if len(result.chunks) > self.settings.embed_batch_size:
                        async with self.pool.connection() as conn:
                            await repo.set_progress(conn, result.id, 0, len(result.chunks))
                    group.append(result)
                    size += len(result.chunks)
                    if size >= self.group_chunks:
                        await out.put(group)
                        group, size = [], 0
            if group:
                await out.put(group)
        finally:
            await out.put(None)

    def _prepare_rows(self, rows: Sequence[dict[str, Any]]) -> list[Prepared | str]:
        """Parse and chunk (runs in a worker thread). A string result is the failure reason."""
        results: list[Prepared | str] = []
        for row in rows:
            try:
                results.append(self._prepare_one(row))
            except ParseError as exc:
                results.append(str(exc))
            except Exception as exc:  # a parser bug must fail one document, not the worker
                log.exception("failed to parse %s", row["filename"])
                results.append(f"could not read {row['filename']}: {type(exc).__name__}: {exc}")
        return results

    def _prepare_one(self, row: dict[str, Any]) -> Prepared:
        if row["data"] is None:
            raise ParseError("the file's bytes are missing; upload it again")
        parsed = parse_document(row["content_type"], row["filename"], bytes(row["data"]))
        chunks = chunk_sections(
            parsed.sections,
            self.embedder.count_tokens,
            max_tokens=self.settings.chunk_tokens,
            overlap=self.settings.chunk_overlap,
        )
        if not chunks:
            raise ParseError("no text found in the document (empty or whitespace only)")
        title = parsed.title or row["title"]
        if row["content_type"] != BEIR_RECORD_TYPE and title == Path(row["filename"]).stem:
            title = row["title"] or title
        texts = [embedding_text(title, c.content) for c in chunks]
        meta = dict(parsed.metadata)
        return Prepared(
            id=row["id"],
            owner=row["owner_id"],
            title=title,
            chunks=chunks,
            texts=texts,
            hashes=[content_hash(t) for t in texts],
            page_count=parsed.metadata.get("page_count"),
            metadata=meta,
            source_path=(row["metadata"] or {}).get("source_path"),
        )

    async def _embed_stage(
        self, inp: asyncio.Queue[list[Prepared] | None], out: asyncio.Queue[list[Prepared] | None]
    ) -> None:
        try:
            while (group := await inp.get()) is not None:
                try:
                    await self._embed_group(group)
                except Exception as exc:
                    log.exception("embedding failed")
                    for doc in group:
                        await self._fail(doc.id, doc.title, f"embedding failed: {exc}")
                    continue
                await out.put(group)
        finally:
            await out.put(None)

    async def _embed_group(self, group: list[Prepared]) -> None:
        model = self.embedder.model_name
        owners = {d.owner for d in group}
        cache: dict[str, np.ndarray] = {}
        async with self.pool.connection() as conn:
            for owner in owners:
                hashes = [h for d in group if d.owner == owner for h in d.hashes]
                cache.update(await repo.cached_embeddings(conn, owner, hashes, model))
        missing: dict[str, str] = {}
        for doc in group:
            for h, text in zip(doc.hashes, doc.texts, strict=True):
                if h not in cache:
                    missing.setdefault(h, text)
        todo = list(missing.items())
        step = self.settings.embed_batch_size * 4
        for start in range(0, len(todo), step):
            batch = todo[start : start + step]
            vectors = await self.embedder.embed([t for _, t in batch])
            cache.update({h: v for (h, _), v in zip(batch, vectors, strict=True)})
            self.progress.chunks_embedded += len(batch)
            await self._report_partial(group, cache)
        self.progress.chunks_reused += sum(len(d.hashes) for d in group) - len(todo)
        for doc in group:
            doc.vectors = np.stack([cache[h] for h in doc.hashes])

    async def _report_partial(self, group: list[Prepared], cache: dict[str, np.ndarray]) -> None:
        big = [d for d in group if len(d.hashes) > self.settings.embed_batch_size]
        if not big:
            return
        async with self.pool.connection() as conn:
            for doc in big:
                await repo.set_progress(conn, doc.id, sum(h in cache for h in doc.hashes), None)

    async def _store_stage(self, inp: asyncio.Queue[list[Prepared] | None]) -> None:
        while (group := await inp.get()) is not None:
            for doc in group:
                await self._store(doc)

    async def _store(self, doc: Prepared) -> None:
        assert doc.vectors is not None
        stored = [
            repo.StoredChunk(i, c.content, c.page, c.section, c.token_count, h, v)
            for i, (c, h, v) in enumerate(zip(doc.chunks, doc.hashes, doc.vectors, strict=True))
        ]
        try:
            async with self.pool.connection() as conn, conn.transaction():
                await repo.store_chunks(
                    conn,
                    document_id=doc.id,
                    owner=doc.owner,
                    title=doc.title,
                    chunks=stored,
                    model=self.embedder.model_name,
                    page_count=doc.page_count,
                    metadata=doc.metadata,
                    replaces_source=doc.source_path,
                )
        except Exception as exc:
            log.exception("storing %s failed", doc.id)
            await self._fail(doc.id, doc.title, f"could not store chunks: {exc}")
            return
        self.progress.documents_done += 1
        self.progress.chunks_done += len(stored)
        self.on_progress(self.progress)

    async def _fail(self, document_id: UUID, name: str, reason: str) -> None:
        async with self.pool.connection() as conn:
            await repo.mark_failed(conn, document_id, reason)
        self.progress.documents_failed += 1
        self.progress.failures.append((name, reason))
        self.on_progress(self.progress)


async def run_worker(
    pool: AsyncConnectionPool,
    embedder: Embedder,
    settings: Settings,
    stop: asyncio.Event,
    wake: asyncio.Event | None = None,
    poll_s: float = 2.0,
) -> None:
    """Process queued documents until `stop` is set (`ragchat worker` and the server's in-process worker).

    `wake` (set by the upload route) starts the next round at once; otherwise the queue is polled.
    """
    wake = wake or asyncio.Event()
    while not stop.is_set():
        wake.clear()
        try:
            progress = await IngestionPipeline(pool, embedder, settings).run()
            if progress.documents_done or progress.documents_failed:
                log.info("ingested %d documents (%d failed)", progress.documents_done, progress.documents_failed)
        except Exception:
            log.exception("ingestion worker iteration failed")
        waiters = [asyncio.create_task(stop.wait()), asyncio.create_task(wake.wait())]
        await asyncio.wait(waiters, timeout=poll_s, return_when=asyncio.FIRST_COMPLETED)
        for waiter in waiters:
            waiter.cancel()
