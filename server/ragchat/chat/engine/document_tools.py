"""The chat's document tools beside `search_documents`: `find_documents` (every document that matches, for
"which documents…" questions), `read_document` (a document's text in order, paged) and `summarize_documents`
(a map-reduce summary or comparison of whole documents, chat/engine/summarize.py). Each runs as `tool_call` →
(`progress`…) → `tool_result`, numbers its passages after the turn's earlier ones, and leaves the text the
model reads in `ToolOutcome.message`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, cast
from uuid import UUID

from ragchat.chat.engine.llm_budget import MessageBudget
from ragchat.chat.engine.summarize import Summary, SummaryLimits, summarize
from ragchat.chat.engine.tools import ToolArgumentError, narrow_metadata
from ragchat.core.errors import BadRequest, NotFound
from ragchat.core.matches import DocumentFinder, DocumentMatches, MatchMode, MatchRequest, matches_text
from ragchat.core.principal import Principal
from ragchat.core.reading import DocumentReader
from ragchat.core.search import Confidence, SearchFilters, Timings
from ragchat.httpapi.search import passage_json
from ragchat.providers.llm.base import LLMProvider

FIND_TOOL_NAME = "find_documents"
FIND_PAGE_SIZE = 20  # documents the model sees (their best passages are numbered); the count covers them all
MAX_QUERY_CHARS = 500

FIND_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": FIND_TOOL_NAME,
        "description": (
            "List EVERY document containing the words, with match counts and each one's best passage. For "
            "'which/how many documents mention X'."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "the words, e.g. penalty clause",
                },
                "match": {
                    "type": "string",
                    "enum": ["all", "any"],
                    "description": "all (default) or any word",
                },
            },
            "required": ["query"],
        },
    },
}

READ_TOOL_NAME = "read_document"
SUMMARIZE_TOOL_NAME = "summarize_documents"
READ_MAX_SECTIONS = 40
MAX_SUMMARY_DOCUMENTS = 4

_IDS = {"type": "array", "items": {"type": "string"}}
READ_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": READ_TOOL_NAME,
        "description": ("Read a document's text in order, some sections at a time."),
        "parameters": {
            "type": "object",
            "properties": {
                "document_id": {"type": "string"},
                "start_section": {"type": "integer", "description": "default 0"},
            },
            "required": ["document_id"],
        },
    },
}
SUMMARIZE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": SUMMARIZE_TOOL_NAME,
        "description": (
            "Summarise or compare WHOLE documents, every part (for 'summarise this report', 'compare these "
            "two', 'list all obligations')."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "document_ids": {**_IDS, "description": "1 to 4 (default: the user's selection)"},
                "focus": {"type": "string", "description": "what the user wants"},
            },
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
    reader: DocumentReader | None = None  # read_document and summarize_documents need it, and the LLM
    llm: LLMProvider | None = None
    model: str = ""
    limits: SummaryLimits | None = None
    temperature: float | None = None
    budget: MessageBudget | None = None  # the message's LLM budget (llm_budget.py): summaries and their calls

    @property
    def schemas(self) -> list[dict[str, Any]]:
        return [FIND_TOOL, *([READ_TOOL, SUMMARIZE_TOOL] if self.whole_documents else [])]

    @property
    def names(self) -> set[str]:
        return {t["function"]["name"] for t in self.schemas}

    @property
    def whole_documents(self) -> bool:
        return self.reader is not None and self.llm is not None and self.limits is not None


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
    if name in (READ_TOOL_NAME, SUMMARIZE_TOOL_NAME):
        run = _read_events if name == READ_TOOL_NAME else _summary_events
        async with aclosing(run(tools, arguments, outcome)) as events:
            async for event in events:
                yield event
        return
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
    chunks = [passage_json(d.best) for d in found.documents]
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


def _ids(raw: Any, what: str) -> list[UUID]:
    values = [raw] if isinstance(raw, str) else raw
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ToolArgumentError(f"{what} is a list of document ids")
    out: list[UUID] = []
    for value in values:
        try:
            out.append(UUID(value))
        except ValueError:
            raise ToolArgumentError(
                f"{value[:60]!r} is not a document id: use the document_id of a result (find_documents lists them)"
            ) from None
    return list(dict.fromkeys(out))


def _allowed(tools: DocumentTools, ids: list[UUID]) -> list[UUID]:
    """The request's selection bounds what the model may open."""
    if tools.document_ids and any(i not in set(tools.document_ids) for i in ids):
        raise ToolArgumentError("only the documents the user selected can be read; omit document ids")
    return ids


def _result(outcome: ToolOutcome, name: str, chunks: list[dict[str, Any]], text: str, extra: dict[str, Any]) -> Event:
    outcome.chunks = chunks
    confidence = Confidence(
        label="high", percent=100, text=text, insufficient=False, best_similarity=None, insufficient_confidence=False
    )
    return "tool_result", {
        "id": outcome.call_id,
        "name": name,
        "chunks": chunks,
        "search_mode": "keyword",
        "reranked": False,
        "timings": Timings().model_dump(),
        "confidence": confidence.model_dump(),
        "rerank": None,
        **extra,
    }


