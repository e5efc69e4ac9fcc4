"""The tools the model may call, each one object (DESIGN.md §11): its JSON schema, a `parse` that validates the
arguments once, and `run`, which yields the turn's events and appends the tool message the model reads. The
loop finds a call's tool in the turn's `ToolRegistry` (`registry_for`) and never parses arguments itself.

- `search_documents` (`SearchTool`): hybrid search within the request's scope; a repeated search is answered
  from the passages it already returned.
- `find_documents`, `read_document`, `summarize_documents` (`DocumentTool`, document_tools.py): offered when the
  turn has a document finder (and, for the last two, a reader and the LLM).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

from ragchat.chat.engine.context import ChatContext, ChatEvent, Turn
from ragchat.chat.engine.document_tools import DocumentTools, ToolOutcome, run_document_tool
from ragchat.chat.engine.prompts import tool_message
from ragchat.chat.engine.tools import (
    SEARCH_TOOL,
    TOOL_NAME,
    SearchArgs,
    ToolArgumentError,
    narrow_metadata,
    parse_search_args,
    run_search,
    tool_result_payload,
)
from ragchat.core.search import SearchResult
from ragchat.providers.llm.base import ToolCall

log = logging.getLogger(__name__)
Messages = list[dict[str, Any]]


class Tool(Protocol):
    """One tool: what the model is offered, the one parse of a call's arguments, and the run."""

    @property
    def name(self) -> str: ...

    @property
    def schema(self) -> dict[str, Any]:
        """The function schema offered to the model (OpenAI's `{"type": "function", "function": {…}}`)."""
        ...

    def parse(self, arguments: Any, ctx: ChatContext) -> Any:
        """The call's arguments, validated (once); `ToolArgumentError` goes back to the model as the answer."""
        ...

    def run(
        self, ctx: ChatContext, call: ToolCall, parsed: Any, messages: Messages, turn: Turn
    ) -> AsyncGenerator[ChatEvent, None]:
        """`tool_call`, the work, `tool_result` (as needed); appends the tool message for `call.id`."""
        ...


def tool_reply(call: ToolCall, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


class SearchTool:
    """`search_documents`: the request's scope bounds what the model may search."""

    name = TOOL_NAME
    schema = SEARCH_TOOL

    def parse(self, arguments: Any, ctx: ChatContext) -> SearchArgs:
        if not isinstance(arguments, dict):
            raise ToolArgumentError(f'the arguments were not valid JSON; call {TOOL_NAME} with {{"query": "..."}}')
        return parse_search_args(self.name, arguments, ctx.document_ids)

    async def run(
        self, ctx: ChatContext, call: ToolCall, parsed: SearchArgs, messages: Messages, turn: Turn
    ) -> AsyncGenerator[ChatEvent, None]:
        repeated = _repeated_search(parsed, turn)
        if repeated is not None:
            log.info("the model repeated a search (%r): answering from the earlier passages", parsed.query)
            turn.stop_tools = True
            messages.append(tool_reply(call, repeated))
            return

        def feed(result: SearchResult, start: int) -> None:
            turn.searched[_search_key(parsed.query, parsed.document_ids)] = (start, start + len(result.chunks) - 1)
            window = ctx.settings.chat_passage_sentences
            messages.append(tool_reply(call, tool_message(result, start, sentences=window)))

        arguments = dict(call.arguments) if isinstance(call.arguments, dict) else {"query": parsed.query}
        search = search_events(ctx, arguments, parsed.query, parsed.document_ids, turn, feed, parsed.metadata)
        async with aclosing(search) as events:
            async for event in events:
                yield event


@dataclass(frozen=True)
class DocumentTool:
    """`find_documents`, `read_document` or `summarize_documents` over the turn's `DocumentTools`; their
    arguments are checked once, by the tool's own run (document_tools.py), which answers a bad call itself."""

    documents: DocumentTools
    schema: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.schema["function"]["name"])

    def parse(self, arguments: Any, ctx: ChatContext) -> Any:
        return arguments

    async def run(
        self, ctx: ChatContext, call: ToolCall, parsed: Any, messages: Messages, turn: Turn
    ) -> AsyncGenerator[ChatEvent, None]:
        outcome = ToolOutcome(turn.next_call_id(), turn.passages + 1)
        async with aclosing(run_document_tool(self.documents, self.name, parsed, outcome)) as events:
            async for event, data in events:
                if event == "tool_call":
                    turn.tool_calls.append(data)
                elif event == "tool_result":
                    turn.tool_results.append(data)
                    turn.passages += len(data["chunks"])
                    turn.usage["llm_calls"] += (data.get("summary") or {}).get("llm_calls", 0)
                yield ChatEvent(event, data)
        messages.append(tool_reply(call, outcome.message))


