"""HTTP routes for documents: upload (queued for ingestion), list with progress, get, delete."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from litestar import Controller, Request, delete, get, post
from litestar.datastructures import UploadFile

from server.core.errors import BadRequest, NotFound
from server.core.principal import Principal
from server.documents.service import DocumentService


def document_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "filename": row["filename"],
        "title": row["title"],
        "content_type": row["content_type"],
        "byte_size": row["byte_size"],
        "status": row["status"],
        "chunks_total": row["chunks_total"],
        "chunks_done": row["chunks_done"],
        "page_count": row["page_count"],
        "error": row["error"],
        "metadata": row["metadata"],
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(),
        "owner": {"id": str(row["owner_id"]), "username": row.get("owner_name") or ""},
        "access": row.get("access", "owner"),
        "collection_ids": [str(c) for c in row.get("collection_ids") or []],
    }


class DocumentController(Controller):
    path = "/api/documents"

    @get("/")
    async def list_documents(
        self, documents: DocumentService, principal: Principal, collection_id: UUID | None = None
    ) -> dict[str, Any]:
        """What I may read: my documents and those shared with me (`collection_id`: one collection's)."""
        return {"documents": [document_json(r) for r in await documents.list(principal, collection_id)]}

    @post("/", status_code=201)
    async def upload(
        self, request: Request, documents: DocumentService, principal: Principal, collection_id: UUID | None = None
    ) -> dict[str, Any]:
        """Multipart upload, one or more `files` fields; each file is queued, a duplicate, or rejected.
        A `collection_id` (query or form field) puts the uploads into that collection (write access needed)."""
        form = await request.form()
        uploads = [f for f in form.getall("files") if isinstance(f, UploadFile)] if "files" in form else []
        if not uploads:
            raise BadRequest("no files in the upload (send multipart/form-data with one or more 'files' fields)")
        field = form.get("collection_id")
        if collection_id is None and isinstance(field, str) and field.strip():
            try:
                collection_id = UUID(field.strip())
            except ValueError as exc:
                raise BadRequest("collection_id is not a valid id") from exc
        if collection_id is not None:
            await documents.check_collection_writable(principal, collection_id)
        results: list[dict[str, Any]] = []
        for upload in uploads:
            data = await upload.read()
            for outcome in await documents.register_upload(principal, upload.filename or "upload", data):
                if collection_id is not None and outcome.document_id:
                    await documents.add_to_collection(principal, outcome.document_id, collection_id)
                row = await documents.get(principal, outcome.document_id) if outcome.document_id else None
                results.append(
                    {
                        "filename": outcome.filename,
                        "status": outcome.status,
                        "document": document_json(row) if row else None,
                        "error": outcome.error,
                    }
                )
        return {"results": results}

    @get("/{document_id:uuid}")
    async def get_document(self, document_id: UUID, documents: DocumentService, principal: Principal) -> dict[str, Any]:
        row = await documents.get(principal, document_id)
        if row is None:
            raise NotFound(f"document {document_id} not found")
        return document_json(row)

    @delete("/{document_id:uuid}", status_code=204)
    async def delete_document(self, document_id: UUID, documents: DocumentService, principal: Principal) -> None:
        await documents.delete(principal, document_id)
