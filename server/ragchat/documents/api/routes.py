"""HTTP routes for documents: upload or fetch by URL (queued for ingestion), list with progress, get, retry,
cancel, delete."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from litestar import Controller, delete, get, patch, post
from litestar.enums import RequestEncodingType
from litestar.params import Body, Parameter

from ragchat.core.audit import ReadAuditor
from ragchat.core.errors import BadRequest, NotFound, PayloadTooLarge, RagchatError, UnsupportedMediaType
from ragchat.core.preferences import PreferencesLookup
from ragchat.core.principal import Principal
from ragchat.documents.api.schemas import (
    Document,
    DocumentList,
    DocumentStatus,
    MetadataPatch,
    RechunkRequest,
    UploadForm,
    UploadResult,
    UploadResults,
    UrlIngest,
)
from ragchat.documents.api.service import DocumentService
from ragchat.documents.catalog.listing import ListQuery, Order, SortKey, TypeFamily
from ragchat.documents.catalog.shared import Asked, Registered
from ragchat.documents.metadata.fields import check_metadata, parse_metadata_field
from ragchat.httpapi.http import ErrorBody, error_responses, response_spec

REJECTION = {"payload_too_large": PayloadTooLarge, "unsupported_media_type": UnsupportedMediaType}
URL_BODY_BYTES = 16 * 1024  # POST /api/documents/url: a URL and a collection id
PATCH_BODY_BYTES = 128 * 1024  # PATCH /api/documents/{id}: metadata
URL_ERRORS = {
    **error_responses(400, 404, 413, 415),
    502: response_spec(ErrorBody, "The site could not be reached, or answered with an HTTP error"),
    504: response_spec(ErrorBody, "Fetching the URL took longer than URL_FETCH_TIMEOUT_S"),
}


def refuse(results: list[UploadResult], codes: list[str | None]) -> RagchatError:
    """Every file was rejected: the first rejection's error (413, 415 or 400), all results in `extra`."""
    kind = REJECTION.get(codes[0] or "", BadRequest)
    detail = results[0].error or "the upload was rejected"
    if len(results) > 1:
        detail = f"all {len(results)} files were rejected; the first: {detail}"
    return kind(detail, extra={"results": [r.model_dump(mode="json") for r in results]})


async def upload_results(
    documents: DocumentService, principal: Principal, outcomes: list[Registered], collection_id: UUID | None
) -> UploadResults:
    """Each registered file as a result (added to the collection when one is given); all rejected: the error."""
    results: list[UploadResult] = []
    for outcome in outcomes:
        if collection_id is not None and outcome.document_id:
            await documents.catalog.add_to_collection(principal, outcome.document_id, collection_id)
        row = await documents.catalog.get(principal, outcome.document_id) if outcome.document_id else None
        results.append(
            UploadResult(
                filename=outcome.filename,
                status=outcome.status,
                document=Document.of(row) if row else None,
                error=outcome.error,
            )
        )
    if results and all(r.status == "rejected" for r in results):
        raise refuse(results, [o.code for o in outcomes])
    return UploadResults(results=results)


def meta_filter(raw: str | None) -> tuple[str | None, str | None]:
    """`key=value` split and checked like stored metadata (a 400 names what is wrong)."""
    if raw is None:
        return None, None
    key, sep, value = raw.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key or not value or len(key) > 64 or len(value) > 500 or "\x00" in raw:
        raise BadRequest("meta is key=value: a key of 1 to 64 characters and a value of 1 to 500, e.g. subject=History")
    return key, value


