"""Request and response models of the documents and collections routes (the OpenAPI document's types)."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from litestar.datastructures import UploadFile
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragchat.core.schemas import Person
from ragchat.documents.chunking.strategy import Strategy

DocumentStatus = Literal["queued", "processing", "ready", "failed"]
IngestStage = Literal["queued", "waiting", "reading", "embedding", "ready", "failed"]
Role = Literal["owner", "write", "read"]


class ChunkingInfo(BaseModel):
    """How the document is chunked: asked for at upload / ingest / re-chunk, and what ingestion did."""

    requested: Strategy = Field(description="auto routes by file type and shape")
    strategy: Literal["line", "sentence", "semantic"] | None = Field(
        default=None, description="the strategy used (null until the document is processed)"
    )
    tokens: int | None = Field(default=None, description="the chunk budget in the embedder's word pieces")
    overlap: int | None = Field(default=None, description="word pieces repeated between chunks (sentence only)")
    reason: str | None = Field(default=None, description="why: auto's routing, or 'requested'")


class RechunkRequest(BaseModel):
    """Chunk a document again with another strategy or size."""

    model_config = ConfigDict(extra="forbid")

    strategy: Strategy
    chunk_tokens: int | None = Field(default=None, ge=16, le=256, description="word pieces per chunk")


class Document(BaseModel):
    id: UUID
    filename: str
    title: str
    content_type: str
    byte_size: int
    status: DocumentStatus
    chunks_total: int | None = Field(description="chunks once parsed (null while queued)")
    chunks_done: int
    page_count: int | None
    error: str | None = Field(description="why ingestion failed (status failed)")
    metadata: dict[str, Any] = Field(
        description="strings or lists of strings: yours (upload, PATCH), the server's (source_path, source_url) "
        "and, with METADATA_EXTRACTION, the extractor's (title, summary, topics, document_type, language, key_dates)"
    )
    metadata_status: Literal["pending", "running", "done", "failed"] | None = Field(
        default=None, description="the LLM metadata extraction: null (not run), pending, running, done or failed"
    )
    metadata_error: str | None = Field(default=None, description="why the extraction failed (the document is ready)")
    created_at: datetime
    updated_at: datetime
    owner: Person
    access: Role = Field(description="the caller's access: their own document, or shared to them read/write")
    collection_ids: list[UUID] = Field(description="collections the document is in that the caller can see")
    attempts: int = Field(default=0, description="times a worker has taken it up (capped by INGEST_MAX_ATTEMPTS)")
    stage: IngestStage = Field(
        default="queued",
        description="queued; waiting (queued again after a fault, until retry_at); reading (parsing and "
        "chunking); embedding (chunks_done of chunks_total); ready; failed",
    )
    retry_at: datetime | None = Field(default=None, description="stage waiting: when it is tried again")
    eta_s: float | None = Field(
        default=None, description="stage embedding: seconds left at the rate since embedding started"
    )
    chunking: ChunkingInfo | None = Field(default=None, description="strategy requested and used, and why")
    progress_note: str | None = Field(
        default=None, description='stage reading: what the worker is doing, e.g. "OCR page 3 of 12"'
    )
    language: str | None = Field(
        default=None, description="ISO 639-1 code of the language detected at ingest (null: not detected)"
    )
    text_search_config: str = Field(
        default="english",
        description="the Postgres text-search configuration its passages are analysed with for keyword search "
        "(german, spanish, …; simple: no stemming, when the language could not be told)",
    )

    @classmethod
    def of(cls, row: dict[str, Any]) -> Document:
        computed = ("owner", "access", "collection_ids", "stage", "retry_at", "eta_s", "progress_note")
        stage, eta = ingest_stage(row)
        return cls(
            **{k: row[k] for k in cls.model_fields if k in row and k not in computed},
            owner=Person.of(row["owner_id"], row.get("owner_name")),
            access=row.get("access", "owner"),
            collection_ids=list(row.get("collection_ids") or []),
            stage=stage,
            retry_at=row.get("not_before") if stage == "waiting" else None,
            eta_s=eta,
            progress_note=row.get("progress_note") if stage == "reading" else None,
        )


def ingest_stage(row: dict[str, Any], now: datetime | None = None) -> tuple[IngestStage, float | None]:
    """Where a document is in ingestion, and for one being embedded the seconds left (None until a batch is
    done): the rate since its first embedded batch applied to the chunks still to embed."""
    now = now or datetime.now(UTC)
    status = row["status"]
    if status == "queued":
        not_before = row.get("not_before")
        return ("waiting" if not_before is not None and not_before > now else "queued"), None
    if status != "processing":
        return status, None
    total, done, started = row.get("chunks_total"), row.get("chunks_done") or 0, row.get("progress_started_at")
    if not total:
        return "reading", None
    if not done or started is None:
        return "embedding", None
    elapsed = max((now - started).total_seconds(), 0.001)
    return "embedding", round(max(total - done, 0) / (done / elapsed), 1)


class DocumentList(BaseModel):
    documents: list[Document]
    total: int = Field(default=0, description="how many documents match the filters (all pages)")


class UploadResult(BaseModel):
    filename: str
    status: Literal["queued", "duplicate", "requeued", "rejected"] = Field(
        description="queued: new; duplicate: the same content is already yours; requeued: a failed one retried"
    )
    document: Document | None = None
    error: str | None = Field(default=None, description="why it was rejected")


class UploadResults(BaseModel):
    """One result per file (a BEIR .jsonl corpus gives one per record)."""

    results: list[UploadResult]


class UploadForm(BaseModel):
    """multipart/form-data: one or more `files` parts, and optionally the collection to put them in."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    files: list[UploadFile]
    collection_id: UUID | None = None
    metadata: str | None = Field(
        default=None,
        max_length=64 * 1024,
        description='a JSON object for every file\'s metadata: {"subject": ["Polity", "History"], "year": "2024"}',
    )
    chunk_strategy: Strategy | None = Field(default=None, description="CHUNK_STRATEGY when absent")
    chunk_tokens: int | None = Field(default=None, ge=16, le=256, description="CHUNK_TOKENS when absent")


