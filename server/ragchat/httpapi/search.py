"""Search results as the API shows them (GET/POST /api/search, /api/search/documents, the chat's passages,
/api/rag, MCP, `ragchat search --json`): the contract's passages (`ragchat.core.search`, data only) with their
rendering for people, `snippet` and the Markdown `citation`, grouped by document, with facets.

The classes keep the contract's names (`Passage`, `MatchedDocument`, `DocumentMatches`): they are the OpenAPI
schema's components, which the web client is typed from.
"""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

from pydantic import BaseModel, Field, computed_field

from ragchat.core import matches
from ragchat.core import search as contract
from ragchat.core.search import (
    Confidence,
    ExpansionStatus,
    Location,
    RerankStatus,
    SearchModeName,
    SearchResult,
    Timings,
)

SNIPPET_CHARS = 200
_SPACES = re.compile(r"\s+")


def snippet_of(content: str, limit: int = SNIPPET_CHARS) -> str:
    text = _SPACES.sub(" ", content).strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    if not text[limit].isspace():  # mid-word: back to the last space, unless the first word is that long
        space = cut.rfind(" ")
        cut = cut[:space] if space > 0 else cut
    return cut.rstrip(" ,;:.-–—") + "…"


def _emphasis(text: str) -> str:
    return "*" + _SPACES.sub(" ", text).strip().replace("\\", "\\\\").replace("*", "\\*") + "*"


def citation_of(title: str, section: str | None, page: int | None, location: Location | None) -> str:
    """Where a passage comes from, for people and models: the title, then the location's label (slide,
    sheet and rows, time span, chapter) or else the section, then the page."""
    parts = [_emphasis(title)] if title.strip() else []
    place = location.label if location is not None and location.label else section
    if place and place.strip():
        parts.append(_emphasis(place))
    if page is not None:
        parts.append(f"page *{page}*")
    return "Based on " + ", ".join(parts) if parts else ""


class Passage(contract.Passage):
    """A search hit as the API shows it (a chat passage: its [n] is its place among the turn's passages)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def snippet(self) -> str:
        """The first ~200 characters of the content, whitespace collapsed, cut at a word boundary with "…"."""
        return snippet_of(self.content)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def citation(self) -> str:
        """ "Based on *Title*, *Section*, page *N*" (Markdown; the parts the passage lacks left out)."""
        return citation_of(self.title or self.filename, self.section, self.page, self.location)

    @classmethod
    def of(cls, hit: contract.Passage) -> Passage:
        """The public fields of a hit (a `ChunkHit`'s own stay inside the server), rendered."""
        return cls.model_validate(hit.model_dump())


def passage_json(hit: contract.Passage) -> dict[str, Any]:
    """A hit as JSON, as the API shows it (the chat's tool results, saved with the message)."""
    return Passage.of(hit).model_dump(mode="json")


class MatchedDocument(matches.MatchedDocument):
    best: Passage = Field(  # pyright: ignore[reportIncompatibleVariableOverride]  # the same, rendered
        description="the document's best matching passage (BM25; `score` relative to the page's best)"
    )


class DocumentMatches(matches.DocumentMatches):
    """One page of every readable document that matches, most matching passages first."""

    documents: list[MatchedDocument]  # pyright: ignore[reportIncompatibleVariableOverride]  # the same, rendered

    @classmethod
    def of(cls, found: matches.DocumentMatches) -> DocumentMatches:
        return cls.model_validate(found.model_dump())


class DocumentHit(BaseModel):
    document_id: UUID
    filename: str
    title: str
    max_score: float
    matched_chunks: int
    best_chunk: Passage


def by_document(passages: list[Passage]) -> list[DocumentHit]:
    """Passages aggregated by document, in the order of each document's best (first) passage, so the
    document order always agrees with the chunk order; `max_score` is that passage's score."""
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
    return list(by_doc.values())


class FacetValue(BaseModel):
    value: str
    count: int = Field(description="readable documents in the search's scope with this value")


Facets = dict[str, list[FacetValue]]
"""Metadata key → its most frequent values (most documents first), as GET/POST /api/search return them."""


class SearchResponse(BaseModel):
    query: str
    mode: SearchModeName
    reranked: bool = Field(description="the LLM rerank scored some or all candidates (`rerank.status`)")
    chunks: list[Passage] = Field(description="best first; `trace` shows each arm's rank and score")
    documents: list[DocumentHit] = Field(description="the chunks grouped by document, best document first")
    timing_ms: Timings
    has_embeddings: bool = Field(description="false: nothing is embedded yet, so vector search found nothing")
    confidence: Confidence
    rerank: RerankStatus = Field(default_factory=RerankStatus, description="what the LLM rerank did")
    expansion: ExpansionStatus = Field(default_factory=ExpansionStatus, description="what the query expansion did")
    facets: Facets = Field(
        default_factory=dict,
        description="metadata key → value counts (documents) among the readable documents in the search's scope; "
        "a filtered key's counts ignore its own filter, so its other values can be added (OR)",
    )


def search_response(result: SearchResult) -> SearchResponse:
    """The response of GET /api/search and `ragchat search --json` (each hit made public once)."""
    passages = [Passage.of(c) for c in result.chunks]
    return SearchResponse(
        query=result.query,
        mode=result.mode,
        reranked=result.reranked,
        chunks=passages,
        documents=by_document(passages),
        timing_ms=result.timings,
        has_embeddings=result.has_embeddings,
        confidence=result.confidence,
        rerank=result.rerank,
        expansion=result.expansion,
    )
