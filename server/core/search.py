"""The search contract every domain speaks: filters, hits with their trace, the result, and the service.

Retrieval implements `SearchService`; chat, evaluation and the interfaces receive one and call it.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol
from uuid import UUID

from pydantic import BaseModel, Field

from server.core.errors import BadRequest
from server.core.principal import Principal
from server.settings import SearchMode


def parse_mode(value: str | SearchMode | None, default: SearchMode) -> SearchMode:
    """A search mode from a request or the CLI; unknown names are a 400."""
    if value is None or value == "":
        return default
    try:
        return SearchMode(str(value).strip().lower())
    except ValueError:
        raise BadRequest(f"unknown search mode {value!r}: use vector, keyword or hybrid") from None


class SearchFilters(BaseModel):
    """Restrict a search to some documents, collections and/or documents whose metadata has these key=value
    pairs. Filters only narrow what the reader may read: they never widen it."""

    document_ids: list[UUID] | None = None
    metadata: dict[str, str] | None = None
    collection_ids: list[UUID] | None = None

    @property
    def active(self) -> bool:
        return bool(self.document_ids) or bool(self.metadata) or bool(self.collection_ids)


class Trace(BaseModel):
    vector_rank: int | None = None
    vector_score: float | None = None
    keyword_rank: int | None = None
    keyword_score: float | None = None
    fused_score: float | None = None
    rerank_score: float | None = None


class Passage(BaseModel):
    """A search hit as the API shows it (a chat passage: its [n] is its place among the turn's passages)."""

    id: int
    document_id: UUID
    filename: str
    title: str
    page: int | None = None
    section: str | None = None
    chunk_index: int
    content: str
    score: float
    trace: Trace


class ChunkHit(Passage):
    """A hit inside the server: the public fields plus what fusion, dedup and confidence need."""

    content_hash: str = Field(default="", exclude=True)
    metadata: dict[str, Any] = Field(default_factory=dict, exclude=True)
    similarity: float | None = Field(default=None, exclude=True)
    trace: Trace = Field(default_factory=Trace)

    def public(self) -> Passage:
        return Passage.model_validate(self.model_dump())


class Timings(BaseModel):
    embed_ms: float = 0.0
    vector_ms: float = 0.0
    keyword_ms: float = 0.0
    fuse_ms: float = 0.0
    rerank_ms: float = 0.0
    total_ms: float = 0.0


class Confidence(BaseModel):
    label: Literal["high", "moderate", "low"]
    best_similarity: float | None
    insufficient_confidence: bool


class SearchResult(BaseModel):
    query: str
    mode: Literal["vector", "keyword", "hybrid"]
    reranked: bool
    chunks: list[ChunkHit]
    timings: Timings
    confidence: Confidence
    has_embeddings: bool

    def to_api(self) -> SearchResponse:
        """The response of GET /api/search and `ragchat search --json` (each hit made public once)."""
        passages = [c.public() for c in self.chunks]
        return SearchResponse(
            query=self.query,
            mode=self.mode,
            reranked=self.reranked,
            chunks=passages,
            documents=by_document(passages),
            timing_ms=self.timings,
            has_embeddings=self.has_embeddings,
            confidence=self.confidence,
        )


def by_document(passages: list[Passage]) -> list[DocumentHit]:
    """Passages aggregated by document: best passage, matched count, max score; best first."""
    by_doc: dict[UUID, DocumentHit] = {}
    for hit in passages:
        entry = by_doc.get(hit.document_id)
        if entry is None:
            by_doc[hit.document_id] = DocumentHit(
                document_id=hit.document_id,
                filename=hit.filename,
                title=hit.title,
                max_score=hit.score,
                matched_chunks=1,
                best_chunk=hit,
            )
        else:
            entry.matched_chunks += 1
            if hit.score > entry.max_score:
                entry.max_score = hit.score
                entry.best_chunk = hit
    return sorted(by_doc.values(), key=lambda d: d.max_score, reverse=True)


class DocumentHit(BaseModel):
    document_id: UUID
    filename: str
    title: str
    max_score: float
    matched_chunks: int
    best_chunk: Passage


class SearchResponse(BaseModel):
    query: str
    mode: Literal["vector", "keyword", "hybrid"]
    reranked: bool
    chunks: list[Passage] = Field(description="best first; `trace` shows each arm's rank and score")
    documents: list[DocumentHit] = Field(description="the chunks grouped by document, best document first")
    timing_ms: Timings
    has_embeddings: bool = Field(description="false: nothing is embedded yet, so vector search found nothing")
    confidence: Confidence


class SearchService(Protocol):
    """What chat, evaluation and the HTTP/CLI interfaces need from retrieval."""

    async def search(
        self,
        query: str,
        *,
        principal: Principal,
        limit: int = 10,
        mode: str | SearchMode | None = None,
        filters: SearchFilters | None = None,
        rerank: bool | None = None,
    ) -> SearchResult: ...