class DocumentController(Controller):
    path = "/api/documents"

    @get("/", responses=error_responses(400, 404))
    async def list_documents(
        self,
        documents: DocumentService,
        principal: Principal,
        collection_id: UUID | None = None,
        q: Annotated[str | None, Parameter(max_length=200, description="in the title or file name")] = None,
        status: DocumentStatus | None = None,
        type: Annotated[TypeFamily | None, Parameter(description="the file type (subtitles: .vtt and .srt)")] = None,
        sort: SortKey = "created_at",
        order: Order = "desc",
        limit: Annotated[int, Parameter(ge=1, le=200)] = 50,
        offset: Annotated[int, Parameter(ge=0, le=10_000_000)] = 0,
        owner: Annotated[Literal["me", "others"] | None, Parameter(description="mine, or shared with me")] = None,
        meta: Annotated[
            str | None, Parameter(max_length=600, description="key=value: the metadata key holds the value")
        ] = None,
    ) -> DocumentList:
        """What I may read: my documents and those shared with me (`collection_id`: one collection's; `owner`:
        only mine or only others'; `meta`: `subject=History`), one page (newest first unless `sort`/`order` say
        otherwise) with `total`, how many match in all."""
        key, value = meta_filter(meta)
        query = ListQuery(
            q.strip() if q else None, status, type, collection_id, sort, order, limit, offset, owner, key, value
        )
        rows, total = await documents.catalog.list_page(principal, query)
        return DocumentList(documents=[Document.of(r) for r in rows], total=total)

    @post("/", status_code=201, responses=error_responses(403, 404))
    async def upload(
        self,
        data: Annotated[UploadForm, Body(media_type=RequestEncodingType.MULTI_PART)],
        documents: DocumentService,
        principal: Principal,
        user_preferences: PreferencesLookup,
        collection_id: UUID | None = None,
    ) -> UploadResults:
        """Multipart upload, one or more `files` parts; each file is queued, a duplicate, or rejected (201 when at
        least one is accepted; when all are rejected, the first rejection's 413, 415 or 400 with every result in
        `extra.results`). A `collection_id` (query or form field) puts the uploads into that collection (write
        access needed: 403 for a reader, 404 for a non-member). The whole body may not exceed MAX_UPLOAD_MB
        (+1 MB): send big batches one file a request. A file name is 1 to 255 characters, no control characters
        (that file is rejected with a 400). A `metadata` form field (a JSON object of strings or lists of
        strings) is set on every new document."""
        collection_id = collection_id or data.collection_id
        preferences = await user_preferences(principal.user_id)  # the Settings page's choices over the env's
        chunking = None
        strategy = data.chunk_strategy or preferences.chunk_strategy
        if data.chunk_strategy or data.chunk_tokens or strategy != documents.settings.chunk_strategy:
            chunking = {"requested": strategy, "tokens": data.chunk_tokens}
        metadata = parse_metadata_field(data.metadata)  # a 400 before anything is stored
        if not data.files:
            raise BadRequest("no files in the upload (send multipart/form-data with one or more 'files' fields)")
        if collection_id is not None:
            await documents.catalog.check_collection_writable(principal, collection_id)
        outcomes: list[Registered] = []
        for upload in data.files:
            content = await upload.read()
            asked = Asked(chunking=chunking, metadata=metadata or None)
            outcomes += await documents.ingestion.register_upload(
                principal, upload.filename or "upload", content, asked
            )
        if preferences.metadata_extraction and not documents.settings.metadata_extraction:  # this user opted in
            for new in outcomes:
                if new.document_id and new.status in ("queued", "requeued"):
                    await documents.metadata.request_extraction(principal, new.document_id)
        return await upload_results(documents, principal, outcomes, collection_id)

    @post("/url", status_code=201, request_max_body_size=URL_BODY_BYTES, responses=URL_ERRORS)
    async def ingest_url(self, data: UrlIngest, documents: DocumentService, principal: Principal) -> UploadResults:
        """Fetch a web page (its main content, as Markdown) or a document file by URL and queue it like an upload;
        the document's metadata has `source_url` (after redirects) and `fetched_at`. Only public addresses unless
        ALLOW_PRIVATE_URLS (400 naming the address otherwise, before any connection); redirects (at most 5) are
        checked the same way. Bounded by URL_FETCH_TIMEOUT_S (504) and MAX_UPLOAD_MB (413); a type ragchat cannot
        read is 415; the site failing or answering 4xx/5xx is 502."""
        if data.collection_id is not None:
            await documents.catalog.check_collection_writable(principal, data.collection_id)
        outcomes = await documents.ingestion.register_url(principal, data.url)
        return await upload_results(documents, principal, outcomes, data.collection_id)

    @get("/{document_id:uuid}", responses=error_responses(404))
    async def get_document(
        self, document_id: UUID, documents: DocumentService, principal: Principal, audit: ReadAuditor
    ) -> Document:
        row = await documents.catalog.get(principal, document_id)
        if row is None:
            raise NotFound(f"document {document_id} not found")
        await audit.record_read(principal, "document", [document_id], owner_id=row["owner_id"])
        return Document.of(row)

    @post("/{document_id:uuid}/retry", status_code=200, responses=error_responses(403, 404, 409))
    async def retry_document(self, document_id: UUID, documents: DocumentService, principal: Principal) -> Document:
        """Queue a failed document again (or a stuck one: processing whose worker's lease ran out), with its
        attempts reset. Only the owner (403 for a reader); 409 when it is queued, processing or ready."""
        return Document.of(await documents.catalog.named_one(await documents.ingestion.retry(principal, document_id)))

    @post("/{document_id:uuid}/cancel", status_code=200, responses=error_responses(403, 404, 409))
    async def cancel_document(self, document_id: UUID, documents: DocumentService, principal: Principal) -> Document:
        """Stop a queued or processing document: it becomes failed with the error "cancelled" and its worker
        drops the work at the next batch (Retry queues it again). Only the owner; 409 when ready or failed."""
        return Document.of(await documents.catalog.named_one(await documents.ingestion.cancel(principal, document_id)))

    @post(
        "/{document_id:uuid}/rechunk",
        status_code=200,
        request_max_body_size=URL_BODY_BYTES,
        responses=error_responses(400, 403, 404, 409),
    )
    async def rechunk_document(
        self, document_id: UUID, data: RechunkRequest, documents: DocumentService, principal: Principal
    ) -> Document:
        """Chunk a ready or failed document again with `strategy` (auto | line | sentence | semantic) and
        optionally `chunk_tokens` (16-256): it is queued again from its stored file; its current chunks stay
        searchable until the new ones replace them. The owner or a collection writer (403 for a reader); 409
        while it is queued or processing."""
        chunking = {"requested": data.strategy, "tokens": data.chunk_tokens}
        row = await documents.ingestion.rechunk(principal, document_id, chunking)
        return Document.of(await documents.catalog.named_one(row))

    @patch("/{document_id:uuid}", request_max_body_size=PATCH_BODY_BYTES, responses=error_responses(400, 403, 404, 413))
    async def update_document(
        self, document_id: UUID, data: MetadataPatch, documents: DocumentService, principal: Principal
    ) -> Document:
        """Rename the document (`{"title": "Annual report 2024"}`: the file name stays) and/or edit its metadata
        as a JSON merge patch: `{"metadata": {"subject": ["Polity", "History"],
        "draft": null}}` sets `subject` and removes `draft`; other keys stay. Values are strings or lists of at
        most 20 strings (500 characters each), at most 50 keys of 64 characters; the server's keys (source_path,
        source_url, ...) cannot be changed. The owner or a collection writer (403 for a reader, 404 otherwise)."""
        checked = check_metadata(data.metadata, allow_null=True) if data.metadata is not None else None
        row = await documents.metadata.update_metadata(principal, document_id, checked, title=data.title)
        return Document.of(await documents.catalog.named_one(row))

    @delete("/{document_id:uuid}", status_code=204, responses=error_responses(404))
    async def delete_document(self, document_id: UUID, documents: DocumentService, principal: Principal) -> None:
        await documents.catalog.delete(principal, document_id)
