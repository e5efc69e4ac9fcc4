"""HTTP routes to run the LLM metadata extraction again (the edit is PATCH /api/documents/{id}, routes.py)."""

from __future__ import annotations

from uuid import UUID

from litestar import Controller, post

from ragchat.core.principal import Principal
from ragchat.documents.api.schemas import ExtractionQueued
from ragchat.documents.api.service import DocumentService
from ragchat.httpapi.http import error_responses


class MetadataController(Controller):
    path = "/api/documents"

    @post("/{document_id:uuid}/extract-metadata", status_code=202, responses=error_responses(403, 404))
    async def extract_document(
        self, document_id: UUID, documents: DocumentService, principal: Principal
    ) -> ExtractionQueued:
        """Run the LLM metadata extraction again for this document (it runs once the document is ready; its
        `metadata_status` goes pending → running → done or failed, with `metadata_error`). The owner or a
        collection writer."""
        return ExtractionQueued(queued=await documents.metadata.request_extraction(principal, document_id))

    @post("/extract-metadata", status_code=202)
    async def extract_all(self, documents: DocumentService, principal: Principal) -> ExtractionQueued:
        """Run the LLM metadata extraction again for every document of mine."""
        return ExtractionQueued(queued=await documents.metadata.request_extraction(principal))
