"""The `search_documents` tool: its schema for the model, argument checks, and the search it runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from server.core.principal import Principal
from server.core.search import SearchFilters, SearchResult, SearchService

TOOL_NAME = "search_documents"
MAX_QUERY_CHARS = 1000

SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Search the user's uploaded documents (papers, manuals, notes, reports) and return the most relevant "
            "passages, numbered for citation. Use it for ANY question about the user's documents: their content, "
            "facts, names, numbers, definitions or summaries. Call it before answering such questions."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What to look for, as a short natural-language question or keywords.",
                },
            },
            "required": ["query"],
        },
    },
}


class ToolArgumentError(ValueError):
    """A tool call the model got wrong; the message goes back to the model as the tool's answer."""


@dataclass(frozen=True)
class SearchArgs:
    query: str
    document_ids: list[UUID] | None


def _parse_ids(raw: Any) -> list[UUID] | None:
    """Document ids a model passed (the schema no longer offers them): real UUIDs are kept, anything else
    (small models invent `["document1", "file1.pdf"]`) is ignored rather than costing the model a turn."""
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return None
    ids: list[UUID] = []
    for item in raw:
        try:
            ids.append(UUID(str(item)))
        except ValueError:
            continue
    return ids or None


def parse_search_args(name: str, arguments: Any, allowed: list[UUID] | None) -> SearchArgs:
    """Validate one tool call. `allowed` (the request's document_ids) bounds what the model may search."""
    if name != TOOL_NAME:
        raise ToolArgumentError(f"there is no tool named {name!r}; the only tool is {TOOL_NAME}(query, document_ids?)")
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(f'{TOOL_NAME} takes a JSON object like {{"query": "..."}}')
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolArgumentError(f'{TOOL_NAME} needs a non-empty string "query", e.g. {{"query": "warranty period"}}')
    requested = _parse_ids(arguments.get("document_ids"))
    if allowed and requested:
        narrowed = [i for i in requested if i in set(allowed)]
        if not narrowed:
            raise ToolArgumentError(
                "none of those document_ids are among the documents the user selected; omit document_ids"
            )
        ids: list[UUID] | None = narrowed
    else:
        ids = requested or allowed or None
    return SearchArgs(query=query.strip()[:MAX_QUERY_CHARS], document_ids=ids)


async def run_search(
    search: SearchService,
    principal: Principal,
    query: str,
    *,
    limit: int,
    document_ids: list[UUID] | None,
    mode: str | None,
    rerank: bool | None,
    collection_ids: list[UUID] | None = None,
    metadata: dict[str, str] | None = None,
) -> SearchResult:
    filters = SearchFilters(document_ids=document_ids, collection_ids=collection_ids, metadata=metadata)
    return await search.search(
        query, principal=principal, limit=limit, mode=mode, filters=filters if filters.active else None, rerank=rerank
    )


def tool_result_payload(call_id: str, result: SearchResult) -> dict[str, Any]:
    """The `tool_result` event (also stored on the assistant message, so citations survive a reload)."""
    return {
        "id": call_id,
        "name": TOOL_NAME,
        "chunks": [c.model_dump(mode="json") for c in result.chunks],
        "search_mode": result.mode,
        "reranked": result.reranked,
        "timings": result.timings.model_dump(),
        "confidence": result.confidence.model_dump(),
        "rerank": result.rerank.model_dump(),
    }
