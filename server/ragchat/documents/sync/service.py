"""Folder sync: mirror a folder into an owner's library (`ragchat sync DIR`; `sync_watch` keeps it running).

What each file was when last seen lives in Postgres (`sync_files`), so a run hashes only files whose size or
mtime changed, ingests only content that changed, and a restart resumes where the last run stopped (documents
an interrupted run left queued are ingested by the next):

- a new file is registered and ingested; an identical copy of content already in the library shares its
  document (documents are unique per owner and sha256);
- a changed file's new content is registered under the same `source_path`; the ingestion replaces the old
  document when it stores the new one, in one transaction, so search never sees neither or both;
- a file that vanished while a new file with its sha256 appeared was renamed or moved: its documents get the
  new filename and `source_path`, nothing is parsed or embedded again;
- a deleted file's documents are deleted (unless an identical copy elsewhere still holds them);
- hidden, unsupported, empty and too-big files are skipped with the reason, as uploads would be refused.

A folder that cannot be listed, or a file that cannot be read, keeps what was synced from it (a permissions
glitch must not empty the library), and a folder that turned up with nothing in it at all keeps its documents
unless `allow_empty` (an unmounted drive looks empty).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from uuid import UUID

import psycopg

from ragchat.core.errors import BadRequest, Conflict, PayloadTooLarge, UnsupportedMediaType
from ragchat.db.pool import Pool
from ragchat.documents.catalog import repository as repo
from ragchat.documents.catalog.admission import validate_upload
from ragchat.documents.sync import repository as srepo
from ragchat.documents.sync.scan import (
    Content,
    FileEntry,
    Found,
    Gone,
    ReadError,
    Skipped,
    Unlisted,
    inside,
    read,
    walk,
)
from ragchat.settings import IngestionSettings


class Ingested(Protocol):
    """What a sync counts of an ingest (the pipeline's `Progress`): chunks embedded, and chunks whose vectors
    were reused."""

    @property
    def chunks_embedded(self) -> int: ...

    @property
    def chunks_reused(self) -> int: ...


#: Processes queued documents (the ingestion pipeline, restricted to these ids); given by the caller, so that
#: sync does not import ingestion (the "documents in layers" contract).
Ingest = Callable[[Sequence[UUID]], Awaitable[Ingested]]
_WALK_BATCH = 500
_EXAMPLES = 20


@dataclass
class SyncReport:
    root: str
    dry_run: bool = False
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0
    documents_deleted: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    resumed: int = 0  # documents an earlier, interrupted run left queued, ingested by this one
    pending: int = 0  # documents still queued, or held by another worker (a server's): it finishes them
    failed_before: int = 0  # unchanged files whose document failed in an earlier run
    failed_before_examples: list[tuple[str, str]] = field(default_factory=list)
    stopped: bool = False
    seconds: float = 0.0
    folders: list[str] = field(default_factory=list)  # what was listed (what a watcher watches)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.renamed or self.removed or self.failed)


@dataclass
class _Plan:
    tracked: dict[str, srepo.Tracked]
    seen: set[str] = field(default_factory=set)
    changed: list[tuple[FileEntry, srepo.Tracked]] = field(default_factory=list)
    new: list[FileEntry] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)  # folders that could not be listed: their files stay

    def vanished(self) -> list[srepo.Tracked]:
        def kept(rel: str) -> bool:
            return any(p in (".", rel) or rel.startswith(p + "/") for p in self.unlisted)

        return [t for rel, t in sorted(self.tracked.items()) if rel not in self.seen and not kept(rel)]


def resolve_root(path: Path) -> str:
    """The folder's absolute path with symlinks resolved; a clear error when it is not a folder."""
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        raise BadRequest(f"{path}: not a folder")
    return real


class FolderSync:
    """Mirror one folder into `owner`'s library. `ingest(ids)` processes queued documents (the pipeline)."""

    def __init__(
        self,
        pool: Pool,
        settings: IngestionSettings,
        owner: UUID,
        root: Path,
        ingest: Ingest,
        *,
        dry_run: bool = False,
        allow_empty: bool = False,
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.owner = owner
        self.root = resolve_root(root)
        self.ingest = ingest
        self.dry_run = dry_run
        self.allow_empty = allow_empty
        self.root_id: UUID | None = None
        self.report = SyncReport(self.root, dry_run)
        self._registered: dict[UUID, list[str]] = {}  # this run's documents → the files holding them
        self._updated: dict[str, UUID] = {}  # changed file → its new content's document

    @asynccontextmanager
    async def locked(self) -> AsyncIterator[FolderSync]:
        """Hold the folder while syncing it (one sync of a folder at a time); a dry run only looks."""
        async with self.pool.connection() as conn:
            if self.dry_run:
                self.root_id = await srepo.find_root(conn, self.owner, self.root)
                yield self
                return
            async with conn.transaction():
                self.root_id = await srepo.ensure_root(conn, self.owner, self.root)
            locked = await srepo.try_lock_root(conn, self.root_id)
            await conn.commit()  # the lock is the session's: no transaction stays open while it is held
            if not locked:
                raise Conflict(f"another `ragchat sync` of {self.root} is running; stop it first")
            try:
                yield self
            finally:
                with contextlib.suppress(psycopg.Error):  # a lost connection took its lock with it
                    await srepo.unlock_root(conn, self.root_id)

    async def run(self) -> SyncReport:
        """One pass over the folder (inside `locked()`). `self.report` fills in as it goes (a stopped run's too)."""
        started = time.monotonic()
        self.report = report = SyncReport(self.root, self.dry_run)
        self._registered, self._updated = {}, {}
        tracked: dict[str, srepo.Tracked] = {}
        if self.root_id is not None:
            async with self.pool.connection() as conn:
                tracked = await srepo.load_files(conn, self.root_id)
        plan = _Plan(tracked)
        await self._scan(plan)
        for entry, old in plan.changed:
            await self._changed(entry, old)
        vanished = plan.vanished()
        if vanished and not plan.seen and not report.skipped and not self.allow_empty:
            report.failed.append(
                (
                    ".",
                    f"the folder is empty, but {len(vanished)} files were synced from it: nothing removed (an "
                    "unmounted drive looks empty; pass --allow-empty to remove their documents)",
                )
            )
            vanished = []
        by_sha: dict[str, list[srepo.Tracked]] = {}
        for t in vanished:
            if t.document_id is not None:
                by_sha.setdefault(t.sha256, []).append(t)
        moved = {await self._new(entry, by_sha) for entry in plan.new}
        for t in vanished:
            if t.rel_path not in moved:
                await self._removed(t)
        if not self.dry_run:
            await self._finish()
        report.seconds = time.monotonic() - started
        return report

    # ---- scanning: stat only --------------------------------------------------------------------------------
    async def _scan(self, plan: _Plan) -> None:
        """Walk the folder in a thread, a batch at a time, sorting what is there into unchanged, changed, new
        and skipped."""
        folders: list[str] = []
        self.report.folders = folders
        entries: Iterator[Found] = walk(self.root, folders)
        while batch := await asyncio.to_thread(lambda: list(itertools.islice(entries, _WALK_BATCH))):
            for found in batch:
                self._sort(found, plan)

    def _sort(self, found: Found, plan: _Plan) -> None:
        report = self.report
        if isinstance(found, Unlisted):
            report.failed.append((found.rel, found.reason))
            plan.unlisted.append(found.rel)
            return
        if isinstance(found, Skipped):
            report.skipped.append((found.rel, found.reason))
            return
        reason = self._refusal(found)
        if reason:
            report.skipped.append((found.rel, reason))
            return
        plan.seen.add(found.rel)
        old = plan.tracked.get(found.rel)
        if old is None:
            plan.new.append(found)
        elif old.size == found.size and old.mtime_ns == found.mtime_ns and old.document_id is not None:
            report.unchanged += 1
        else:
            plan.changed.append((found, old))

    def _refusal(self, entry: FileEntry) -> str | None:
        """Why an upload of this file would be refused (type, emptiness, size), or None."""
        name = os.path.basename(entry.rel)
        if name.lower().endswith(".jsonl"):
            return "a BEIR corpus (.jsonl) is imported with `ragchat ingest`, not synced"
        try:
            validate_upload(name, entry.size, self.settings)
        except (BadRequest, PayloadTooLarge, UnsupportedMediaType) as exc:
            return exc.message.removeprefix(f"{name}: ")
        return None

    # ---- applying -------------------------------------------------------------------------------------------
    async def _read(self, entry: FileEntry, *, keep: bool = False) -> Content | None:
        """The file's hash (and bytes when `keep`); None after recording why it could not be read."""
        try:
            return await asyncio.to_thread(read, self.root, entry, self.settings.max_upload_bytes, keep=keep)
        except Gone:  # deleted since the walk: the next sync sees it gone
            return None
        except ReadError as exc:
            self.report.failed.append((entry.rel, str(exc)))
            return None

    async def _changed(self, entry: FileEntry, old: srepo.Tracked) -> None:
        now = await self._read(entry)
        if now is None:
            return
        if now.sha256 == old.sha256 and old.document_id is not None:  # touched, same content
            self.report.unchanged += 1
            if self.root_id is not None and not self.dry_run:
                async with self.pool.connection() as conn:
                    await srepo.save_file(
                        conn, self.root_id, entry.rel, now.size, now.mtime_ns, now.sha256, old.document_id
                    )
        elif now.sha256 == old.sha256:  # its document was deleted some other way: the folder says it exists
            await self._register(entry, self.report.added)
        else:
            await self._register(entry, self.report.updated)

    async def _new(self, entry: FileEntry, by_sha: dict[str, list[srepo.Tracked]]) -> str | None:
        """Register a new file, or move a vanished file with the same content to it (returns its old path)."""
        if by_sha:
            now = await self._read(entry)
            if now is None:
                return None
            if by_sha.get(now.sha256):
                old = by_sha[now.sha256].pop(0)
                await self._move(old, entry, now)
                return old.rel_path
        await self._register(entry, self.report.added)
        return None

    async def _move(self, old: srepo.Tracked, entry: FileEntry, now: Content) -> None:
        self.report.renamed.append((old.rel_path, entry.rel))
        if self.root_id is None or self.dry_run:
            return
        async with self.pool.connection() as conn, conn.transaction():
            await srepo.move_file(conn, self.root_id, old.rel_path, entry.rel, now.size, now.mtime_ns)
            await srepo.move_documents(conn, self.owner, self._source(old.rel_path), self._source(entry.rel))

    async def _register(self, entry: FileEntry, into: list[str]) -> None:
        """Register the file's bytes (queued, or the existing document with the same content) and point its row
        at that, in one transaction. Older versions its path holds stay searchable until the new one is ready;
        one that an identical copy elsewhere holds is handed over to that copy's path first."""
        if self.root_id is None or self.dry_run:
            into.append(entry.rel)
            return
        content = await self._read(entry, keep=True)
        if content is None or content.data is None:
            return
        name = os.path.basename(entry.rel)
        source = self._source(entry.rel)
        try:
            content_type = validate_upload(name, len(content.data), self.settings)
        except (BadRequest, PayloadTooLarge, UnsupportedMediaType) as exc:  # it changed since the walk
            self.report.skipped.append((entry.rel, exc.message.removeprefix(f"{name}: ")))
            return
        doc = repo.NewDocument(
            filename=name,
            title=Path(name).stem,
            content_type=content_type,
            sha256=hashlib.sha256(content.data).hexdigest(),
            data=content.data,
            metadata={"source_path": source},
        )
        async with self.pool.connection() as conn, conn.transaction():
            doc_id, created, _status = await repo.insert_document(conn, self.owner, doc)
            await srepo.save_file(conn, self.root_id, entry.rel, content.size, content.mtime_ns, doc.sha256, doc_id)
            await srepo.release_path(conn, self.owner, source, keep=doc_id, delete=False)
            if not created:
                await srepo.adopt(conn, self.owner, doc_id, self.root_id, self.root, source)
        self._registered.setdefault(doc_id, []).append(entry.rel)
        if into is self.report.updated:
            self._updated[entry.rel] = doc_id
        into.append(entry.rel)

    async def _removed(self, old: srepo.Tracked) -> None:
        self.report.removed.append(old.rel_path)
        if self.root_id is None or self.dry_run:
            return
        async with self.pool.connection() as conn, conn.transaction():
            await srepo.delete_file(conn, self.root_id, old.rel_path)
            self.report.documents_deleted += await srepo.release_path(
                conn, self.owner, self._source(old.rel_path), keep=None, delete=True
            )

    async def _finish(self) -> None:
        """Ingest what is queued (this run's and an interrupted run's), then report failures, drop the versions
        that changed files replaced, and note the scan."""
        assert self.root_id is not None
        report = self.report
        async with self.pool.connection() as conn:
            pending = await srepo.pending_documents(conn, self.root_id)
        report.resumed = sum(1 for doc_id in pending if doc_id not in self._registered)
        if pending:
            progress = await self.ingest(pending)
            report.chunks_embedded += progress.chunks_embedded
            report.chunks_reused += progress.chunks_reused
        async with self.pool.connection() as conn:
            states = await srepo.outcomes(conn, [*self._registered, *pending])
            report.pending = sum(1 for s in states.values() if s["status"] in ("queued", "processing"))
            failed_now: set[str] = set()
            for doc_id, rels in self._registered.items():
                state = states.get(doc_id)
                if state is not None and state["status"] == "failed":
                    failed_now.update(rels)
                    report.failed.extend((rel, state["error"] or "failed") for rel in rels)
            report.added = [r for r in report.added if r not in failed_now]
            report.updated = [r for r in report.updated if r not in failed_now]
            for rel, doc_id in self._updated.items():
                report.documents_deleted += await srepo.drop_replaced(conn, self.owner, self._source(rel), doc_id)
            total, examples = await srepo.failed_files(conn, self.root_id, _EXAMPLES + len(failed_now))
            report.failed_before = total - len(failed_now)
            report.failed_before_examples = [e for e in examples if e[0] not in failed_now][:_EXAMPLES]
            await srepo.mark_scanned(conn, self.root_id)

    def _source(self, rel: str) -> str:
        source = srepo.source_path(self.root, rel)
        assert inside(self.root, source)
        return source
