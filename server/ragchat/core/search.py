"""The search contract every domain speaks: filters, hits with their trace, the result, and the service.

Retrieval implements `SearchService`; chat, evaluation and the interfaces receive one and call it. Data only:
how the API shows a result (the Markdown `citation` and `snippet`, passages grouped by document, facets) is
the edge's, `ragchat.httpapi.search`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Annotated, Any, Literal, Protocol
from uuid import UUID

from pydantic import BaseModel, BeforeValidator, Field, computed_field, field_validator

from ragchat.core.principal import Principal


class SearchMode(StrEnum):
    vector = "vector"
    keyword = "keyword"
    hybrid = "hybrid"


#: SearchMode's names, for request and response models (an inline enum in the OpenAPI document)
SearchModeName = Literal["vector", "keyword", "hybrid"]

#: how the vector and keyword rankings are fused (FUSION)
Fusion = Literal["relative", "rrf", "weighted_rrf", "score"]

#: query expansion before the search (QUERY_EXPANSION): none, extra keyword-arm terms, or a hypothetical passage
QueryExpansion = Literal["off", "keywords", "hyde"]

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
    ocr_confidence: float | None = Field(
        default=None, description="scanned page or image: the OCR's mean confidence on the page, 0..1"
    )

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
        if self.ocr_confidence is not None:
            parts.append(f"OCR {self.ocr_confidence:.0%} confidence")
        return ", ".join(parts)


def metadata_as_lists(value: Any) -> Any:
    """`{"team": "geo"}` is `{"team": ["geo"]}`; repeated values count once; a key without values goes."""
    if not isinstance(value, dict):
        return value
    out: dict[Any, Any] = {}
    for key, raw in value.items():
        values = [raw] if isinstance(raw, str) else raw
        if isinstance(values, list):
            values = list(dict.fromkeys(values))
            if not values:
                continue
        out[key] = values
    return out or None


MetadataFilter = Annotated[dict[str, list[str]], BeforeValidator(metadata_as_lists)]
"""Metadata key → the values one of which a document must have (a single string is a list of one)."""


class SearchFilters(BaseModel):
    """Restrict a search to some documents, collections and/or documents whose metadata has, for every key,
    one of its values (OR within a key, AND across keys; a metadata value stored as a list matches when any
    element does), and/or passages at a location (`sheet`, `slide`, `chapter`: equal; `row`, `t` (seconds):
    inside the passage's rows or time span). Filters only narrow what the reader may read: never widen it."""

    document_ids: list[UUID] | None = None
    metadata: MetadataFilter | None = None
    collection_ids: list[UUID] | None = None
    location: dict[str, str] | None = None

    @property
    def active(self) -> bool:
        return bool(self.document_ids) or bool(self.metadata) or bool(self.collection_ids) or bool(self.location)


@dataclass(frozen=True)
class SearchOptions:
    """One search's options, decided once at the entry point (`ragchat.core.options.resolve`): the searcher
    takes them as they are."""

    mode: SearchMode
    fusion: Fusion
    rerank: bool
    limit: int
    filters: SearchFilters | None = None
    expansion: QueryExpansion = "off"

    def with_filters(self, filters: SearchFilters | None) -> SearchOptions:
        return replace(self, filters=filters if filters is not None and filters.active else None)

    def describe(self) -> dict[str, Any]:
        """For logs and traces: what was decided."""
        return {
            "mode": self.mode.value,
            "fusion": self.fusion,
            "rerank": self.rerank,
            "limit": self.limit,
            "expansion": self.expansion,
        }


ScoreKind = Literal["similarity", "bm25 (normalised)", "fused", "rerank"]
"""What `Passage.score` is: cosine similarity (vector search), BM25 / the best hit's BM25 (keyword search),
the fused score (hybrid, see server/retrieval/fusion.py) or the LLM rerank relevance (reranked)."""


class Trace(BaseModel):
    vector_rank: int | None = None
    vector_score: float | None = None
    keyword_rank: int | None = None
    keyword_score: float | None = None
    fused_score: float | None = None
    rerank_score: float | None = None
    similarity: float | None = Field(
        default=None, description="cosine similarity to the query, also for chunks the vector arm did not return"
    )


class Passage(BaseModel):
    """A search hit, data only (a chat passage: its [n] is its place among the turn's passages). The API shows
    it with its rendering (`snippet`, `citation`): `ragchat.httpapi.search.Passage`."""

    id: int
    document_id: UUID
    filename: str
    title: str
    page: int | None = None
    section: str | None = None
    chunk_index: int
    content: str
    score: float = Field(description="0..1, never higher than the hit before it; `score_kind` says what it is")
    score_kind: ScoreKind = "similarity"
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
    expand_ms: float = 0.0
    total_ms: float = 0.0


ConfidenceLabel = Literal["high", "moderate", "low", "insufficient"]


class Confidence(BaseModel):
    """How well the best passage matches the question, from its cosine similarity (whatever the ranking):
    high ≥ CONFIDENCE_HIGH > moderate ≥ CONFIDENCE_MODERATE > low ≥ CONFIDENCE_FLOOR > insufficient; where the
    embedding model does not cover the documents' language, also insufficient when no passage holds
    CONFIDENCE_KEYWORD_FLOOR of the question's term weight. Retrieval decides and words it (retrieval/wording.py)."""

    label: ConfidenceLabel
    percent: int = Field(
        ge=0,
        le=100,
        description="the best passage's cosine similarity × 100 (0: none); when the question's words decided "
        "insufficient, the share of them the best passage holds, if lower",
    )
    text: str = Field(description='for people: "High confidence (82%)"')
    insufficient: bool = Field(
        description="true below CONFIDENCE_FLOOR, or below CONFIDENCE_KEYWORD_FLOOR of the question's words in "
        "a language the embedding model does not cover: the documents likely lack the answer"
    )
    message: str | None = Field(default=None, description="what to do about a low or insufficient result")
    best_similarity: float | None = Field(description="the best cosine similarity, 4 decimals (older field)")
    insufficient_confidence: bool = Field(description="the same as `insufficient` (older field)")


RerankState = Literal["off", "ok", "partial", "failed"]


class RerankStatus(BaseModel):
    """What the LLM rerank did: `off` (not asked, or nothing to rerank), `ok` (every candidate scored),
    `partial` (some calls failed or missed the deadline: the scored candidates come first, by score, then the
    unscored ones in retrieval order) or `failed` (none scored: the retrieval order is kept)."""

    requested: bool = False
    status: RerankState = "off"
    scored: int = Field(default=0, description="candidates the LLM scored")
    candidates: int = Field(default=0, description="candidates sent to the LLM")
    warning: str | None = Field(
        default=None, description="for people, when the rerank failed, was partial or fell back to another method"
    )
    skipped: int = Field(
        default=0,
        description="candidates not scored on purpose (the top was settled, or beyond "
        "the listwise window): they follow in retrieval order",
    )
    method: str | None = Field(
        default=None,
        description="how the LLM scored: json, logprobs, logprobs+json (some fell back), listwise, listwise-json",
    )

    @property
    def reranked(self) -> bool:
        return self.status in ("ok", "partial")


ExpansionState = Literal["off", "ok", "invalid", "error", "timeout"]


class ExpansionStatus(BaseModel):
    """What the query expansion did (QUERY_EXPANSION): `off` (not asked, or nothing to expand), `ok` (the search
    used it), or why the search ran unexpanded: `invalid` (the reply was not the JSON asked for, or had nothing
    usable), `error` (the LLM call failed) or `timeout` (no reply within EXPANSION_TIMEOUT_S)."""

    requested: QueryExpansion = "off"
    status: ExpansionState = "off"
    terms: list[str] = Field(default_factory=list, description="keywords: the extra terms the keyword arm searched")
    passage: str | None = Field(default=None, description="hyde: the hypothetical passage embedded with the query")
    warning: str | None = Field(default=None, description="for people, when the search ran unexpanded")


class SearchResult(BaseModel):
    query: str
    mode: SearchModeName
    reranked: bool
    chunks: list[ChunkHit]
    timings: Timings
    confidence: Confidence
    has_embeddings: bool
    rerank: RerankStatus = Field(default_factory=RerankStatus)
    expansion: ExpansionStatus = Field(default_factory=ExpansionStatus)


class SearchService(Protocol):
    """What chat, evaluation and the HTTP/CLI interfaces need from retrieval."""

    async def search(
        self,
        query: str,
        *,
        principal: Principal,
        options: SearchOptions,
    ) -> SearchResult: ...
