"""GET and POST /api/search: the orchestrator's result with chunks and per-document aggregation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Annotated, Any
from uuid import UUID

from litestar import Response, get, post
from litestar.params import Parameter

from ragchat.core.errors import BadRequest
from ragchat.core.http import error_responses
from ragchat.core.principal import Principal
from ragchat.core.search import SearchFilters, SearchResponse, SearchResult
from ragchat.db.ratelimit import RateLimiter
from ragchat.retrieval.facets import facet_counts
from ragchat.retrieval.filters import parse_location_filters, parse_metadata_filters
from ragchat.retrieval.schemas import MAX_FACET_KEYS, MAX_TOP_K, SEARCH_BODY_BYTES, SearchBody, check_query
from ragchat.retrieval.search import Searcher
from ragchat.settings import Settings


async def charge(
    settings: Settings, limiter: RateLimiter, principal: Principal, limit: int, rerank: bool | None
) -> None:
    """Per-user search rate, and the cost cap: a rerank scores `limit × RERANK_CANDIDATES_FACTOR` passages with
    the LLM, so that product is capped per request and counted per minute."""
    await limiter.hit(f"search:{principal.user_id}", settings.rate_search_per_min, what="searches")
    if not (settings.rerank_enabled if rerank is None else rerank):
        return
    candidates = limit * max(1, settings.rerank_candidates_factor)
    if candidates > settings.rerank_max_candidates:
        most = max(1, settings.rerank_max_candidates // max(1, settings.rerank_candidates_factor))
        raise BadRequest(
            f"rerank scores limit × {settings.rerank_candidates_factor} passages with the LLM: with rerank the "
            f"limit is at most {most} (RERANK_MAX_CANDIDATES={settings.rerank_max_candidates})"
        )
    await limiter.hit(
        f"rerank:{principal.user_id}",
        settings.rate_rerank_candidates_per_min,
        cost=candidates,
        what="reranked passages",
    )


@get("/api/search", responses=error_responses(429))
async def search(
    searcher: Searcher,
    principal: Principal,
    limiter: RateLimiter,
    q: str = "",
    limit: Annotated[int, Parameter(ge=1, le=MAX_TOP_K)] = 10,
    mode: str | None = None,
    rerank: bool | None = None,
    document_ids: Annotated[list[UUID] | None, Parameter(query="document_ids")] = None,
    collection_ids: Annotated[list[UUID] | None, Parameter(query="collection_ids")] = None,
    filter_: Annotated[
        list[str] | None,
        Parameter(
            query="filter",
            description="document metadata key=value, repeatable: values of one key are OR, keys are AND "
            "(filter=subject=Polity&filter=subject=History&filter=year=2024)",
        ),
    ] = None,
    facets: Annotated[
        list[str] | None,
        Parameter(
            query="facets", description=f"metadata keys to count, at most {MAX_FACET_KEYS} (default: the most used)"
        ),
    ] = None,
    location: Annotated[
        list[str] | None,
        Parameter(
            query="location",
            description="key=value, repeatable: sheet=Q1, slide=3, chapter=<title>, row=12 (in the passage's "
            "rows), t=751 (seconds, in the passage's time span)",
        ),
    ] = None,
) -> Response[SearchResponse]:
    """Hybrid/vector/keyword search over what the caller may read (their documents and shared collections)."""
    check_query(q)
    if facets and len(facets) > MAX_FACET_KEYS:
        raise BadRequest(f"at most {MAX_FACET_KEYS} facets (got {len(facets)})")
    await charge(searcher.settings, limiter, principal, limit, rerank)
    filters = SearchFilters(
        document_ids=document_ids or None,
        collection_ids=collection_ids or None,
        metadata=parse_metadata_filters(filter_),
        location=parse_location_filters(location),
    )
    search = searcher.search(q, principal=principal, limit=limit, mode=mode, filters=filters, rerank=rerank)
    return await _with_facets(searcher, principal, search, filters, facets)


@post(
    "/api/search",
    status_code=200,
    request_max_body_size=SEARCH_BODY_BYTES,
    responses=error_responses(413, 429),
)
async def search_post(
    searcher: Searcher, principal: Principal, limiter: RateLimiter, data: SearchBody
) -> Response[SearchResponse]:
    """The GET's search with a JSON body: `{query, top_k, filters: {document_ids, collection_ids, metadata:
    {key: value or [values]}, location}, mode, rerank, facets}`; the same response."""
    query = check_query(data.query)
    filters = data.filters.to_filters() if data.filters else None
    await charge(searcher.settings, limiter, principal, data.top_k, data.rerank)
    search = searcher.search(
        query,
        principal=principal,
        limit=data.top_k,
        mode=data.mode,
        filters=filters if filters and filters.active else None,
        rerank=data.rerank,
    )
    return await _with_facets(searcher, principal, search, filters, data.facets)


async def _with_facets(
    searcher: Searcher,
    principal: Principal,
    search: Awaitable[SearchResult],
    filters: SearchFilters | None,
    keys: list[str] | None,
) -> Response[SearchResponse]:
    """The search's response with the facet counts of its scope (server/retrieval/facets.py), counted on another
    connection while the search runs, so they add no latency of their own."""
    facets = asyncio.ensure_future(facet_counts(searcher.pool, principal, filters, keys))
    try:
        body = (await search).to_api()
    except BaseException:
        facets.cancel()
        raise
    body.facets = await facets
    return _private(body)


def _private(body: SearchResponse) -> Response[SearchResponse]:
    # Not cacheable: a browser's cache is keyed on the URL, not the user, and shares change what is readable.
    return Response(body, headers={"Cache-Control": "private, no-store", "Vary": "Cookie, Authorization"})


def search_handlers() -> list[Any]:
    return [search, search_post]
