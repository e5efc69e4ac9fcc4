"""GET /api/search: the orchestrator's result with chunks and per-document aggregation."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from litestar import Response, get
from litestar.params import Parameter

from server.core.principal import Principal
from server.core.search import SearchFilters
from server.retrieval.filters import parse_metadata_filters
from server.retrieval.search import Searcher


@get("/api/search")
async def search(
    searcher: Searcher,
    principal: Principal,
    q: str = "",
    limit: Annotated[int, Parameter(ge=1, le=100)] = 10,
    mode: str | None = None,
    rerank: bool | None = None,
    document_ids: Annotated[list[UUID] | None, Parameter(query="document_ids")] = None,
    filter_: Annotated[list[str] | None, Parameter(query="filter")] = None,
) -> Response[dict[str, Any]]:
    """Hybrid/vector/keyword search over the caller's documents."""
    filters = SearchFilters(document_ids=document_ids or None, metadata=parse_metadata_filters(filter_))
    result = await searcher.search(q, principal=principal, limit=limit, mode=mode, filters=filters, rerank=rerank)
    return Response(result.to_api(), headers={"Cache-Control": "private, max-age=60"})


def search_handlers() -> list[Any]:
    return [search]
