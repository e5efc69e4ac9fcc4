"""What one domain asks another about the tables the other owns (tests/unit/test_table_owners.py). The owner
implements each lookup; the composition root (server/ragchat/runtime.py) hands it to the domain that asks, so
no domain reads another's tables or imports another's package."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

#: The names others see of these users (those that exist); the accounts domain answers.
UserNames = Callable[[Collection[UUID]], Awaitable[dict[UUID, str]]]
#: Whether a user exists and is not disabled (before they are made a collection's member).
UserActive = Callable[[UUID], Awaitable[bool]]
#: How many documents each of these users owns (the documents domain answers; the accounts' user list asks).
DocumentCounts = Callable[[Collection[UUID]], Awaitable[dict[UUID, int]]]


@dataclass(frozen=True)
class CorpusState:
    """One owner's documents by ingestion state, and the first failures: (source id or file name, reason)."""

    ready: int
    failed: int
    pending: int  # queued or processing
    failures: list[tuple[str, str]]


@dataclass(frozen=True)
class SampledChunk:
    chunk_id: int
    document_id: UUID
    title: str
    content: str
    metadata: dict[str, Any]


class Corpus(Protocol):
    """What the evaluation reads of an owner's documents (the documents domain's `CatalogService` fits)."""

    async def corpus_state(self, owner: UUID, max_failures: int) -> CorpusState: ...

    async def sample_chunks(self, owner: UUID, n: int, *, seed: str, min_chars: int) -> list[SampledChunk]:
        """Up to `n` chunks of at least `min_chars` of the owner's ready documents, one per document per round,
        in an order that `seed` decides."""
        ...
