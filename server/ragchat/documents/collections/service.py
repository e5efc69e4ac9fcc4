"""Collections: named sets of documents shared with users as `read` or `write`.

A document belongs to its owner and to any number of collections. Every member row (the owner's too, role
`owner`) lives in `collection_members`, so "what may this user read" is one join (server/ragchat/readscope/sql.py).
Anything a user cannot see is reported as not found, never as forbidden: ids do not leak.
"""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

import psycopg

from ragchat.core.audit import AuditAction, AuditWriter
from ragchat.core.errors import BadRequest, Conflict, Forbidden, NotFound
from ragchat.core.ownership import UserActive, UserNames
from ragchat.core.principal import Principal
from ragchat.db.pool import Conn, Pool
from ragchat.documents.catalog import repository as repo

Role = Literal["owner", "write", "read"]
NAME_MAX = 200
DESCRIPTION_MAX = 2000

_COLLECTION_SELECT = """
SELECT c.id, c.name, c.description, c.owner_id, m.role,
       (SELECT count(*) FROM document_collections dc WHERE dc.collection_id = c.id) AS document_count,
       c.created_at, c.updated_at
FROM collections c
JOIN collection_members m ON m.collection_id = c.id AND m.user_id = %(uid)s
"""


def clean_name(name: str) -> str:
    name = " ".join(name.replace("\x00", "").split())
    if not name:
        raise BadRequest("collection name is empty")
    if len(name) > NAME_MAX:
        raise BadRequest(f"collection name is too long (at most {NAME_MAX} characters)")
    return name


def clean_description(text: str) -> str:
    text = text.replace("\x00", "").strip()
    if len(text) > DESCRIPTION_MAX:
        raise BadRequest(f"description is too long (at most {DESCRIPTION_MAX} characters)")
    return text


def _target(collection_id: UUID) -> dict[str, Any]:
    return {"target_type": "collection", "target_id": collection_id}


