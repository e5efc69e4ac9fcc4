"""The audit trail's contract: what is recorded (`AuditAction`), by whom (`Actor`), and the writer every domain
is given (`AuditWriter`, implemented by `ragchat.audit` and wired in by the composition root).

A domain records an action on the connection that performs it, inside the same transaction: the row exists if
and only if the action committed. The writer fills in the request's id and the client's address from the
request's context (observability/logs.py) unless they are passed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable
from uuid import UUID

from ragchat.core.principal import Principal


class AuditAction(StrEnum):
    """Every action the audit log records (`area.verb`; the database checks the shape, not the list)."""

    SIGN_IN = "auth.sign_in"
    SIGN_IN_FAILED = "auth.sign_in_failed"
    SIGN_OUT = "auth.sign_out"
    SIGN_OUT_EVERYWHERE = "auth.sign_out_everywhere"
    SETUP = "auth.setup"  # the first account (an admin) created on first visit
    PASSWORD_CHANGE = "auth.password_change"
    TOKEN_CREATE = "token.create"
    TOKEN_REVOKE = "token.revoke"
    USER_CREATE = "user.create"
    USER_DISABLE = "user.disable"
    USER_ENABLE = "user.enable"
    USER_ROLE_CHANGE = "user.role_change"
    USER_PASSWORD_RESET = "user.password_reset"
    USER_DELETE = "user.delete"
    COLLECTION_CREATE = "collection.create"
    COLLECTION_DELETE = "collection.delete"
    COLLECTION_SHARE = "collection.share"  # a user given read or write access (or their role changed)
    COLLECTION_UNSHARE = "collection.unshare"  # a member removed (or leaving)
    COLLECTION_DOCUMENT_ADD = "collection.document_add"
    COLLECTION_DOCUMENT_REMOVE = "collection.document_remove"
    DOCUMENT_DELETE = "document.delete"
    PREFERENCES_UPDATE = "preferences.update"
    CHAT_ANSWER = "chat.answer"  # the documents and chunks an answer showed its reader
    DOCUMENT_READ = "document.read"  # documents read by someone (AUDIT_READS): opened, file, chunks, search hits
    AUDIT_PURGE = "audit.purge"  # written by the database's audit_purge() itself, before it deletes old rows


@dataclass(frozen=True)
class Actor:
    """Who acted: a user (id and name), or someone unknown (a failed sign-in, the CLI) with only a name."""

    user_id: UUID | None
    name: str

    @staticmethod
    def of(principal: Principal) -> Actor:
        return Actor(principal.user_id, principal.name)


#: the actor of an action taken on the server's own machine (`ragchat user …`), not through the app
SYSTEM = Actor(None, "system")


class AuditWriter(Protocol):
    """Appends one row to the audit log on `conn`, in the caller's transaction."""

    async def record(
        self,
        conn: Any,
        action: AuditAction,
        actor: Actor | Principal | None,
        *,
        target_type: str | None = None,
        target_id: UUID | str | None = None,
        details: Mapping[str, Any] | None = None,
        client: str | None = None,
    ) -> None: ...


#: how documents were read (`details.via` of a `document.read` row)
ReadVia = Literal[
    "document",  # GET /api/documents/{id}
    "file",  # GET /api/documents/{id}/file
    "chunks",  # GET /api/documents/{id}/chunks
    "search",  # GET or POST /api/search: the documents of the hits
    "search_documents",  # GET /api/search/documents: the documents listed
    "mcp.read_document",
    "mcp.search_documents",
    "mcp.find_documents",
]


@runtime_checkable  # a route's dependency: Litestar checks the value against the annotation
class ReadAuditor(Protocol):
    """Records what one request read (implemented by `ragchat.audit`, given to routes as `audit`)."""

    async def record_read(
        self, principal: Principal, via: ReadVia, document_ids: Sequence[UUID], *, owner_id: UUID | None = None
    ) -> None:
        """One `document.read` row for the request, as AUDIT_READS says (`shared`: only if some of the documents
        are another user's); `owner_id`: the owner when every id is one known document. Never raises."""
        ...
