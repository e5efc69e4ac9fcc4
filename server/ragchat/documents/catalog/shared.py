"""Types the jobs above the catalog share (ingest, sync, metadata and the doors in `documents/api/`), kept here
so that none of them imports another (the "documents in layers" contract in pyproject.toml)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

BEIR_RECORD_TYPE = "application/x-beir-record"  # a corpus record: one document per record, no metadata extraction
Outcome = Literal["queued", "duplicate", "requeued", "rejected"]


@dataclass
class Registered:
    """A file's registration (ingest/registration.py): queued, a duplicate, queued again or rejected."""

    filename: str
    status: Outcome
    document_id: UUID | None = None
    error: str | None = None
    code: str | None = None  # a rejection's error code (payload_too_large, unsupported_media_type, bad_request)


@dataclass(frozen=True)
class Asked:
    """What the uploader asked for the new documents: chunking (`{"requested", "tokens"}`) and their own metadata
    (checked). Written in the registering transaction, so no worker can claim a document without them."""

    chunking: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class DetectedLanguage:
    """A document's language (ingest/language.py detects it; the chunk store records it)."""

    language: str | None  # ISO 639-1 code, None when it could not be told
    config: str  # the text-search configuration the chunks are analysed with


class LeaseLost(Exception):
    """The document was cancelled, deleted or taken over by another worker while this one worked on it."""
