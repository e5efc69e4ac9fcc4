"""The exhaustive search contract: every readable *document* that matches a query, not the top passages.

A document matches when at least one of its passages contains the query's words (Postgres full-text search
over the stored tsvector, the keyword arm's stems): "every document that mentions X" has a definite answer
only lexically (a similarity threshold would silently drop or add documents). Documents come with how many of
their passages match and the best of them (BM25), most matches first, paged with a keyset cursor. The scan is
bounded by `limit` matching passages (the caller can raise it up to `SEARCH_ALL_MAX_LIMIT`); the answer says
when it stopped early.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol
from uuid import UUID

from pydantic import BaseModel, Field

from ragchat.core.principal import Principal
from ragchat.core.search import Passage, SearchFilters

MatchMode = Literal["all", "any"]


@dataclass(frozen=True)
class MatchRequest:
    """What to find: the query (`all`: web-search syntax, every word, "a phrase", or, -word; `any`: one of the
    words is enough), the page (`cursor` from the previous page), and the bound on matching passages scanned."""

    query: str
    match: MatchMode = "all"
    page_size: int = 50
    cursor: str | None = None
    limit: int | None = None  # None: SEARCH_ALL_LIMIT
    filters: SearchFilters | None = None


class MatchedDocument(BaseModel):
    document_id: UUID
    filename: str
    title: str
    matches: int = Field(description="passages of the document that match (among those scanned)")
    best: Passage = Field(
        description="the document's best matching passage (BM25; `score` relative to the page's best)"
    )


class DocumentMatches(BaseModel):
    """One page of every readable document that matches, most matching passages first."""

    query: str
    match: MatchMode
    tsquery: str = Field(description="the full-text query that ran (Postgres tsquery syntax)")
    documents: list[MatchedDocument]
    total_documents: int = Field(description="matching documents in all pages (among the passages scanned)")
    total_passages: int = Field(description="matching passages scanned")
    complete: bool = Field(description="false: the scan stopped at `limit` passages; documents may be missing")
    limit: int = Field(description="the bound on matching passages scanned")
    max_limit: int = Field(description="how far the caller may raise `limit`")
    next_cursor: str | None = Field(default=None, description="pass as `cursor` for the next page; null: last page")
    note: str | None = Field(default=None, description="in words: stopped early, or nothing searchable in the query")
    timing_ms: float


class DocumentFinder(Protocol):
    async def find_documents(self, request: MatchRequest, *, principal: Principal) -> DocumentMatches: ...


def matches_text(found: DocumentMatches, start: int = 1) -> str:
    """For a model: the documents with their counts, each best passage numbered from `start` for citing as
    [n], and whether the list is complete (or how it stopped)."""
    head = (
        f'{found.total_documents} documents have passages matching "{found.query}" '
        f"({found.total_passages} matching passages"
        + (", every matching document" if found.complete else ", STOPPED EARLY")
        + f"; full-text query {found.tsquery or '(none)'})."
    )
    if found.note:
        head += f" {found.note}"
    shown = len(found.documents)
    if found.next_cursor:
        head += f" Showing the first {shown} (most matches first); more pages follow (cursor {found.next_cursor})."
    if not found.documents:
        return head + (" Nothing matched: try other or fewer words, or match any." if found.tsquery else "")
    blocks = []
    for n, doc in enumerate(found.documents, start):
        best = doc.best
        where = doc.title or doc.filename
        if best.page is not None:
            where += f", page {best.page}"
        blocks.append(
            f"[{n}] {where} · {doc.matches} matching passage{'' if doc.matches == 1 else 's'} "
            f"(document_id {doc.document_id}, file {doc.filename})\n{best.content}"
        )
    return "\n\n".join([head, *blocks])
