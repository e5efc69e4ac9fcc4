"""What the MCP tools do, as plain functions of the caller (runtime + principal) and their arguments.

Every function raises `RagchatError`s with messages meant for people (and models); `ragchat.mcp.server` turns
them into tool errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from ragchat.chat.engine.answer import Answer, AnswerRequest
from ragchat.chat.engine.faults import as_http_error
from ragchat.chat.engine.verify import footnotes
from ragchat.core.errors import BadRequest
from ragchat.core.matches import MatchMode, MatchRequest
from ragchat.core.options import Asked
from ragchat.core.principal import Principal
from ragchat.core.search import SearchFilters, metadata_as_lists
from ragchat.httpapi.search import DocumentMatches
from ragchat.mcp.models import AskOutput, DocumentInfo, DocumentList, SearchOutput, Source
from ragchat.policy.request import Ask, Charge, Checked
from ragchat.retrieval.filters import check_metadata_filters
from ragchat.runtime import Runtime

MAX_QUERY_CHARS = 2000
READ_MAX_CHUNKS = 50
READ_MAX_CHARS = 40_000


@dataclass(frozen=True)
class Caller:
    """Who calls a tool and with what. `limited`: per-user rate limits apply (HTTP, like the HTTP API; a local
    stdio server, like the CLI, has none)."""

    runtime: Runtime
    principal: Principal
    limited: bool = False


def check_query(query: str, what: str = "query") -> str:
    text = (query or "").strip()
    if not text:
        raise BadRequest(f"the {what} is empty: say what to look for")
    if len(text) > MAX_QUERY_CHARS:
        raise BadRequest(f"the {what} is too long ({len(text)} characters; at most {MAX_QUERY_CHARS})")
    return text


async def checked(
    caller: Caller,
    *,
    charge: Charge,
    search: Asked | None = None,
    document_ids: Sequence[UUID] | None = None,
    collection_ids: Sequence[UUID] | None = None,
    default_limit: int | None = None,
) -> Checked:
    """The request policy's answer, as for an HTTP request: unknown (or unreadable) document or collection ids are
    an error, not silently no results; the rates apply only to a `limited` caller (HTTP)."""
    ask = Ask(
        search=search,
        document_ids=document_ids,
        collection_ids=collection_ids,
        default_limit=default_limit,
        charge=charge if caller.limited else "none",
    )
    return await caller.runtime.policy.check(caller.principal, ask)


async def search_documents(
    caller: Caller,
    query: str,
    *,
    mode: str | None = None,
    limit: int = 8,
    document_ids: list[UUID] | None = None,
    filters: dict[str, str | list[str]] | None = None,
    collection_ids: list[UUID] | None = None,
    rerank: bool | None = None,
) -> SearchOutput:
    text = check_query(query)
    rt = caller.runtime
    scope = SearchFilters(
        document_ids=document_ids or None,
        metadata=check_metadata_filters(metadata_as_lists(filters) or {}, "filters") or None,
        collection_ids=collection_ids or None,
    )
    asked = Asked(mode=mode, rerank=rerank, limit=limit, filters=scope)
    done = await checked(
        caller, charge="search", search=asked, document_ids=document_ids, collection_ids=collection_ids
    )
    assert done.options is not None
    result = await rt.searcher.search(text, principal=caller.principal, options=done.options)
    read = [chunk.document_id for chunk in result.chunks]
    await rt.audit.record_read(caller.principal, "mcp.search_documents", read)
    return SearchOutput.of(result)


async def find_documents(
    caller: Caller,
    query: str,
    *,
    match: MatchMode = "all",
    page_size: int = 50,
    cursor: str | None = None,
    limit: int | None = None,
    document_ids: list[UUID] | None = None,
    collection_ids: list[UUID] | None = None,
) -> DocumentMatches:
    """Every readable document with a matching passage (GET /api/search/documents), one page."""
    text = check_query(query)
    rt = caller.runtime
    await checked(caller, charge="search", document_ids=document_ids, collection_ids=collection_ids)
    scope = SearchFilters(document_ids=document_ids or None, collection_ids=collection_ids or None)
    request = MatchRequest(
        query=text,
        match=match,
        page_size=page_size,
        cursor=cursor,
        limit=limit,
        filters=scope if scope.active else None,
    )
    found = DocumentMatches.of(await rt.searcher.find_documents(request, principal=caller.principal))
    await rt.audit.record_read(caller.principal, "mcp.find_documents", [d.document_id for d in found.documents])
    return found


async def list_documents(caller: Caller, query: str | None = None, limit: int = 100) -> DocumentList:
    rows = await caller.runtime.documents.catalog.list(caller.principal)
    needle = (query or "").strip().casefold()
    if needle:
        rows = [r for r in rows if needle in r["title"].casefold() or needle in r["filename"].casefold()]
    return DocumentList(documents=[DocumentInfo.of(r) for r in rows[:limit]], total=len(rows))


async def read_document(
    caller: Caller,
    document_id: UUID,
    *,
    page: int | None = None,
    start_chunk: int | None = None,
    end_chunk: int | None = None,
) -> str:
    """The document's text, chunk by chunk, at most READ_MAX_CHUNKS chunks / READ_MAX_CHARS characters a call;
    the last line says how to read on."""
    start = max(0, start_chunk or 0)
    if end_chunk is not None and end_chunk < start:
        raise BadRequest(f"end_chunk ({end_chunk}) is before start_chunk ({start})")
    document, rows = await caller.runtime.documents.catalog.read_chunks(
        caller.principal, document_id, start=start, end=end_chunk, page=page, limit=READ_MAX_CHUNKS + 1
    )
    total = int(document["chunks_total"] or 0)
    title = f"# {document['title']} ({document['filename']}), document_id {document['id']}, {total} chunks"
    if document["status"] != "ready":
        reason = f": {document['error']}" if document["error"] else ""
        return f"{title}\nNot readable: its status is {document['status']}{reason}."
    if not rows:
        asked = f"page {page}" if page is not None else f"chunk {start}"
        return f"{title}\nNo text at {asked} (chunk indexes run from 0 to {max(total - 1, 0)})."
    await caller.runtime.audit.record_read(
        caller.principal, "mcp.read_document", [document_id], owner_id=document["owner_id"]
    )
    shown = rows[:1]
    size = len(rows[0]["content"])
    for row in rows[1:READ_MAX_CHUNKS]:
        size += len(row["content"])
        if size > READ_MAX_CHARS:
            break
        shown.append(row)
    blocks = [f"[chunk {r['chunk_index']}{_located(r)}]\n{r['content']}" for r in shown]
    last = int(shown[-1]["chunk_index"])
    if len(shown) < len(rows):
        again = f"start_chunk={last + 1}" + (f", end_chunk={end_chunk}" if end_chunk is not None else "")
        again += f", page={page}" if page is not None else ""
        tail = f"(More follows: call read_document again with {again}.)"
    else:
        tail = "(End of the requested text.)" if last < total - 1 or page is not None else "(End of the document.)"
    first = int(shown[0]["chunk_index"])
    span = f"chunk {first}" if first == last else f"chunks {first}–{last}"
    return "\n\n".join([f"{title}; {span}:", *blocks, tail])


async def summarize_documents(
    caller: Caller, document_ids: list[UUID], *, request: str | None = None, compare: bool = False
) -> AskOutput:
    """The Summarise / Compare action: a map-reduce over the whole documents, then the answer citing parts."""
    ids = list(dict.fromkeys(document_ids))
    least = 2 if compare else 1
    if not least <= len(ids) <= 4:
        raise BadRequest(f"{'compare' if compare else 'summarize'} needs {least} to 4 document_ids (got {len(ids)})")
    await checked(caller, charge="question", document_ids=ids)
    rt = caller.runtime
    default = "Compare these documents." if compare else "Summarise this document."
    text = check_query(request, "request") if request and request.strip() else default
    answer_request = AnswerRequest(question=text, document_ids=ids, task="compare" if compare else "summarize")
    try:
        answer = await rt.chat.answer(caller.principal, answer_request)
    except Exception as exc:
        raise as_http_error(exc) from exc
    return ask_output(answer, rt.settings.llm.rag_footnotes)


def ask_output(answer: Answer, with_footnotes: bool) -> AskOutput:
    """An answer as MCP's `ask` result, its verification included (and as footnotes with RAG_FOOTNOTES)."""
    notes = footnotes(answer.verification) if with_footnotes else ""
    return AskOutput(
        answer=answer.text + (f"\n\nChecks:\n{notes}" if notes else ""),
        sources=[Source.of(n, chunk) for n, chunk in enumerate(answer.sources, 1)],
        finish_reason=answer.finish_reason,
        usage=dict(answer.usage or {}),
        verification=answer.verification,
    )


def _located(row: dict[str, object]) -> str:
    page, section = row.get("page"), row.get("section")
    return (f", page {page}" if page is not None else "") + (f", § {section}" if section else "")


async def ask(
    caller: Caller,
    question: str,
    *,
    mode: str | None = None,
    document_ids: list[UUID] | None = None,
    collection_ids: list[UUID] | None = None,
    rerank: bool | None = None,
) -> AskOutput:
    text = check_query(question, "question")
    rt = caller.runtime
    done = await checked(
        caller,
        charge="question",
        search=Asked(mode=mode, rerank=rerank),
        document_ids=document_ids,
        collection_ids=collection_ids,
        default_limit=rt.settings.llm.chat_search_limit,
    )
    request = AnswerRequest(
        question=text,
        document_ids=done.document_ids,
        collection_ids=done.collection_ids,
        options=done.options,
        documents_only=done.documents_only,
    )
    try:
        answer = await rt.chat.answer(caller.principal, request)
    except Exception as exc:  # the LLM's or the search's failure, as the chat's message naming the fix
        raise as_http_error(exc) from exc
    return ask_output(answer, rt.settings.llm.rag_footnotes)