class ToolRegistry:
    """The tools of one turn, by name, in the order they are offered."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools = {t.name: t for t in tools}

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema for t in self._tools.values()]


SEARCH = SearchTool()


def registry_for(ctx: ChatContext) -> ToolRegistry:
    """The turn's tools: search always; the document tools when the turn has them."""
    documents = ctx.documents
    extra: list[Tool] = [DocumentTool(documents, s) for s in documents.schemas] if documents is not None else []
    return ToolRegistry([SEARCH, *extra])


async def search_events(
    ctx: ChatContext,
    arguments: dict[str, Any],
    query: str,
    document_ids: list[UUID] | None,
    turn: Turn,
    on_result: Callable[[SearchResult, int], None],
    asked: dict[str, list[str]] | None = None,
) -> AsyncGenerator[ChatEvent, None]:
    """`tool_call`, run the search, `tool_result`; `on_result(result, first passage number)` feeds the model."""
    call_id = turn.next_call_id()
    call = {"id": call_id, "name": TOOL_NAME, "arguments": arguments}
    turn.tool_calls.append(call)
    yield ChatEvent("tool_call", call)

    async def search(metadata: dict[str, list[str]] | None) -> SearchResult:
        return await run_search(
            ctx.search,
            ctx.principal,
            query,
            ctx.options,
            document_ids=document_ids,
            collection_ids=ctx.collection_ids,
            metadata=metadata,
        )

    if ctx.budget is not None and ctx.options.rerank:
        await ctx.budget.llm_calls(ctx.budget.rerank_cost)  # the LLM rerank's calls
    result = await search(narrow_metadata(ctx.metadata, asked))
    if asked and not result.chunks:  # filters the model made up found nothing: the request's own scope instead
        result = await search(ctx.metadata)
    result = close_to_best(result, ctx.settings.chat_passage_min_ratio)
    result = fewer_when_weak(result, ctx.settings.chat_weak_search_passages)
    payload = tool_result_payload(call_id, result)
    turn.tool_results.append(payload)
    start = turn.passages + 1
    turn.passages += len(result.chunks)
    on_result(result, start)
    yield ChatEvent("tool_result", payload)


def close_to_best(result: SearchResult, ratio: float) -> SearchResult:
    """`result` with only the passages scoring at least `ratio` × the best one's score (CHAT_PASSAGE_MIN_RATIO):
    what the model reads, the page shows and the checks number. Unchanged when `ratio` is 0 or the best score is
    not positive."""
    best = max((hit.score for hit in result.chunks), default=0.0)
    if ratio <= 0 or best <= 0:
        return result
    kept = [hit for hit in result.chunks if hit.score >= ratio * best]
    return result if len(kept) == len(result.chunks) else result.model_copy(update={"chunks": kept})


def fewer_when_weak(result: SearchResult, limit: int) -> SearchResult:
    """`result` with at most its `limit` best passages when no passage matches the question closely (confidence
    insufficient, CHAT_WEAK_SEARCH_PASSAGES): the model is then asked to say the documents do not cover the
    question, and six passages that all match poorly only make that answer slower and give it more to answer
    something else from. Unchanged when `limit` is 0 or the search matched well."""
    if limit <= 0 or not result.confidence.insufficient or len(result.chunks) <= limit:
        return result
    chunks = result.chunks
    best = set(sorted(range(len(chunks)), key=lambda i: chunks[i].score, reverse=True)[:limit])
    return result.model_copy(update={"chunks": [hit for i, hit in enumerate(chunks) if i in best]})  # search order


def _search_key(query: str, document_ids: list[UUID] | None) -> tuple[str, tuple[str, ...]]:
    return (" ".join(query.lower().split()), tuple(sorted(str(i) for i in document_ids or [])))


def _repeated_search(args: SearchArgs, turn: Turn) -> str | None:
    """The tool message for a search this turn already ran (small models repeat themselves), else None."""
    seen = turn.searched.get(_search_key(args.query, args.document_ids))
    if seen is None:
        return None
    first, last = seen
    where = f"passages [{first}] to [{last}] above" if last >= first else "no passages (nothing matched)"
    return (
        f'You already searched for "{args.query}": the results are {where}. Do not search again; answer the '
        "user's question now from those passages, citing them by number, or say the documents don't say."
    )
