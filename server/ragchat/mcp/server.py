"""The MCP server (the official `mcp` SDK's `MCPServer`): its tools over one runtime, as one principal.

The server's lifespan yields a `McpState`: the runtime, and the principal when the whole connection acts as one
user (stdio). Over HTTP the principal is per request: `ragchat.mcp.http` authenticates it and puts it in the
ASGI scope, where the tools find it. Domain errors become tool errors (`isError` results with the message).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Annotated, Any
from uuid import UUID

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from ragchat import __version__
from ragchat.core.errors import RagchatError
from ragchat.core.matches import MatchMode, matches_text
from ragchat.core.options import SearchModeName
from ragchat.core.principal import Principal
from ragchat.httpapi.search import DocumentMatches
from ragchat.mcp import tools
from ragchat.mcp.models import AskOutput, DocumentList, SearchOutput, ask_text, documents_text, search_text
from ragchat.policy.request import database_error
from ragchat.runtime import Runtime

#: The ASGI scope key under which `ragchat.mcp.http` leaves the authenticated principal of a request.
PRINCIPAL_KEY = "ragchat.principal"

INSTRUCTIONS = (
    "ragchat holds the user's own documents (PDF, Word, Markdown, HTML, text). search_documents finds passages "
    "(cite them as [n]); find_documents lists every document that mentions something; list_documents shows "
    "what there is; read_document reads a document's text; ask answers "
    "a question with the server's own LLM, with numbered citations."
)

ModeArg = Annotated[
    SearchModeName | None,
    Field(description="vector, keyword or hybrid (default: your preference, else the server's SEARCH_MODE)"),
]
DocumentIds = Annotated[list[UUID] | None, Field(description="only these documents (ids from list_documents)")]
CollectionIds = Annotated[list[UUID] | None, Field(description="only the documents of these collections")]
Filters = Annotated[
    dict[str, str | list[str]] | None,
    Field(description='document metadata: one of each key\'s values, e.g. {"subject": ["Polity", "History"]}'),
]
Rerank = Annotated[bool | None, Field(description="rerank the candidates with the LLM (slower; default: server's)")]


@dataclass(frozen=True)
class McpState:
    """What the server's lifespan yields: the runtime, and the principal of a single-user connection (stdio)."""

    runtime: Runtime
    principal: Principal | None = None


Lifespan = Callable[[MCPServer[McpState]], AbstractAsyncContextManager[McpState]]


def caller(ctx: Context[McpState, Any]) -> tools.Caller:
    """The runtime and principal a tool call runs with."""
    request = ctx.request_context
    state = request.lifespan_context
    if state.principal is not None:
        return tools.Caller(state.runtime, state.principal)
    scope = getattr(request.request, "scope", None) or {}
    principal = scope.get(PRINCIPAL_KEY)
    if not isinstance(principal, Principal):
        raise ToolError("not authenticated: send a personal API token (Authorization: Bearer rc_…)")
    return tools.Caller(state.runtime, principal, limited=True)


@contextmanager
def tool_errors() -> Iterator[None]:
    """A domain error is the tool's answer (isError, with its message), never a crashed session; so is a database
    that does not answer (mapped as for HTTP, `database_error`)."""
    try:
        yield
    except RagchatError as exc:
        raise ToolError(exc.message) from exc
    except Exception as exc:
        mapped = database_error(exc)
        if mapped is None:
            raise
        raise ToolError(mapped.message) from exc


def _result(text: str, structured: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured.model_dump(mode="json")
    )


async def search_documents(
    query: Annotated[str, Field(description="what to look for: a question or keywords (at most 2000 characters)")],
    ctx: Context[McpState, Any],
    mode: ModeArg = None,
    limit: Annotated[int, Field(ge=1, le=50, description="how many passages (1–50)")] = 8,
    document_ids: DocumentIds = None,
    filters: Filters = None,
    collection_ids: CollectionIds = None,
    rerank: Rerank = None,
) -> Annotated[CallToolResult, SearchOutput]:
    """Search the user's documents (hybrid vector + BM25 keyword search) and return the most relevant passages,
    numbered [1], [2], … with their document, page, section and score. Use it for any question about the
    user's documents; cite the passages you use as [n]."""
    with tool_errors():
        out = await tools.search_documents(
            caller(ctx),
            query,
            mode=mode,
            limit=limit,
            document_ids=document_ids,
            filters=filters,
            collection_ids=collection_ids,
            rerank=rerank,
        )
    return _result(search_text(out), out)


