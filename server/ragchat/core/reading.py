"""The whole-document contract: a readable document's sections (chunks) in order, paged, for the chat's
read and summarise tools. The documents domain implements `DocumentReader`; chat receives one."""

from __future__ import annotations

from typing import Any, Protocol
from uuid import UUID

from pydantic import BaseModel

from ragchat.core.principal import Principal


class Section(BaseModel):
    """One chunk of a document, where it sits (page, section heading path, location)."""

    id: int
    chunk_index: int
    page: int | None = None
    section: str | None = None
    location: dict[str, Any] | None = None
    content: str


class DocumentSections(BaseModel):
    document_id: UUID
    title: str
    filename: str
    status: str
    error: str | None = None
    chunks_total: int
    sections: list[Section]


class DocumentReader(Protocol):
    async def read_sections(
        self, principal: Principal, document_id: UUID, *, start: int = 0, limit: int = 50
    ) -> DocumentSections:
        """Up to `limit` sections from chunk index `start`, in order; NotFound when the document is missing or
        not readable by `principal`."""
        ...
