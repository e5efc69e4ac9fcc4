"""GET and POST /api/search: the orchestrator's result with chunks and per-document aggregation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Annotated, Any
from uuid import UUID

from litestar import Response, get, post
from litestar.params import Parameter

from ragchat.core.audit import ReadAuditor
from ragchat.core.errors import BadRequest
from ragchat.core.options import Asked
from ragchat.core.principal import Principal
from ragchat.core.search import SearchFilters, SearchOptions, SearchResult
from ragchat.httpapi.http import error_responses
from ragchat.httpapi.search import SearchResponse, search_response
from ragchat.policy.request import Ask, RequestPolicy
from ragchat.providers.llm.speed import ModelSpeed
from ragchat.retrieval.facets import facet_counts
from ragchat.retrieval.filters import parse_location_filters, parse_metadata_filters
from ragchat.retrieval.rerank import LLMReranker
from ragchat.retrieval.rerank_cost import RerankCostOut, rerank_cost
from ragchat.retrieval.schemas import MAX_FACET_KEYS, MAX_TOP_K, SEARCH_BODY_BYTES, SearchBody, check_query
from ragchat.retrieval.search import Searcher


@get("/api/search", responses=error_responses(404, 429))
async def search(
    searcher: Searcher,
    principal: Principal,
    policy: RequestPolicy,
    audit: ReadAuditor,
    q: str = "",
    limit: Annotated[int, Parameter(ge=1, le=MAX_TOP_K)] = 10,
    mode: str | None = None,
    rerank: bool | None = None,
    expansion: Annotated[
        str | None, Parameter(max_length=20, description="query expansion: off, keywords or hyde (QUERY_EXPANSION)")
    ] = None,
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
    filters = SearchFilters(
        document_ids=document_ids or None,
        collection_ids=collection_ids or None,
        metadata=parse_metadata_filters(filter_),
        location=parse_location_filters(location),
    )
    asked = Asked(mode=mode, rerank=rerank, limit=limit, filters=filters, expansion=expansion)
    options = await _checked(policy, principal, asked)
    search = searcher.search(q, principal=principal, options=options)
    return await _audited(audit, principal, await _with_facets(searcher, principal, search, filters, facets))


@post(
    "/api/search",
    status_code=200,
    request_max_body_size=SEARCH_BODY_BYTES,
    responses=error_responses(404, 413, 429),
)
async def search_post(
    searcher: Searcher, principal: Principal, policy: RequestPolicy, audit: ReadAuditor, data: SearchBody
) -> Response[SearchResponse]:
    """The GET's search with a JSON body: `{query, top_k, filters: {document_ids, collection_ids, metadata:
    {key: value or [values]}, location}, mode, rerank, facets}`; the same response."""
    query = check_query(data.query)
    filters = data.filters.to_filters() if data.filters else None
    asked = Asked(mode=data.mode, rerank=data.rerank, limit=data.top_k, filters=filters, expansion=data.expansion)
    options = await _checked(policy, principal, asked)
    search = searcher.search(query, principal=principal, options=options)
    return await _audited(audit, principal, await _with_facets(searcher, principal, search, filters, data.facets))


async def _checked(policy: RequestPolicy, principal: Principal, asked: Asked) -> SearchOptions:
    """The search's options from the one request policy: an id the caller cannot read is a 404, as on every
    door; the search rate charged."""
    filters = asked.filters
    ask = Ask(
        search=asked,
        document_ids=filters.document_ids if filters else None,
        collection_ids=filters.collection_ids if filters else None,
        charge="search",
    )
    checked = await policy.check(principal, ask)
    assert checked.options is not None
    return checked.options


async def _with_facets(
    searcher: Searcher,
    principal: Principal,
    search: Awaitable[SearchResult],
    filters: SearchFilters | None,
    keys: list[str] | None,
) -> Response[SearchResponse]:
    """The search's response with the facet counts of its scope (server/ragchat/retrieval/facets.py), counted on another
    connection while the search runs, so they add no latency of their own."""
    facets = asyncio.ensure_future(
        searcher.reads.run(principal.user_id, lambda pool: facet_counts(pool, principal, filters, keys))
    )
    try:
        body = search_response(await search)
    except BaseException:
        facets.cancel()
        raise
    body.facets = await facets
    return _private(body)


async def _audited(
    audit: ReadAuditor, principal: Principal, response: Response[SearchResponse]
) -> Response[SearchResponse]:
    """The hits' documents recorded as read (AUDIT_READS: others' documents by default), then the response."""
    await audit.record_read(principal, "search", [d.document_id for d in response.content.documents])
    return response


def _private(body: SearchResponse) -> Response[SearchResponse]:
    # Not cacheable: a browser's cache is keyed on the URL, not the user, and shares change what is readable.
    return Response(body, headers={"Cache-Control": "private, no-store", "Vary": "Cookie, Authorization"})


@get("/api/search/rerank-cost")
async def get_rerank_cost(searcher: Searcher, principal: Principal, chat_search_limit: int) -> RerankCostOut:
    """What LLM rerank would cost one chat search at the rerank model's measured speed (the settings page)."""
    del principal  # any signed-in user may ask: it reveals only the server's speed
    reranker = searcher.reranker
    model, speed = (
        (reranker.model, reranker.llm.speed.get(reranker.model))
        if isinstance(reranker, LLMReranker)
        else (None, ModelSpeed())
    )
    cost = rerank_cost(speed, searcher.settings, chat_search_limit)
    return RerankCostOut(
        provider=searcher.settings.rerank_provider,
        model=model,
        method=cost.method,
        candidates=cost.candidates,
        calls=cost.calls,
        seconds=cost.seconds,
        prompt_tokens_per_s=round(speed.prompt_tps, 1) if speed.prompt_tps else None,
        measured_calls=speed.samples,
    )


def search_handlers() -> list[Any]:
    return [search, search_post, get_rerank_cost]