class CollectionService:
    def __init__(self, pool: Pool, audit: AuditWriter, names: UserNames, active: UserActive) -> None:
        self.pool = pool
        self.audit = audit
        self.names = names  # owners' and members' names, and who may become a member: the accounts domain's
        self.active = active

    async def list(self, principal: Principal) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            query = _COLLECTION_SELECT + " ORDER BY lower(c.name), c.created_at"
            rows = await (await conn.execute(query, {"uid": principal.user_id})).fetchall()
        return await self._named(rows)

    async def get(self, principal: Principal, collection_id: UUID) -> dict[str, Any]:
        async with self.pool.connection() as conn:
            row = await self._get(conn, principal, collection_id)
        return (await self._named([row]))[0]

    async def _named(self, rows: list[dict[str, Any]], key: str = "owner_id", into: str = "owner_name") -> Any:
        """`rows` with the name of the user in `key` in `into`."""
        names = await self.names({r[key] for r in rows})
        return [{**r, into: names.get(r[key])} for r in rows]

    async def detail(self, principal: Principal, collection_id: UUID) -> dict[str, Any]:
        """The collection with its members and `document_count`; its documents are a page of
        GET /api/documents?collection_id= (searched, sorted and paged there, at any size)."""
        async with self.pool.connection() as conn:
            row = await self._get(conn, principal, collection_id)
            members = await (
                await conn.execute(
                    "SELECT m.user_id, m.role FROM collection_members m WHERE m.collection_id = %s", (collection_id,)
                )
            ).fetchall()
        [row] = await self._named([row])
        members = await self._named(members, "user_id", "username")
        members.sort(key=lambda m: (m["role"] != "owner", (m["username"] or "").lower()))
        return {**row, "members": members}

    async def create(self, principal: Principal, name: str, description: str = "") -> dict[str, Any]:
        name, description = clean_name(name), clean_description(description)
        async with self.pool.connection() as conn:
            try:
                async with conn.transaction():
                    row = await (
                        await conn.execute(
                            """INSERT INTO collections (owner_id, name, description) VALUES (%s, %s, %s)
                               RETURNING id""",
                            (principal.user_id, name, description),
                        )
                    ).fetchone()
                    assert row is not None
                    await conn.execute(
                        "INSERT INTO collection_members (collection_id, user_id, role) VALUES (%s, %s, 'owner')",
                        (row["id"], principal.user_id),
                    )
                    await self.audit.record(
                        conn, AuditAction.COLLECTION_CREATE, principal, **_target(row["id"]), details={"name": name}
                    )
            except psycopg.errors.UniqueViolation as exc:
                raise Conflict(f"you already have a collection named {name!r}") from exc
        return await self.get(principal, row["id"])

    async def update(
        self, principal: Principal, collection_id: UUID, name: str | None, description: str | None
    ) -> dict[str, Any]:
        async with self.pool.connection() as conn:
            await self._require(conn, principal, collection_id, "owner")
            try:
                await conn.execute(
                    """UPDATE collections SET name = coalesce(%s, name), description = coalesce(%s, description),
                       updated_at = now() WHERE id = %s""",
                    (
                        None if name is None else clean_name(name),
                        None if description is None else clean_description(description),
                        collection_id,
                    ),
                )
            except psycopg.errors.UniqueViolation as exc:
                raise Conflict(f"you already have a collection named {name!r}") from exc
        return await self.get(principal, collection_id)

    async def delete(self, principal: Principal, collection_id: UUID) -> None:
        """The collection goes; its documents stay with their owners."""
        async with self.pool.connection() as conn:
            await self._require(conn, principal, collection_id, "owner")
            await conn.execute("DELETE FROM collections WHERE id = %s", (collection_id,))
            await self.audit.record(conn, AuditAction.COLLECTION_DELETE, principal, **_target(collection_id))

    async def set_member(self, principal: Principal, collection_id: UUID, user_id: UUID, role: str) -> None:
        if role not in ("read", "write"):
            raise BadRequest("role must be 'read' or 'write'")
        active = await self.active(user_id)  # asked first: never a second connection while this one is held
        async with self.pool.connection() as conn:
            await self._require(conn, principal, collection_id, "owner")
            if user_id == principal.user_id:
                raise BadRequest("you own this collection: your role cannot change")
            if not active:
                raise NotFound(f"user {user_id} not found")
            await conn.execute(
                """INSERT INTO collection_members (collection_id, user_id, role) VALUES (%s, %s, %s)
                   ON CONFLICT (collection_id, user_id) DO UPDATE SET role = EXCLUDED.role""",
                (collection_id, user_id, role),
            )
            details = {"user_id": user_id, "role": role}
            await self.audit.record(
                conn, AuditAction.COLLECTION_SHARE, principal, **_target(collection_id), details=details
            )

    async def remove_member(self, principal: Principal, collection_id: UUID, user_id: UUID) -> None:
        """The owner removes anyone else; a member may leave."""
        async with self.pool.connection() as conn:
            role = await self._require(conn, principal, collection_id, "read")
            if user_id == principal.user_id:
                if role == "owner":
                    raise BadRequest("the owner cannot leave their own collection (delete it instead)")
            elif role != "owner":
                raise Forbidden("only the collection's owner removes members")
            cur = await conn.execute(
                "DELETE FROM collection_members WHERE collection_id = %s AND user_id = %s AND role <> 'owner'",
                (collection_id, user_id),
            )
            if cur.rowcount == 0:
                raise NotFound(f"user {user_id} is not a member of this collection")
            details = {"user_id": user_id}
            await self.audit.record(
                conn, AuditAction.COLLECTION_UNSHARE, principal, **_target(collection_id), details=details
            )

    async def add_document(self, principal: Principal, collection_id: UUID, document_id: UUID) -> None:
        async with self.pool.connection() as conn:
            await self._require(conn, principal, collection_id, "write")
            if not await repo.add_to_collection(conn, principal.user_id, document_id, collection_id):
                readable = await repo.get_document(conn, principal.user_id, document_id)
                if readable is None:
                    raise NotFound(f"document {document_id} not found")
                raise Forbidden("only a document's owner puts it into a collection")
            details = {"document_id": document_id}
            await self.audit.record(
                conn, AuditAction.COLLECTION_DOCUMENT_ADD, principal, **_target(collection_id), details=details
            )

    async def remove_document(self, principal: Principal, collection_id: UUID, document_id: UUID) -> None:
        """The collection's owner or writers, or the document's owner, take a document out."""
        async with self.pool.connection() as conn:
            role = await self._require(conn, principal, collection_id, "read")
            row = await (
                await conn.execute(
                    """SELECT d.owner_id FROM document_collections dc JOIN documents d ON d.id = dc.document_id
                       WHERE dc.collection_id = %s AND dc.document_id = %s""",
                    (collection_id, document_id),
                )
            ).fetchone()
            if row is None:
                raise NotFound(f"document {document_id} is not in this collection")
            if role == "read" and row["owner_id"] != principal.user_id:
                raise Forbidden("you may only read this collection")
            await conn.execute(
                "DELETE FROM document_collections WHERE collection_id = %s AND document_id = %s",
                (collection_id, document_id),
            )
            details = {"document_id": document_id}
            await self.audit.record(
                conn, AuditAction.COLLECTION_DOCUMENT_REMOVE, principal, **_target(collection_id), details=details
            )

    async def _get(self, conn: Conn, principal: Principal, collection_id: UUID) -> dict[str, Any]:
        row = await (
            await conn.execute(
                _COLLECTION_SELECT + " WHERE c.id = %(id)s", {"uid": principal.user_id, "id": collection_id}
            )
        ).fetchone()
        if row is None:
            raise NotFound(f"collection {collection_id} not found")
        return row

    async def _require(self, conn: Conn, principal: Principal, collection_id: UUID, need: Role) -> str:
        """The caller's role; 404 when they are not a member at all, 403 when the role is too weak."""
        row = await (
            await conn.execute(
                "SELECT role FROM collection_members WHERE collection_id = %s AND user_id = %s",
                (collection_id, principal.user_id),
            )
        ).fetchone()
        if row is None:
            raise NotFound(f"collection {collection_id} not found")
        rank = {"read": 0, "write": 1, "owner": 2}
        if rank[row["role"]] < rank[need]:
            raise Forbidden(
                "only the collection's owner may do this" if need == "owner" else "you may only read this collection"
            )
        return row["role"]
