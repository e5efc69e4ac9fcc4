"""Request and response models of the documents and collections routes (the OpenAPI document's types)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from litestar.datastructures import UploadFile
from pydantic import BaseModel, ConfigDict, Field

from server.core.schemas import Person

DocumentStatus = Literal["queued", "processing", "ready", "failed"]
Role = Literal["owner", "write", "read"]


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
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    owner: Person
    access: Role = Field(description="the caller's access: their own document, or shared to them read/write")
    collection_ids: list[UUID] = Field(description="collections the document is in that the caller can see")

    @classmethod
    def of(cls, row: dict[str, Any]) -> Document:
        return cls(
            **{k: row[k] for k in cls.model_fields if k in row and k not in ("owner", "access", "collection_ids")},
            owner=Person.of(row["owner_id"], row.get("owner_name")),
            access=row.get("access", "owner"),
            collection_ids=list(row.get("collection_ids") or []),
        )


class DocumentList(BaseModel):
    documents: list[Document]


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


class CollectionDocument(BaseModel):
    id: UUID
    filename: str
    title: str
    status: DocumentStatus
    owner: Person


class CollectionDetail(Collection):
    members: list[Member]
    documents: list[CollectionDocument]

    @classmethod
    def of(cls, row: dict[str, Any]) -> CollectionDetail:
        return cls(
            **_collection_fields(row),
            members=[Member(user=Person.of(m["user_id"], m["username"]), role=m["role"]) for m in row["members"]],
            documents=[
                CollectionDocument(
                    id=d["id"],
                    filename=d["filename"],
                    title=d["title"],
                    status=d["status"],
                    owner=Person.of(d["owner_id"], d["owner_name"]),
                )
                for d in row["documents"]
            ],
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
