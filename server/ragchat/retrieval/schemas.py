"""The body of POST /api/search, and the checks the GET and the POST share."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ragchat.core.errors import BadRequest
from ragchat.core.schemas import Flag
from ragchat.core.search import SearchFilters
from ragchat.retrieval.filters import MAX_FILTER_KEYS, check_metadata_filters, location_sql

MAX_SEARCH_QUERY_CHARS = 2000  # GET's `q` and POST's `query`
MAX_TOP_K = 100  # GET's `limit`
SEARCH_BODY_BYTES = 256 * 1024
MAX_FILTER_IDS = 1000
MAX_METADATA_KEYS = MAX_FILTER_KEYS
MAX_METADATA_VALUES = 100
MAX_FACET_KEYS = 20

FilterText = Annotated[str, StringConstraints(min_length=1, max_length=1000)]
MetadataValue = FilterText | Annotated[list[FilterText], Field(min_length=1, max_length=MAX_METADATA_VALUES)]


class SearchBodyFilters(BaseModel):
    """Narrow a search: documents, collections, metadata key = value (or one of several values)."""

    model_config = ConfigDict(extra="forbid")

    document_ids: list[UUID] | None = Field(default=None, max_length=MAX_FILTER_IDS)
    collection_ids: list[UUID] | None = Field(default=None, max_length=MAX_FILTER_IDS)
    metadata: dict[FilterText, MetadataValue] | None = Field(
        default=None,
        max_length=MAX_METADATA_KEYS,
        description='{"subject": ["Polity", "History"], "year": "2024"}: one of a key\'s values (OR), every key (AND)',
    )
    location: dict[FilterText, FilterText] | None = Field(
        default=None, max_length=8, description='sheet, slide, chapter, row, t: {"sheet": "Q1", "row": "12"}'
    )

    def to_filters(self) -> SearchFilters:
        metadata = {k: list(dict.fromkeys([v] if isinstance(v, str) else v)) for k, v in (self.metadata or {}).items()}
        if self.location:
            location_sql(self.location, "location")  # a bad key or number is a 400 before any search runs
        return SearchFilters(
            document_ids=self.document_ids or None,
            collection_ids=self.collection_ids or None,
            metadata=check_metadata_filters(metadata) or None,
            location=self.location or None,
        )


class SearchBody(BaseModel):
    """POST /api/search: the GET's parameters as JSON; the response is the same."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(description=f"at most {MAX_SEARCH_QUERY_CHARS} characters")
    top_k: int = Field(default=10, ge=1, le=MAX_TOP_K, description="the GET's `limit`")
    filters: SearchBodyFilters | None = None
    mode: str | None = Field(
        default=None, description="vector, keyword or hybrid (default: your preference, else SEARCH_MODE)"
    )
    rerank: Flag | None = Field(default=None, description="LLM rerank (default: your preference, else RERANK_ENABLED)")
    expansion: str | None = Field(
        default=None, max_length=20, description="query expansion: off, keywords or hyde (default: QUERY_EXPANSION)"
    )
    facets: list[FilterText] | None = Field(
        default=None, max_length=MAX_FACET_KEYS, description="the metadata keys to count (default: the most used)"
    )


def check_query(query: str) -> str:
    """The same 400s for the GET's `q` and the POST's `query`: no NUL, not too long."""
    if "\x00" in query:
        raise BadRequest("the query contains a NUL character")
    if len(query) > MAX_SEARCH_QUERY_CHARS:
        raise BadRequest(f"query is too long ({len(query)} characters; at most {MAX_SEARCH_QUERY_CHARS})")
    return query
