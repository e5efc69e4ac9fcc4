"""The search contract every domain speaks: filters, hits with their trace, the result, and the service.

Retrieval implements `SearchService`; chat, evaluation and the interfaces receive one and call it.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol
from uuid import UUID

from pydantic import BaseModel, Field, computed_field, field_validator

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


LOCATION_FILTER_KEYS = ("sheet", "slide", "chapter", "row", "t")


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class Location(BaseModel):
    """Where a passage sits inside its file, beyond page and section (what the format knows), and a label."""

    start_s: float | None = Field(default=None, description="transcript: the first cue's start, in seconds")
    end_s: float | None = Field(default=None, description="transcript: the last cue's end, in seconds")
    slide: int | None = Field(default=None, description="presentation: the slide number, from 1")
    sheet: str | None = Field(default=None, description="spreadsheet or CSV: the sheet (a CSV's file name stem)")
    row_start: int | None = Field(default=None, description="spreadsheet: first row, as the spreadsheet numbers it")
    row_end: int | None = Field(default=None, description="spreadsheet: last row")
    chapter: str | None = Field(default=None, description="e-book: the chapter's title")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def label(self) -> str:
        """For people and citations: "00:12:31–00:12:58", "Slide 3", "Sheet Q1, rows 2–41", "Chapter: Title"."""
        parts: list[str] = []
        if self.start_s is not None:
            end = f"–{_clock(self.end_s)}" if self.end_s is not None and int(self.end_s) != int(self.start_s) else ""
            parts.append(_clock(self.start_s) + end)
        if self.slide is not None:
            parts.append(f"Slide {self.slide}")
        if self.sheet is not None or self.row_start is not None:
            rows = ""
            if self.row_start is not None:
                same = self.row_end is None or self.row_end == self.row_start
                rows = f"row {self.row_start}" if same else f"rows {self.row_start}–{self.row_end}"
            parts.append(", ".join(p for p in (f"Sheet {self.sheet}" if self.sheet else "", rows) if p))
        if self.chapter:
            parts.append(self.chapter if self.chapter.lower().startswith("chapter") else f"Chapter: {self.chapter}")
        return ", ".join(parts)


class SearchFilters(BaseModel):
    """Restrict a search to some documents, collections and/or documents whose metadata has these key=value
    pairs, and/or passages at a location (`sheet`, `slide`, `chapter`: equal; `row`, `t` (seconds): inside the
    passage's rows or time span). Filters only narrow what the reader may read: they never widen it."""

    document_ids: list[UUID] | None = None
    metadata: dict[str, str] | None = None
    collection_ids: list[UUID] | None = None
    location: dict[str, str] | None = None

    @property
    def active(self) -> bool:
        return bool(self.document_ids) or bool(self.metadata) or bool(self.collection_ids) or bool(self.location)


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
    location: Location | None = Field(default=None, description="where in the file, when the format knows it")
    url: str | None = Field(default=None, description="the document's source web page (http/https), if any")

    @field_validator("url", mode="before")
    @classmethod
    def _web_url(cls, value: Any) -> str | None:
        """Only an http(s) address is a link (a `javascript:` one from some metadata never reaches a page)."""
        if not isinstance(value, str) or not value.lower().startswith(("http://", "https://")):
            return None
        return value


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
