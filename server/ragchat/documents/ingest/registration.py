"""Registering files as queued documents (uploads, paths, BEIR corpora); `pipeline` processes them."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from ragchat.core.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from ragchat.db.pool import Pool
from ragchat.documents.catalog import repository as repo
from ragchat.documents.catalog.admission import check_filename, validate_upload
from ragchat.documents.catalog.shared import BEIR_RECORD_TYPE, Asked, Registered
from ragchat.documents.ingest import queue
from ragchat.documents.parsing.limits import ParseLimits
from ragchat.documents.parsing.parsers import ParseError, iter_beir_jsonl
from ragchat.observability import tracing
from ragchat.settings import IngestionSettings

log = logging.getLogger(__name__)


async def register_bytes(
    pool: Pool,
    owner: UUID,
    filename: str,
    data: bytes,
    settings: IngestionSettings,
    *,
    source_path: str | None = None,
    check_size: bool = True,
    retry_failed: bool = True,
    title: str | None = None,
    metadata: dict[str, Any] | None = None,
    asked: Asked | None = None,
) -> list[Registered]:
    """Queue one uploaded file (a BEIR `.jsonl` corpus becomes one document per record); `title` and `metadata`
    (e.g. a fetched page's title and source_url) are the document's, else its filename's stem and nothing."""
    try:
        check_filename(filename)
        content_type = validate_upload(filename, len(data), settings, check_size=check_size)
    except (BadRequest, PayloadTooLarge, UnsupportedMediaType) as exc:
        return [Registered(filename, "rejected", error=exc.message, code=exc.code)]
    if Path(filename).suffix.lower() == ".jsonl":
        try:
            records = list(iter_beir_jsonl(data, ParseLimits.from_settings(settings)))
        except ParseError as exc:
            return [Registered(filename, "rejected", error=f"{filename}: {exc}", code="bad_request")]
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
                title=title or Path(filename).stem,
                content_type=content_type,
                sha256=hashlib.sha256(data).hexdigest(),
                data=data,
                metadata={**meta, **(metadata or {})},
            )
        ]
    return await _insert_all(pool, owner, docs, retry_failed, asked)


async def _insert_all(
    pool: Pool, owner: UUID, docs: Sequence[repo.NewDocument], retry_failed: bool, asked: Asked | None = None
) -> list[Registered]:
    out: list[Registered] = []
    async with pool.connection() as conn, conn.transaction():
        for doc in docs:
            doc_id, created, status = await repo.insert_document(conn, owner, doc)
            if created:
                out.append(Registered(doc.filename, "queued", doc_id))
            elif status == "failed" and retry_failed and await queue.requeue_failed(conn, owner, doc_id):
                out.append(Registered(doc.filename, "requeued", doc_id))
            elif status == "failed":
                out.append(Registered(doc.filename, "duplicate", doc_id, "failed before with the same content"))
            else:
                out.append(Registered(doc.filename, "duplicate", doc_id, f"already ingested ({status})"))
        new = [r.document_id for r in out if r.document_id and r.status in ("queued", "requeued")]
        tracing.note_jobs(new)  # the request links each queued document's ingestion trace (observability/tracing.py)
        if asked and new and asked.chunking:
            await repo.set_chunking(conn, owner, new, asked.chunking)
        if asked and new and asked.metadata:
            await repo.add_metadata(conn, owner, new, asked.metadata)
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
    pool: Pool,
    owner: UUID,
    paths: Iterable[Path],
    settings: IngestionSettings,
    *,
    retry_failed: bool = False,
    asked: Asked | None = None,
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
            out.append(Registered(name, "rejected", error=exc.message, code=exc.code))
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
                asked=asked,
            )
        )
    return out
