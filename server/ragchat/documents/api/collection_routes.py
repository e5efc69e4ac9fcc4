"""Collection routes: create, share with users as read/write, add and remove documents (docs/ACCOUNTS.md)."""

from __future__ import annotations

from uuid import UUID

from litestar import Controller, delete, get, patch, post, put

from ragchat.core.principal import Principal
from ragchat.documents.api.schemas import (
    Collection,
    CollectionDetail,
    CollectionList,
    CollectionPatch,
    Membership,
    NewCollection,
)
from ragchat.documents.collections.service import CollectionService
from ragchat.httpapi.http import error_responses


class CollectionController(Controller):
    path = "/api/collections"

    @get("/")
    async def list_collections(self, collections: CollectionService, principal: Principal) -> CollectionList:
        """Collections I own or that are shared with me, with my role in each."""
        return CollectionList(collections=[Collection.of(c) for c in await collections.list(principal)])

    @post("/", status_code=201, responses=error_responses(409))
    async def create(self, data: NewCollection, collections: CollectionService, principal: Principal) -> Collection:
        return Collection.of(await collections.create(principal, data.name, data.description))

    @get("/{collection_id:uuid}", responses=error_responses(404))
    async def get_collection(
        self, collection_id: UUID, collections: CollectionService, principal: Principal
    ) -> CollectionDetail:
        """The collection with its members and `document_count` (its documents: GET /api/documents?collection_id=)."""
        return CollectionDetail.of(await collections.detail(principal, collection_id))

    @patch("/{collection_id:uuid}", responses=error_responses(404, 409))
    async def update(
        self, collection_id: UUID, data: CollectionPatch, collections: CollectionService, principal: Principal
    ) -> Collection:
        return Collection.of(await collections.update(principal, collection_id, data.name, data.description))

    @delete("/{collection_id:uuid}", status_code=204, responses=error_responses(404))
    async def delete_collection(
        self, collection_id: UUID, collections: CollectionService, principal: Principal
    ) -> None:
        await collections.delete(principal, collection_id)

    @put("/{collection_id:uuid}/members/{user_id:uuid}", status_code=204, responses=error_responses(404))
    async def set_member(
        self, collection_id: UUID, user_id: UUID, data: Membership, collections: CollectionService, principal: Principal
    ) -> None:
        await collections.set_member(principal, collection_id, user_id, data.role)

    @delete("/{collection_id:uuid}/members/{user_id:uuid}", status_code=204, responses=error_responses(404))
    async def remove_member(
        self, collection_id: UUID, user_id: UUID, collections: CollectionService, principal: Principal
    ) -> None:
        await collections.remove_member(principal, collection_id, user_id)

    @put("/{collection_id:uuid}/documents/{document_id:uuid}", status_code=204, responses=error_responses(404))
    async def add_document(
        self, collection_id: UUID, document_id: UUID, collections: CollectionService, principal: Principal
    ) -> None:
        await collections.add_document(principal, collection_id, document_id)

    @delete("/{collection_id:uuid}/documents/{document_id:uuid}", status_code=204, responses=error_responses(404))
    async def remove_document(
        self, collection_id: UUID, document_id: UUID, collections: CollectionService, principal: Principal
    ) -> None:
        await collections.remove_document(principal, collection_id, document_id)
