"""GET /api/search/documents: every readable document that matches, paged (server/ragchat/core/matches.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from litestar import Response, get
from litestar.params import Parameter

from ragchat.core.audit import ReadAuditor
from ragchat.core.matches import MatchRequest
from ragchat.core.principal import Principal
from ragchat.core.search import SearchFilters
from ragchat.httpapi.http import error_responses
from ragchat.httpapi.search import DocumentMatches
from ragchat.policy.request import Ask, RequestPolicy
from ragchat.retrieval.exhaustive import MAX_PAGE_SIZE
from ragchat.retrieval.filters import parse_metadata_filters
from ragchat.retrieval.schemas import check_query
from ragchat.retrieval.search import Searcher


@get("/api/search/documents", responses=error_responses(404, 429))
async def search_documents_all(
    searcher: Searcher,
    principal: Principal,
    policy: RequestPolicy,
    audit: ReadAuditor,
    q: str = "",
    match: Annotated[
        Literal["all", "any"],
        Parameter(description='all: every word ("a phrase", or, -word: web-search syntax); any: one word is enough'),
    ] = "all",
    page_size: Annotated[int, Parameter(ge=1, le=MAX_PAGE_SIZE)] = 50,
    cursor: Annotated[str | None, Parameter(description="next_cursor of the previous page")] = None,
    limit: Annotated[
        int | None,
        Parameter(
            ge=1, description="matching passages to scan at most (default SEARCH_ALL_LIMIT; up to SEARCH_ALL_MAX_LIMIT)"
        ),
    ] = None,
    document_ids: Annotated[list[UUID] | None, Parameter(query="document_ids")] = None,
    collection_ids: Annotated[list[UUID] | None, Parameter(query="collection_ids")] = None,
    filter_: Annotated[
        list[str] | None, Parameter(query="filter", description="document metadata key=value, repeatable")
    ] = None,
) -> Response[DocumentMatches]:
    """Every document you may read with a passage containing the query's words (full-text, stemmed), with how
    many of its passages match and the best one, most matches first. Bounded by `limit` matching passages:
    `complete` is false (and `note` says so) when the scan stopped there."""
    check_query(q)
    ask = Ask(document_ids=document_ids, collection_ids=collection_ids, charge="search")
    await policy.check(principal, ask)  # an id the caller cannot read: 404, as on every door
    filters = SearchFilters(
        document_ids=document_ids or None,
        collection_ids=collection_ids or None,
        metadata=parse_metadata_filters(filter_),
    )
    request = MatchRequest(
        query=q,
        match=match,
        page_size=page_size,
        cursor=cursor,
        limit=limit,
        filters=filters if filters.active else None,
    )
    body = DocumentMatches.of(await searcher.find_documents(request, principal=principal))
    await audit.record_read(principal, "search_documents", [d.document_id for d in body.documents])
    return Response(body, headers={"Cache-Control": "private, no-store", "Vary": "Cookie, Authorization"})


def exhaustive_handlers() -> list[Any]:
    return [search_documents_all]
