"""HTTP routes of the documents page and the viewer: bulk delete and retry, the original file, the chunks."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import quote
from uuid import UUID

from litestar import Controller, get, post
from litestar.params import Parameter
from litestar.response import Stream
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragchat.core.audit import ReadAuditor
from ragchat.core.errors import BadRequest
from ragchat.core.principal import Principal
from ragchat.core.search import Location
from ragchat.documents.api.routes import meta_filter
from ragchat.documents.api.schemas import DocumentStatus
from ragchat.documents.api.service import DocumentService
from ragchat.documents.catalog.listing import ListQuery, TypeFamily
from ragchat.httpapi.http import error_responses, file_download

MAX_BULK = 500
MAX_MATCHING = 20_000  # "select all N matching": a filter may take this many documents at once
MAX_CHUNKS = 500

#: Types a browser may show inline: only PDF (the viewer renders it with pdf.js). Everything else is a download,
#: and anything a browser could run as a page (HTML, SVG, XML) is sent as plain text.
_INLINE = {"application/pdf"}
_SCRIPTABLE = ("html", "svg", "xml", "javascript", "ecmascript")
#: The file's own CSP: a sandbox with nothing allowed, should a browser ever render it as a page.
FILE_CSP = "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'"


class BulkFilter(BaseModel):
    """GET /api/documents's filters: the action takes every document they match that the caller may read."""

    model_config = ConfigDict(extra="forbid")

    q: str | None = Field(default=None, max_length=200, description="in the title or file name")
    status: DocumentStatus | None = None
    type: TypeFamily | None = None
    collection_id: UUID | None = None
    owner: Literal["me", "others"] | None = None
    meta: str | None = Field(default=None, max_length=600, description="key=value")

    def query(self) -> ListQuery:
        key, value = meta_filter(self.meta)
        q = self.q.strip() if self.q else None
        return ListQuery(
            q or None, self.status, self.type, self.collection_id, owner=self.owner, meta_key=key, meta_value=value
        )


class BulkBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["delete", "retry", "add_to_collection", "remove_from_collection"]
    ids: list[UUID] | None = Field(
        default=None, min_length=1, max_length=MAX_BULK, description=f"at most {MAX_BULK} document ids"
    )
    filter: BulkFilter | None = Field(
        default=None, description=f"instead of `ids`: every matching document (at most {MAX_MATCHING:,})"
    )
    collection_id: UUID | None = Field(default=None, description="the collection to add to or remove from")

    @model_validator(mode="after")
    def one_target(self) -> BulkBody:
        if (self.ids is None) == (self.filter is None):
            raise ValueError("give either `ids` or `filter`")
        if self.action.endswith("_collection") and self.collection_id is None:
            raise ValueError(f"{self.action} needs `collection_id`")
        return self


class BulkResult(BaseModel):
    id: UUID
    ok: bool
    error: str | None = Field(
        default=None, description="why not: not found (also another user's), forbidden (not the owner), conflict"
    )


class BulkResults(BaseModel):
    results: list[BulkResult] = Field(
        description=f"one per id; with `filter`: only those that failed (at most {MAX_BULK})"
    )
    matched: int = Field(description="documents the action was applied to (the distinct ids, or the filter's)")
    done: int = Field(description="how many it worked for")


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

    @post("/bulk", status_code=200, responses=error_responses(400, 403, 404))
    async def bulk(self, data: BulkBody, documents: DocumentService, principal: Principal) -> BulkResults:
        """Delete, retry, add to or remove from a collection up to 500 documents by id, or every document a
        `filter` matches (the list's filters; at most 20,000), each by the rules of its single route: only the
        owner deletes, retries or adds to a collection; retry takes a failed (or stuck) one; a collection's
        reader removes only their own. Documents the caller may not read (another user's) are never matched,
        and ids of them are reported "not found" and never touched. One result per distinct id, in order."""
        ids = data.ids or []
        if data.filter is not None:
            ids = await documents.catalog.matching(principal, data.filter.query(), MAX_MATCHING)
            if len(ids) > MAX_MATCHING:
                raise BadRequest(f"more than {MAX_MATCHING:,} documents match: narrow the search and try again")
        if data.action in ("delete", "retry"):
            out = await documents.catalog.bulk(principal, data.action, ids) if ids else {}
        else:  # the collection is checked even when nothing matches (404 for a stranger, 403 for a reader's add)
            assert data.collection_id is not None  # checked by BulkBody
            add = data.action == "add_to_collection"
            out = await documents.catalog.bulk_collection(principal, add, data.collection_id, ids)
        results = [BulkResult(id=i, ok=err is None, error=err) for i, err in out.items()]
        if data.filter is not None:
            results = [r for r in results if not r.ok][:MAX_BULK]
        return BulkResults(results=results, matched=len(out), done=sum(err is None for err in out.values()))

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
