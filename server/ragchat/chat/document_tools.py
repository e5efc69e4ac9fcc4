"""The chat's document tools beside `search_documents`: `find_documents` (every document that matches, for
"which documents…" questions). Each runs as `tool_call` → (`progress`…) → `tool_result`, numbers its
passages after the turn's earlier ones, and leaves the text the model reads in `ToolOutcome.message`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from uuid import UUID

from ragchat.chat.tools import ToolArgumentError, narrow_metadata
from ragchat.core.errors import BadRequest
from ragchat.core.matches import DocumentFinder, DocumentMatches, MatchMode, MatchRequest, matches_text
from ragchat.core.principal import Principal
from ragchat.core.search import Confidence, SearchFilters, Timings

FIND_TOOL_NAME = "find_documents"
FIND_PAGE_SIZE = 20  # documents the model sees (their best passages are numbered); the count covers them all
MAX_QUERY_CHARS = 500

FIND_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": FIND_TOOL_NAME,
        "description": (
            "List EVERY document that contains some words, with how many passages match in each and the best "
            "passage of each (numbered for citation). Use it for questions like 'which documents mention X', "
            "'how many of my documents talk about X', 'list all files about X'. Not for questions about "
            "what a document says: use search_documents for those."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": 'The words a document must contain, e.g. "penalty clause" (every word must appear).',
                },
                "match": {
                    "type": "string",
                    "enum": ["all", "any"],
                    "description": "all (default): every word; any: at least one of the words.",
                },
            },
            "required": ["query"],
        },
    },
}

Event = tuple[str, dict[str, Any]]


@dataclass
class DocumentTools:
    """What the document tools need, per chat turn: the finder and the request's bounds."""

    finder: DocumentFinder
    principal: Principal
    document_ids: list[UUID] | None = None
    collection_ids: list[UUID] | None = None
    metadata: dict[str, list[str]] | None = None

    @property
    def schemas(self) -> list[dict[str, Any]]:
        return [FIND_TOOL]

    @property
    def names(self) -> set[str]:
        return {FIND_TOOL_NAME}


@dataclass
class ToolOutcome:
    """In: the call's id and the number of its first passage. Out: the text the model reads."""

    call_id: str
    start: int
    message: str = ""
    chunks: list[dict[str, Any]] = field(default_factory=list)


def parse_find_args(arguments: Any) -> tuple[str, MatchMode]:
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(f'{FIND_TOOL_NAME} takes a JSON object like {{"query": "penalty clause"}}')
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip() or "\x00" in query:
        raise ToolArgumentError(f'{FIND_TOOL_NAME} needs a non-empty string "query", e.g. {{"query": "penalty"}}')
    match = arguments.get("match") or "all"
    if match not in ("all", "any"):
        raise ToolArgumentError('match is "all" or "any"')
    return query.strip()[:MAX_QUERY_CHARS], cast(MatchMode, match)


def confidence_of(found: DocumentMatches) -> Confidence:
    """Full-text matches are exact: the page shows how many documents, not a similarity tier."""
    if not found.documents:
        return Confidence(
            label="insufficient",
            percent=0,
            text="No document contains these words",
            insufficient=True,
            message="Try other or fewer words.",
            best_similarity=None,
            insufficient_confidence=True,
        )
    complete = "" if found.complete else " (stopped early)"
    return Confidence(
        label="high",
        percent=100,
        text=f"{found.total_documents} documents contain these words{complete}",
        insufficient=False,
        message=found.note,
        best_similarity=None,
        insufficient_confidence=False,
    )


async def run_document_tool(
    tools: DocumentTools, name: str, arguments: Any, outcome: ToolOutcome
) -> AsyncGenerator[Event, None]:
    """`tool_call`, the tool's work, `tool_result`; a bad call leaves only `outcome.message` ("Error: …")."""
    try:
        query, match = parse_find_args(arguments)
    except ToolArgumentError as exc:
        outcome.message = f"Error: {exc}"
        return
    yield "tool_call", {"id": outcome.call_id, "name": name, "arguments": dict(arguments)}
    filters = SearchFilters(
        document_ids=tools.document_ids,
        collection_ids=tools.collection_ids,
        metadata=narrow_metadata(tools.metadata, None),
    )
    scope = filters if filters.active else None
    request = MatchRequest(query=query, match=match, page_size=FIND_PAGE_SIZE, filters=scope)
    try:
        found = await tools.finder.find_documents(request, principal=tools.principal)
    except BadRequest as exc:
        found = DocumentMatches(
            query=query, match="all", tsquery="", documents=[], total_documents=0, total_passages=0,
            complete=True, limit=0, max_limit=0, note=exc.message, timing_ms=0.0,
        )  # fmt: skip
    outcome.message = matches_text(found, outcome.start)
    chunks = [d.best.model_dump(mode="json") for d in found.documents]
    outcome.chunks = chunks
    yield (
        "tool_result",
        {
            "id": outcome.call_id,
            "name": name,
            "chunks": chunks,
            "search_mode": "keyword",
            "reranked": False,
            "timings": Timings(keyword_ms=found.timing_ms, total_ms=found.timing_ms).model_dump(),
            "confidence": confidence_of(found).model_dump(),
            "rerank": None,
            "documents": {
                "total_documents": found.total_documents,
                "total_passages": found.total_passages,
                "complete": found.complete,
                "note": found.note,
                "matches": [d.matches for d in found.documents],
                "more": found.next_cursor is not None,
            },
        },
    )