class MetadataPatch(BaseModel):
    """PATCH /api/documents/{id}: a new title (the file name stays), a JSON merge patch of the metadata (null
    removes a key), or both."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = Field(
        default=None, min_length=1, max_length=500, description="the title shown in lists and citations"
    )
    metadata: dict[str, Any] | None = Field(
        default=None,
        description='{"subject": ["Polity", "History"], "draft": null}: strings or lists of strings; null removes',
    )

    @field_validator("title")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is None:
            return None
        title = " ".join(value.split())
        if not title or any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co") for c in title):
            raise ValueError("a title is one line of visible text")
        return title

    @model_validator(mode="after")
    def _something(self) -> MetadataPatch:
        if self.title is None and self.metadata is None:
            raise ValueError("send a title, metadata or both")
        return self


class ExtractionQueued(BaseModel):
    queued: list[UUID] = Field(description="the documents queued for extraction (taken once they are ready)")


class UrlIngest(BaseModel):
    """A web page (or a document file) to fetch and ingest like an upload."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2048, description="an http:// or https:// URL")
    collection_id: UUID | None = Field(default=None, description="put the document into this collection")


class NewCollection(BaseModel):
    name: str = Field(max_length=1000)
    description: str = Field(default="", max_length=10000)


class CollectionPatch(BaseModel):
    name: str | None = Field(default=None, max_length=1000)
    description: str | None = Field(default=None, max_length=10000)


class Membership(BaseModel):
    role: Literal["read", "write"]


class Collection(BaseModel):
    id: UUID
    name: str
    description: str
    owner: Person
    role: Role = Field(description="the caller's role in this collection")
    document_count: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: dict[str, Any]) -> Collection:
        return cls(**_collection_fields(row))


class Member(BaseModel):
    user: Person
    role: Role


class CollectionDetail(Collection):
    """A collection with its members. Its documents (`document_count` of them) are listed a page at a time by
    GET /api/documents?collection_id=…, with search, sort and the owner of each."""

    members: list[Member]

    @classmethod
    def of(cls, row: dict[str, Any]) -> CollectionDetail:
        return cls(
            **_collection_fields(row),
            members=[Member(user=Person.of(m["user_id"], m["username"]), role=m["role"]) for m in row["members"]],
        )


class CollectionList(BaseModel):
    collections: list[Collection]


def _collection_fields(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "owner": Person.of(row["owner_id"], row["owner_name"]),
        "role": row["role"],
        "document_count": int(row["document_count"]),
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }
