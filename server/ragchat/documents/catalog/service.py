"""The catalog as a service: what a principal may list, open and read (documents, chunks, files), delete, and
add to a collection."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Sequence
from typing import Any
from uuid import UUID

from ragchat.core.audit import AuditAction, AuditWriter
from ragchat.core.errors import Forbidden, NotFound
from ragchat.core.ownership import CorpusState, DocumentCounts, SampledChunk, UserNames
from ragchat.core.principal import Principal
from ragchat.core.reading import DocumentSections, Section
from ragchat.db.pool import Pool
from ragchat.db.replicas import ReadRouter
from ragchat.documents.catalog import bulk, chunk_store, corpus, listing
from ragchat.documents.catalog import repository as repo
from ragchat.documents.catalog.listing import ListQuery


async def owned_document(conn: Any, principal: Principal, document_id: UUID, what: str) -> dict[str, Any]:
    """The document if the principal owns it; a reader gets 403, anyone else 404."""
    row = await repo.get_document(conn, principal.user_id, document_id)
    if row is None:
        raise NotFound(f"document {document_id} not found")
    if row["owner_id"] != principal.user_id:
        raise Forbidden(f"only the document's owner can {what} it")
    return row


async def writable_document(conn: Any, principal: Principal, document_id: UUID, what: str) -> dict[str, Any]:
    """The document if the principal owns it or writes to a collection holding it; a reader 403, anyone else 404."""
    row = await repo.get_document(conn, principal.user_id, document_id)
    if row is None:
        raise NotFound(f"document {document_id} not found")
    if row.get("access", "owner") == "read":
        raise Forbidden(f"only the document's owner or a collection writer can {what}")
    return row


def _target(document_id: UUID) -> dict[str, Any]:
    return {"target_type": "document", "target_id": document_id}


def owner_counts(pool: Pool) -> DocumentCounts:
    """How many documents each user owns, for the accounts domain's user list (core/ownership.py)."""

    async def count(owners: Collection[UUID]) -> dict[UUID, int]:
        async with pool.connection() as conn:
            return await repo.count_by_owner(conn, owners)

    return count


class CatalogService:
    def __init__(
        self,
        pool: Pool,
        on_requeued: Callable[[], None],
        names: UserNames,
        audit: AuditWriter,
        reads: ReadRouter | None = None,
    ) -> None:
        self.pool = pool
        #: the listings (`list`, `list_page`) run on a read replica when one is usable; a document's own page,
        #: its status and chunks are read on the primary (they are what a user opens right after an upload)
        self.reads = reads or ReadRouter(pool)
        self._on_requeued = on_requeued  # wakes the ingestion worker after a bulk retry
        self.audit = audit
        self._names = names  # owners' names: the accounts domain's

    async def named(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Document rows with their owner's name (`owner_name`), as the routes and MCP show them."""
        names = await self._names({r["owner_id"] for r in rows})
        return [{**r, "owner_name": names.get(r["owner_id"])} for r in rows]

    async def named_one(self, row: dict[str, Any]) -> dict[str, Any]:
        return (await self.named([row]))[0]

    async def corpus_state(self, owner: UUID, max_failures: int) -> CorpusState:
        """How much of an owner's corpus is ingested (core/ownership.py `Corpus`, for the evaluation)."""
        async with self.pool.connection() as conn:
            return await corpus.corpus_state(conn, owner, max_failures)

    async def sample_chunks(self, owner: UUID, n: int, *, seed: str, min_chars: int) -> list[SampledChunk]:
        async with self.pool.connection() as conn:
            return await corpus.sample_chunks(conn, owner, n, seed=seed, min_chars=min_chars)

    async def list(self, principal: Principal, collection_id: UUID | None = None) -> list[dict[str, Any]]:
        """Everything the principal may read: their own documents and those shared through collections."""

        async def read(pool: Pool) -> list[dict[str, Any]]:
            async with pool.connection() as conn:
                return await repo.list_documents(conn, principal.user_id, collection_id)

        return await self.named(await self.reads.run(principal.user_id, read))

    async def get(self, principal: Principal, document_id: UUID) -> dict[str, Any] | None:
        async with self.pool.connection() as conn:
            row = await repo.get_document(conn, principal.user_id, document_id)
        return None if row is None else await self.named_one(row)

    async def read_chunks(
        self,
        principal: Principal,
        document_id: UUID,
        *,
        start: int = 0,
        end: int | None = None,
        page: int | None = None,
        limit: int = 50,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The document and up to `limit` of its chunks from index `start` to `end` (inclusive; of one page when
        `page` is given), only if the principal may read it; otherwise 404 (missing or not theirs: the same)."""
        async with self.pool.connection() as conn:
            document = await repo.get_document(conn, principal.user_id, document_id)
            if document is None:
                raise NotFound(f"document {document_id} not found")
            chunks = await chunk_store.read_chunks(
                conn, principal.user_id, document_id, start=start, end=end, page=page, limit=limit
            )
        return await self.named_one(document), chunks

    async def read_sections(
        self, principal: Principal, document_id: UUID, *, start: int = 0, limit: int = 50
    ) -> DocumentSections:
        """`ragchat.core.reading.DocumentReader`: `read_chunks` as the whole-document contract's DTOs."""
        document, rows = await self.read_chunks(principal, document_id, start=max(0, start), limit=max(1, limit))
        return DocumentSections(
            document_id=document["id"],
            title=document["title"],
            filename=document["filename"],
            status=document["status"],
            error=document["error"],
            chunks_total=int(document["chunks_total"] or 0),
            sections=[Section.model_validate(r) for r in rows],
        )

    async def list_page(self, principal: Principal, query: ListQuery) -> tuple[list[dict[str, Any]], int]:
        """One filtered, sorted page of what the principal may read, and how many match in all."""

        async def read(pool: Pool) -> tuple[list[dict[str, Any]], int]:
            async with pool.connection() as conn:
                return await listing.list_page(conn, principal.user_id, query)

        rows, total = await self.reads.run(principal.user_id, read)
        return await self.named(rows), total

    async def chunk_page(
        self, principal: Principal, document_id: UUID, *, offset: int, limit: int, chunk_id: int | None = None
    ) -> tuple[list[dict[str, Any]], int, int]:
        """Chunks of a readable document in order (404 otherwise): from `offset`, or with `chunk_id` the page
        around that chunk (404 when it is not one of the document's). Returns (chunks, total, offset)."""
        async with self.pool.connection() as conn:
            if await repo.get_document(conn, principal.user_id, document_id) is None:
                raise NotFound(f"document {document_id} not found")
            if chunk_id is not None:
                ordinal = await listing.chunk_ordinal(conn, document_id, chunk_id)
                if ordinal is None:
                    raise NotFound(f"chunk {chunk_id} is not a chunk of document {document_id}")
                offset = max(0, ordinal - limit // 2)
            rows, total = await listing.chunk_page(conn, document_id, offset=offset, limit=limit)
        return rows, total, offset

    async def open_file(self, principal: Principal, document_id: UUID) -> tuple[dict[str, Any], int]:
        """A readable document and the size of its original file (404 when either is missing)."""
        async with self.pool.connection() as conn:
            row = await repo.get_document(conn, principal.user_id, document_id)
            size = None if row is None else await listing.blob_size(conn, document_id)
        if row is None or size is None:
            raise NotFound(f"document {document_id} not found")
        return row, size

    def file_slices(self, document_id: UUID, size: int) -> AsyncIterator[bytes]:
        return listing.blob_slices(self.pool, document_id, size)

    async def bulk(self, principal: Principal, action: str, ids: Sequence[UUID]) -> dict[UUID, str | None]:
        """Delete or retry many documents at once, with the single routes' rules; per id None or why not."""
        unique = list(dict.fromkeys(ids))
        async with self.pool.connection() as conn:
            if action == "delete":
                deleted = await listing.bulk_delete(conn, principal.user_id, unique)
                for document_id in (i for i, why in deleted.items() if why is None):
                    await self.audit.record(
                        conn, AuditAction.DOCUMENT_DELETE, principal, **_target(document_id), details={"bulk": True}
                    )
                return deleted
            out = await listing.bulk_retry(conn, principal.user_id, unique)
        if any(v is None for v in out.values()):
            self._on_requeued()
        return out

    async def matching(self, principal: Principal, query: ListQuery, cap: int) -> list[UUID]:
        """The ids of what the list filter `query` matches in the principal's read scope (at most `cap` + 1)."""
        async with self.pool.connection() as conn:
            return await bulk.matching_ids(conn, principal.user_id, query, cap)

    async def bulk_collection(
        self, principal: Principal, add: bool, collection_id: UUID, ids: Sequence[UUID]
    ) -> dict[UUID, str | None]:
        """Put many documents into a collection (their owner, a writer of it) or take them out (a writer; a
        reader only their own), with the single routes' rules; per id None or why not; one audit row."""
        unique = list(dict.fromkeys(ids))
        async with self.pool.connection() as conn:
            role = await repo.collection_role(conn, principal.user_id, collection_id)
            if role is None:
                raise NotFound(f"collection {collection_id} not found")
            if add and role == "read":
                raise Forbidden(f"you may only read collection {collection_id}: ask its owner for write access")
            if add:
                out = await bulk.add_to_collection(conn, principal.user_id, collection_id, unique)
            else:
                out = await bulk.remove_from_collection(conn, principal.user_id, collection_id, role, unique)
            done = [str(i) for i, why in out.items() if why is None]
            if done:
                action = AuditAction.COLLECTION_DOCUMENT_ADD if add else AuditAction.COLLECTION_DOCUMENT_REMOVE
                details = {"bulk": True, "documents": len(done), "document_ids": done[:100]}
                await self.audit.record(
                    conn, action, principal, target_type="collection", target_id=collection_id, details=details
                )
        return out

    async def delete(self, principal: Principal, document_id: UUID) -> None:
        """The owner deletes; a reader gets 403 (they know it exists); anyone else 404."""
        async with self.pool.connection() as conn:
            row = await repo.get_document(conn, principal.user_id, document_id)
            if await repo.delete_document(conn, principal.user_id, document_id):
                details = {"filename": row["filename"]} if row else {}
                await self.audit.record(
                    conn, AuditAction.DOCUMENT_DELETE, principal, **_target(document_id), details=details
                )
                return
            if await repo.get_document(conn, principal.user_id, document_id) is not None:
                raise Forbidden("only the document's owner can delete it (you can remove it from a collection)")
        raise NotFound(f"document {document_id} not found")

    async def check_collection_writable(self, principal: Principal, collection_id: UUID) -> None:
        """Before an upload into a collection: 403 for a reader of it, 404 when the principal cannot see it."""
        async with self.pool.connection() as conn:
            if not await repo.can_write_collection(conn, principal.user_id, collection_id):
                if await repo.collection_role(conn, principal.user_id, collection_id) == "read":
                    raise Forbidden(f"you may only read collection {collection_id}: ask its owner for write access")
                raise NotFound(f"collection {collection_id} not found")

    async def add_to_collection(self, principal: Principal, document_id: UUID, collection_id: UUID) -> None:
        async with self.pool.connection() as conn:
            if await repo.add_to_collection(conn, principal.user_id, document_id, collection_id):
                await self.audit.record(
                    conn,
                    AuditAction.COLLECTION_DOCUMENT_ADD,
                    principal,
                    target_type="collection",
                    target_id=collection_id,
                    details={"document_id": document_id, "upload": True},
                )