async def _read_events(tools: DocumentTools, arguments: Any, outcome: ToolOutcome) -> AsyncGenerator[Event, None]:
    assert tools.reader is not None
    try:
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(f'{READ_TOOL_NAME} takes {{"document_id": "...", "start_section": 0}}')
        ids = _ids(arguments.get("document_id"), "document_id")
        if len(ids) != 1:
            raise ToolArgumentError(f'{READ_TOOL_NAME} reads one document: {{"document_id": "..."}}')
        [document_id] = _allowed(tools, ids)
        start = arguments.get("start_section") or 0
        if not isinstance(start, int) or isinstance(start, bool) or not 0 <= start < 10**7:
            raise ToolArgumentError("start_section is a section number from 0")
    except ToolArgumentError as exc:
        outcome.message = f"Error: {exc}"
        return
    yield "tool_call", {"id": outcome.call_id, "name": READ_TOOL_NAME, "arguments": dict(arguments)}
    try:
        doc = await tools.reader.read_sections(tools.principal, document_id, start=start, limit=READ_MAX_SECTIONS)
    except NotFound:
        outcome.message = f"Error: document {document_id} not found (or not yours to read)."
        yield _result(outcome, READ_TOOL_NAME, [], "Document not found", {})
        return
    budget = (tools.limits.budget if tools.limits else 3000) // 2  # half the window: room for the answer
    shown, used = [], 0
    for section in doc.sections:
        used += len(section.content) // 3 + 8
        if shown and used > budget:
            break
        shown.append(section)
    chunks = [
        {
            **sec.model_dump(),
            **{"document_id": str(doc.document_id), "filename": doc.filename, "title": doc.title},
            **{"score": 1.0, "score_kind": "similarity", "trace": {}},
        }
        for sec in shown
    ]
    blocks = []
    for n, sec in enumerate(shown, outcome.start):
        where = (f", page {sec.page}" if sec.page is not None else "") + (f", {sec.section}" if sec.section else "")
        blocks.append(f"[{n}] section {sec.chunk_index}{where}\n{sec.content}")
    last = shown[-1].chunk_index if shown else start - 1
    if last + 1 < doc.chunks_total:
        tail = f"(More follows: call {READ_TOOL_NAME} with start_section={last + 1}; {doc.chunks_total} in all.)"
    else:
        tail = "(End of the document.)"
    head = f"{doc.title} ({doc.filename}), sections {start}–{last} of {doc.chunks_total}:"
    if doc.status != "ready" or not shown:
        head = f"{doc.title}: no text at section {start} (status {doc.status}, {doc.chunks_total} sections)."
    outcome.message = "\n\n".join([head, *blocks]) + "\n\n---\n" + tail  # the trailer survives fitting
    yield _result(outcome, READ_TOOL_NAME, chunks, f"Read {len(shown)} sections", {})


async def _summary_events(tools: DocumentTools, arguments: Any, outcome: ToolOutcome) -> AsyncGenerator[Event, None]:
    assert tools.reader is not None and tools.llm is not None and tools.limits is not None
    try:
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(f'{SUMMARIZE_TOOL_NAME} takes {{"document_ids": ["..."]}}')
        raw = arguments.get("document_ids")
        ids = _allowed(tools, _ids(raw, "document_ids")) if raw else list(tools.document_ids or [])
        if not ids:
            raise ToolArgumentError("name the document_ids to summarise (find_documents or a search gives them)")
        if len(ids) > MAX_SUMMARY_DOCUMENTS:
            raise ToolArgumentError(f"at most {MAX_SUMMARY_DOCUMENTS} documents at once")
        focus = arguments.get("focus")
        focus = focus.strip()[:300] if isinstance(focus, str) and focus.strip() else None
    except ToolArgumentError as exc:
        outcome.message = f"Error: {exc}"
        return
    refused = None if tools.budget is None else await tools.budget.take_summary()
    if refused is not None:  # per message, per hour or running at once: the answer notes the limit
        outcome.message = refused
        return
    yield "tool_call", {"id": outcome.call_id, "name": SUMMARIZE_TOOL_NAME, "arguments": dict(arguments)}
    result = Summary()
    try:
        run = summarize(
            tools.llm, tools.model, tools.reader, tools.principal, ids, tools.limits, result,
            first_number=outcome.start, focus=focus, temperature=tools.temperature,
            charge=None if tools.budget is None else tools.budget.llm_calls,
        )  # fmt: skip
        async with aclosing(run) as events:
            async for event, data in events:
                yield event, {"id": outcome.call_id, **data}
    except NotFound as exc:
        outcome.message = f"Error: {exc.message}: only documents the user may read can be summarised."
        yield _result(outcome, SUMMARIZE_TOOL_NAME, [], "Document not found", {})
        return
    chunks = [p.passage() for p in result.parts]
    titles = list(dict.fromkeys(p.document.title for p in result.parts))
    what = "Comparing" if len(ids) > 1 else "Summary of"
    head = (
        f"{what} {', '.join(titles) or 'no readable document'}: {len(result.parts)} parts, each summarised and "
        "numbered [n] in reading order. Write the answer from them, citing the parts as [n]"
        + (": what the documents share and where they differ." if len(ids) > 1 else ".")
    )
    notes = " ".join(result.notes)
    if notes:
        head += f" Say this to the user: {notes}"
    outcome.message = "\n\n".join([head, *result.digest])
    text = f"Summarised {len(result.parts)} parts of {len(titles)} document{'s' if len(titles) != 1 else ''}"
    extra = {"summary": {"parts": len(result.parts), "llm_calls": result.llm_calls, "notes": result.notes}}
    yield _result(outcome, SUMMARIZE_TOOL_NAME, chunks, text, extra)
