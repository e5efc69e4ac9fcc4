"""The `search_documents` tool: its schema for the model, argument checks, and the search it runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from ragchat.core.principal import Principal
from ragchat.core.search import SearchFilters, SearchOptions, SearchResult, SearchService
from ragchat.httpapi.search import passage_json

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
                "filters": {
                    "type": "object",
                    "description": (
                        "Optional. Only when the user names a document property, e.g. "
                        '{"subject": ["Polity", "History"], "year": "2024"}: a document must have one of the '
                        "values of every key."
                    ),
                    "additionalProperties": {
                        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
                    },
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
    metadata: dict[str, list[str]] | None = None


MAX_TOOL_FILTER_KEYS = 8
MAX_TOOL_FILTER_VALUES = 20


def _parse_filters(raw: Any) -> dict[str, list[str]] | None:
    """The model's `filters`: key → a string or a list of strings (OR); other shapes are an error it can fix."""
    if raw is None or raw == {}:
        return None
    usage = 'filters is an object of strings or lists of strings, e.g. {"subject": ["Polity", "History"]}'
    if not isinstance(raw, Mapping) or len(raw) > MAX_TOOL_FILTER_KEYS:
        raise ToolArgumentError(f"{usage} (at most {MAX_TOOL_FILTER_KEYS} keys)")
    out: dict[str, list[str]] = {}
    for key, value in raw.items():
        values = [value] if isinstance(value, str) else value
        if (
            not isinstance(values, list)
            or not 0 < len(values) <= MAX_TOOL_FILTER_VALUES
            or not all(isinstance(v, str) and 0 < len(v) <= 500 and "\x00" not in v for v in values)
            or not 0 < len(str(key)) <= 64
        ):
            raise ToolArgumentError(usage)
        out[str(key)] = list(dict.fromkeys(values))
    return out


def narrow_metadata(
    bound: dict[str, list[str]] | None, asked: dict[str, list[str]] | None
) -> dict[str, list[str]] | None:
    """The request's metadata filter (`bound`) narrowed by the model's (`asked`): never wider. A key in both
    keeps the values in both (the request's when none are)."""
    if not asked:
        return bound
    merged = dict(asked)
    for key, values in (bound or {}).items():
        both = [v for v in values if v in set(asked.get(key, values))]
        merged[key] = both or values
    return merged


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
    metadata = _parse_filters(arguments.get("filters"))
    return SearchArgs(query=query.strip()[:MAX_QUERY_CHARS], document_ids=ids, metadata=metadata)


async def run_search(
    search: SearchService,
    principal: Principal,
    query: str,
    options: SearchOptions,
    *,
    document_ids: list[UUID] | None,
    collection_ids: list[UUID] | None = None,
    metadata: dict[str, list[str]] | None = None,
) -> SearchResult:
    filters = SearchFilters(document_ids=document_ids, collection_ids=collection_ids, metadata=metadata)
    return await search.search(query, principal=principal, options=options.with_filters(filters))


def tool_result_payload(call_id: str, result: SearchResult) -> dict[str, Any]:
    """The `tool_result` event (also stored on the assistant message, so citations survive a reload)."""
    return {
        "id": call_id,
        "name": TOOL_NAME,
        "chunks": [passage_json(c) for c in result.chunks],
        "search_mode": result.mode,
        "reranked": result.reranked,
        "timings": result.timings.model_dump(),
        "confidence": result.confidence.model_dump(),
        "rerank": result.rerank.model_dump(),
    }
