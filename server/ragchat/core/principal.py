"""Who is asking: passed from the route (a dependency) or the CLI down to every repository and search."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

#: The built-in owner of a single-user install (`AUTH=off`, the CLI on the server's machine); seeded by
#: migration 0001. The first account created on first visit takes it over, with its documents.
LOCAL_OWNER_ID = UUID("00000000-0000-0000-0000-000000000001")

Via = Literal["local", "session", "token"]


@dataclass(frozen=True)
class Principal:
    """The authenticated caller, and the credential that proved it (so a long stream can re-check it)."""

    user_id: UUID
    name: str = "local"
    is_admin: bool = True
    via: Via = "local"
    credential: str | None = None  # the session's hash (hex) or the API token's id


#: Is this principal's credential still good (not logged out, revoked, expired, or the user disabled)?
CredentialCheck = Callable[[Principal], Awaitable[bool]]


def local_principal() -> Principal:
    """The principal of a single-user install (the CLI on the server's machine, `AUTH=off`)."""
    return Principal(LOCAL_OWNER_ID)
