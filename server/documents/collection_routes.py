"""Collection routes: create, share with users as read/write, add and remove documents (docs/ACCOUNTS.md)."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from litestar import Controller, delete, get, patch, post, put
from pydantic import BaseModel, Field

from server.core.principal import Principal
from server.documents.collections import CollectionService


class NewCollection(BaseModel):
    name: str = Field(max_length=1000)
    description: str = Field(default="", max_length=10000)


class CollectionPatch(BaseModel):
    name: str | None = Field(default=None, max_length=1000)
    description: str | None = Field(default=None, max_length=10000)


class Membership(BaseModel):
    role: Literal["read", "write"]


def _person(user_id: Any, username: str) -> dict[str, str]:
    return {"id": str(user_id), "username": username}


def collection_json(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": str(row["id"]),
        "name": row["name"],
        "description": row["description"],
        "owner": _person(row["owner_id"], row["owner_name"]),
        "role": row["role"],
        "document_count": int(row["document_count"]),
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(),
    }
    if "members" in row:
        out["members"] = [{"user": _person(m["user_id"], m["username"]), "role": m["role"]} for m in row["members"]]
        out["documents"] = [
            {
                "id": str(d["id"]),
                "filename": d["filename"],
                "title": d["title"],
                "status": d["status"],
                "owner": _person(d["owner_id"], d["owner_name"]),
            }
            for d in row["documents"]
        ]
    return out


class CollectionController(Controller):
    path = "/api/collections"

    @get("/")
    async def list_collections(self, collections: CollectionService, principal: Principal) -> dict[str, Any]:
        """Collections I own or that are shared with me, with my role in each."""
        return {"collections": [collection_json(c) for c in await collections.list(principal)]}

    @post("/", status_code=201)
    async def create(self, data: NewCollection, collections: CollectionService, principal: Principal) -> dict[str, Any]:
        return collection_json(await collections.create(principal, data.name, data.description))

    @get("/{collection_id:uuid}")
    async def get_collection(
        self, collection_id: UUID, collections: CollectionService, principal: Principal
    ) -> dict[str, Any]:
        return collection_json(await collections.detail(principal, collection_id))

    @patch("/{collection_id:uuid}")
    async def update(
        self, collection_id: UUID, data: CollectionPatch, collections: CollectionService, principal: Principal
    ) -> dict[str, Any]:
        return collection_json(await collections.update(principal, collection_id, data.name, data.description))

    @delete("/{collection_id:uuid}", status_code=204)
    async def delete_collection(
        self, collection_id: UUID, collections: CollectionService, principal: Principal
    ) -> None:
        await collections.delete(principal, collection_id)

    @put("/{collection_id:uuid}/members/{user_id:uuid}", status_code=204)
    async def set_member(
        self, collection_id: UUID, user_id: UUID, data: Membership, collections: CollectionService, principal: Principal
    ) -> None:
        await collections.set_member(principal, collection_id, user_id, data.role)

    @delete("/{collection_id:uuid}/members/{user_id:uuid}", status_code=204)
    async def remove_member(
        self, collection_id: UUID, user_id: UUID, collections: CollectionService, principal: Principal
    ) -> None:
        await collections.remove_member(principal, collection_id, user_id)

    @put("/{collection_id:uuid}/documents/{document_id:uuid}", status_code=204)
    async def add_document(
        self, collection_id: UUID, document_id: UUID, collections: CollectionService, principal: Principal
    ) -> None:
        await collections.add_document(principal, collection_id, document_id)

    @delete("/{collection_id:uuid}/documents/{document_id:uuid}", status_code=204)
    async def remove_document(
        self, collection_id: UUID, document_id: UUID, collections: CollectionService, principal: Principal
    ) -> None:
        await collections.remove_document(principal, collection_id, document_id)
