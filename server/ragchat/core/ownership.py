"""What one domain asks another about the tables the other owns (tests/unit/test_table_owners.py). The owner
implements each lookup; the composition root (server/ragchat/runtime.py) hands it to the domain that asks, so
no domain reads another's tables or imports another's package."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from uuid import UUID

#: How many documents each of these users owns (the documents domain answers; the accounts' user list asks).
DocumentCounts = Callable[[Collection[UUID]], Awaitable[dict[UUID, int]]]
