"""HTTP routes of the documents page and the viewer: bulk delete and retry, the original file, the chunks."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import quote
from uuid import UUID

from litestar import Controller, get, post
from litestar.params import Parameter
from litestar.response import Stream
from pydantic import BaseModel, ConfigDict, Field

from ragchat.core.audit import ReadAuditor
from ragchat.core.principal import Principal
from ragchat.core.search import Location
from ragchat.documents.api.service import DocumentService
from ragchat.httpapi.http import error_responses, file_download

MAX_BULK = 500
MAX_CHUNKS = 500

#: Types a browser may show inline: only PDF (the viewer renders it with pdf.js). Everything else is a download,
#: and anything a browser could run as a page (HTML, SVG, XML) is sent as plain text.
_INLINE = {"application/pdf"}
_SCRIPTABLE = ("html", "svg", "xml", "javascript", "ecmascript")
#: The file's own CSP: a sandbox with nothing allowed, should a browser ever render it as a page.
FILE_CSP = "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'"


class BulkBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["delete", "retry"]
    ids: list[UUID] = Field(min_length=1, max_length=MAX_BULK, description=f"at most {MAX_BULK} document ids")


class BulkResult(BaseModel):
    id: UUID
    ok: bool
    error: str | None = Field(
        default=None, description="why not: not found (also another user's), forbidden (not the owner), conflict"
    )


class BulkResults(BaseModel):
    results: list[BulkResult]


class DocumentChunk(BaseModel):
    id: int
    ordinal: int = Field(description="the chunk's place in its document, from 0")
    content: str
    page: int | None = None
    section: str | None = None
    location: Location | None = None

    @classmethod
    def of(cls, row: dict[str, Any]) -> DocumentChunk:
        return cls(
            id=row["id"],
            ordinal=row["chunk_index"],
            content=row["content"],
            page=row["page"],
            section=row["section"],
            location=Location(**row["location"]) if row.get("location") else None,
        )


class ChunkList(BaseModel):
    chunks: list[DocumentChunk]
    total: int = Field(description="chunks in the document")
    offset: int = Field(description="the first chunk's ordinal (with `chunk_id`: where its page starts)")


def safe_content_type(stored: str) -> str:
    """The stored type, unless a browser could run it (HTML, SVG, XML, script): then plain text."""
    kind = stored.split(";", 1)[0].strip().lower()
    if any(s in kind for s in _SCRIPTABLE):
        return "text/plain"  # the response adds "; charset=utf-8" to every text/ type
    return kind if kind in _INLINE or "/" in kind else "application/octet-stream"


def content_disposition(filename: str, inline: bool) -> str:
    """`inline` or `attachment` with the name as ASCII (quotes and controls dropped) and as UTF-8 (RFC 6266)."""
    name = filename.rsplit("/", 1)[-1] or "document"
    ascii_name = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "_" for c in name)
    return f"{'inline' if inline else 'attachment'}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name)}"


class DocumentBrowseController(Controller):
    path = "/api/documents"

    @post("/bulk", status_code=200, responses=error_responses(400))
    async def bulk(self, data: BulkBody, documents: DocumentService, principal: Principal) -> BulkResults:
        """Delete or retry up to 500 documents, each by the rules of its single route: only the owner deletes or
        retries; retry takes a failed (or stuck) one. Ids the caller may not read (another user's) are reported
        "not found" and never touched. One result per distinct id, in the order given."""
        out = await documents.catalog.bulk(principal, data.action, data.ids)
        return BulkResults(results=[BulkResult(id=i, ok=err is None, error=err) for i, err in out.items()])

    @get("/{document_id:uuid}/file", responses=error_responses(404), operation_class=file_download("*/*"))
    async def file(
        self, document_id: UUID, documents: DocumentService, principal: Principal, audit: ReadAuditor
    ) -> Stream:
        """The original file as uploaded, streamed. PDF is `inline` (the viewer shows it); every other type is an
        attachment, and HTML, SVG or XML is sent as text/plain; always nosniff and a sandboxing CSP."""
        row, size = await documents.catalog.open_file(principal, document_id)
        await audit.record_read(principal, "file", [document_id], owner_id=row["owner_id"])
        ctype = safe_content_type(row["content_type"])
        inline = ctype in _INLINE
        return Stream(
            documents.catalog.file_slices(document_id, size),
            media_type=ctype,
            headers={
                "Content-Length": str(size),
                "Content-Disposition": content_disposition(row["filename"], inline),
                "Content-Security-Policy": FILE_CSP,
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "private, no-store",
            },
        )

    @get("/{document_id:uuid}/chunks", responses=error_responses(400, 404))
    async def chunks(
        self,
        document_id: UUID,
        documents: DocumentService,
        principal: Principal,
        audit: ReadAuditor,
        limit: Annotated[int, Parameter(ge=1, le=MAX_CHUNKS)] = 100,
        offset: Annotated[int, Parameter(ge=0, le=100_000_000)] = 0,
        chunk_id: Annotated[
            int | None, Parameter(ge=1, description="the page of chunks around this one (offset is ignored)")
        ] = None,
    ) -> ChunkList:
        """A readable document's chunks in order, with their page, section and location (404 for a document
        the caller may not read, or a `chunk_id` that is not one of its chunks)."""
        rows, total, first = await documents.catalog.chunk_page(
            principal, document_id, offset=offset, limit=limit, chunk_id=chunk_id
        )
        await audit.record_read(principal, "chunks", [document_id])
        return ChunkList(chunks=[DocumentChunk.of(r) for r in rows], total=total, offset=first)