async def find_documents(
    query: Annotated[str, Field(description='the words to find (every word; "a phrase", or, -word work)')],
    ctx: Context[McpState, Any],
    match: Annotated[MatchMode, Field(description="all: every word (default); any: one word is enough")] = "all",
    page_size: Annotated[int, Field(ge=1, le=200, description="documents per page")] = 50,
    cursor: Annotated[str | None, Field(description="next_cursor of the previous page")] = None,
    limit: Annotated[int | None, Field(ge=1, description="matching passages to scan at most (server default)")] = None,
    document_ids: DocumentIds = None,
    collection_ids: CollectionIds = None,
) -> Annotated[CallToolResult, DocumentMatches]:
    """List EVERY document the user may read that contains the words (full-text, stemmed), with how many of its
    passages match and its best passage, most matches first, paged. Use it for "which documents mention…",
    "how many documents…", "list all documents about…". The answer says when the scan stopped early."""
    with tool_errors():
        out = await tools.find_documents(
            caller(ctx),
            query,
            match=match,
            page_size=page_size,
            cursor=cursor,
            limit=limit,
            document_ids=document_ids,
            collection_ids=collection_ids,
        )
    return _result(matches_text(out), out)


async def list_documents(
    ctx: Context[McpState, Any],
    query: Annotated[str | None, Field(description="only titles or filenames containing this (any case)")] = None,
    limit: Annotated[int, Field(ge=1, le=1000, description="at most this many (newest first)")] = 100,
) -> Annotated[CallToolResult, DocumentList]:
    """List the documents the user may read (their own and those shared with them), newest first: id, filename,
    title, status, chunks, owner and access. Use the ids with read_document, search_documents or ask."""
    with tool_errors():
        out = await tools.list_documents(caller(ctx), query, limit)
    return _result(documents_text(out, query), out)


async def read_document(
    document_id: Annotated[UUID, Field(description="the document's id (from list_documents or a search)")],
    ctx: Context[McpState, Any],
    page: Annotated[int | None, Field(ge=1, description="only this page (PDFs)")] = None,
    start_chunk: Annotated[int | None, Field(ge=0, description="first chunk index (default 0)")] = None,
    end_chunk: Annotated[int | None, Field(ge=0, description="last chunk index, inclusive")] = None,
) -> str:
    """Read a document's text, chunk by chunk (at most 50 chunks or about 40,000 characters a call; the answer
    ends by saying how to read on). Chunks are numbered from 0; search results give each passage's chunk."""
    with tool_errors():
        return await tools.read_document(
            caller(ctx), document_id, page=page, start_chunk=start_chunk, end_chunk=end_chunk
        )


async def summarize_documents(
    document_ids: Annotated[list[UUID], Field(description="1 to 4 document ids (list_documents, find_documents)")],
    ctx: Context[McpState, Any],
    request: Annotated[str | None, Field(description='what you want, e.g. "list the obligations"')] = None,
    compare: Annotated[bool, Field(description="true: compare the documents (2 to 4)")] = False,
) -> Annotated[CallToolResult, AskOutput]:
    """Summarise whole documents, or compare them, with ragchat's own LLM: every part of each document is read
    and summarised (a map-reduce that fits the model's context), then the answer cites the parts as [n]; the
    sources say which pages each [n] covers. Long documents are cut at the server's bound, and the answer says
    so. Slow: one LLM call per part."""
    with tool_errors():
        out = await tools.summarize_documents(caller(ctx), document_ids, request=request, compare=compare)
    return _result(ask_text(out), out)


async def ask(
    question: Annotated[str, Field(description="the question (at most 2000 characters)")],
    ctx: Context[McpState, Any],
    mode: ModeArg = None,
    document_ids: DocumentIds = None,
    collection_ids: CollectionIds = None,
    rerank: Rerank = None,
) -> Annotated[CallToolResult, AskOutput]:
    """Answer a question from the user's documents with ragchat's own LLM: it searches, then writes an answer
    citing passages as [n]; the sources list says where each [n] comes from. Slower than search_documents."""
    with tool_errors():
        out = await tools.ask(
            caller(ctx), question, mode=mode, document_ids=document_ids, collection_ids=collection_ids, rerank=rerank
        )
    return _result(ask_text(out), out)


def build_server(lifespan: Lifespan) -> MCPServer[McpState]:
    """The MCP server with ragchat's tools; `lifespan` yields the state the tools run with."""
    server: MCPServer[McpState] = MCPServer(
        "ragchat", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING"
    )
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    for fn, title in [
        (search_documents, "Search documents"),
        (find_documents, "Find every matching document"),
        (list_documents, "List documents"),
        (read_document, "Read a document"),
        (ask, "Ask (an answer with citations)"),
        (summarize_documents, "Summarise or compare documents"),
    ]:
        server.add_tool(
            fn,
            title=title,
            description=inspect.cleandoc(fn.__doc__ or ""),
            annotations=read_only,
            structured_output=None if fn is not read_document else False,  # its text is the whole answer
        )
    return server


def fixed_lifespan(state: McpState) -> Lifespan:
    """A lifespan that yields `state` (opened and closed by its owner)."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[McpState]) -> AsyncIterator[McpState]:
        yield state

    return lifespan
