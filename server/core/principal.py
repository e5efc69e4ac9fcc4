"""Who is asking: passed from the route (a dependency) or the CLI down to every repository and search."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

#: The built-in owner used until accounts exist (seeded by migration 0001).
LOCAL_OWNER_ID = UUID("00000000-0000-0000-0000-000000000001")


@dataclass(frozen=True)
class Principal:
    """The authenticated caller. Until accounts exist every request is the local user."""

    user_id: UUID
    name: str = "local"
    is_admin: bool = True


def local_principal() -> Principal:
    """The principal of a single-user install (the CLI on the server's machine, `AUTH=off`)."""
    return Principal(LOCAL_OWNER_ID)
