"""The tool loop as an async generator of events, independent of HTTP and of the database.

history + question ──> LLM provider (stream, tools=[search_documents]) ──tokens──> `token` events
                          │ tool calls (at most `chat_max_tool_rounds` rounds, then one call without tools)
                          v
                 search ──> `tool_call` / `tool_result` events, numbered passages back to the model

Models that reject tools get retrieve-then-answer: one search with the question, the same events, and the
passages in the prompt. Every event also updates the `Turn`, so a caller can save whatever was produced.
What small local models do wrong (prose before a call, calls written as text, the same call repeated) is
handled here with `replies.py`; every request is fitted to the model's context window (`budget.py`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from uuid import UUID

from ragchat.chat.engine.budget import fit
from ragchat.chat.engine.coverage import NOT_COVERED, REFUSAL, not_covered
from ragchat.chat.engine.document_tools import SUMMARIZE_TOOL_NAME, DocumentTools, ToolOutcome, run_document_tool
from ragchat.chat.engine.llm_budget import MessageBudget
from ragchat.chat.engine.prompts import (
    FALLBACK_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
    fallback_user_message,
    tool_message,
)
from ragchat.chat.engine.replies import HoldBack
from ragchat.chat.engine.rewrite import standalone_query
from ragchat.chat.engine.tools import (
    SEARCH_TOOL,
    TOOL_NAME,
    ToolArgumentError,
    narrow_metadata,
    parse_search_args,
    run_search,
    tool_result_payload,
)
from ragchat.core import metrics, tracing
from ragchat.core.principal import Principal
from ragchat.core.search import SearchOptions, SearchResult, SearchService
from ragchat.providers.llm.base import (
    ChatChunk,
    LLMBadResponse,
    LLMContextOverflow,
    LLMError,
    LLMProvider,
    ToolCall,
    ToolsUnsupported,
)
from ragchat.settings import LLMSettings

log = logging.getLogger(__name__)
MAX_CALLS_PER_ROUND = 4


class ChatEvent(NamedTuple):
    """One SSE event: its name and its JSON object."""

    event: str
    data: dict[str, Any]


@dataclass
class Turn:
    """What the assistant produced so far: saved as the assistant message, whatever happens."""

    parts: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 0, "tool_rounds": 0}
    )
    finish_reason: str | None = None
    passages: int = 0  # passages numbered so far (the next search continues at passages + 1)
    searched: dict[tuple[str, tuple[str, ...]], tuple[int, int]] = field(default_factory=dict)  # → passages
    stop_tools: bool = False  # the model repeated a search: the next call goes without tools
    task_text: str | None = None  # a Summarise/Compare task's parts as the model reads them (a retry reuses them)
    _calls: int = 0

    @property
    def content(self) -> str:
        return "".join(self.parts)

    def next_call_id(self) -> str:
        self._calls += 1
        return f"call_{self._calls}"

    def count(self, chunk: ChatChunk) -> None:
        self.usage["prompt_tokens"] += chunk.prompt_tokens
        self.usage["completion_tokens"] += chunk.completion_tokens
        self.finish_reason = chunk.finish_reason or "stop"


@dataclass
class ChatContext:
    """The clients and per-request choices the loop needs."""

    llm: LLMProvider
    search: SearchService
    settings: LLMSettings
    principal: Principal
    options: SearchOptions  # resolved at the entry point; every search of the turn uses them
    model: str  # this turn's chat model (the request's, the user's, or CHAT_MODEL)
    use_tools: bool = True  # false: retrieve-then-answer (CHAT_USE_TOOLS=false, /api/rag)
    document_ids: list[UUID] | None = None
    collection_ids: list[UUID] | None = None
    metadata: dict[str, list[str]] | None = None  # document metadata filter (the RAG endpoint's `filters`)
    context_tokens: int | None = None  # the model's window; None: requests are not fitted
    documents_only: bool = False  # nothing matched well enough: refuse (coverage.REFUSAL), never ask the model
    documents: DocumentTools | None = None  # find_documents (chat/engine/document_tools.py); None: search only
    task: str = "answer"  # summarize | compare: summarize_documents over `document_ids`, then the answer
    budget: MessageBudget | None = None  # the LLM work this message may do (llm_budget.py); None: unbounded

    def tools(self) -> list[dict[str, Any]]:
        return [SEARCH_TOOL, *(self.documents.schemas if self.documents else [])]


def initial_messages(history: list[dict[str, str]], question: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, *history, {"role": "user", "content": question}]


async def run_loop(
    ctx: ChatContext, messages: list[dict[str, Any]], question: str, turn: Turn
) -> AsyncGenerator[ChatEvent, None]:
    """Stream one assistant turn. Raises what the LLM or the search raise; `turn` keeps the partial state.
    Measured (core/metrics.py): time to the first token, tokens per second after it, tool rounds, LLM errors."""
    began, first, tokens = time.perf_counter(), 0.0, 0
    try:
        async with aclosing(_run_loop(ctx, messages, question, turn)) as events:
            async for event in events:
                if event.event == "token":
                    tokens += 1
                    if not first:
                        first = time.perf_counter()
                        metrics.CHAT_FIRST_TOKEN_SECONDS.observe(first - began)
                yield event
    except LLMError as exc:
        metrics.LLM_ERRORS.labels(exc.code).inc()
        raise
    metrics.CHAT_TOOL_ROUNDS.observe(turn.usage.get("tool_rounds", 0))
    spent = time.perf_counter() - first if first else 0.0
    if spent > 0:
        metrics.CHAT_TOKENS_PER_SECOND.observe((turn.usage.get("completion_tokens") or tokens) / spent)


async def _run_loop(
    ctx: ChatContext, messages: list[dict[str, Any]], question: str, turn: Turn
) -> AsyncGenerator[ChatEvent, None]:
    rounds = 0
    tools_supported = ctx.use_tools
    if ctx.task != "answer":  # a Summarise/Compare action: the whole documents first, then one answer
        tools_supported = False
        async with aclosing(_task_then_answer(ctx, messages, question, turn)) as events:
            async for event in events:
                yield event
    elif not tools_supported:  # CHAT_USE_TOOLS=false: retrieve first, then one answer without tools
        async with aclosing(_retrieve_then_answer(ctx, messages, question, turn)) as events:
            async for event in events:
                yield event
    while True:
        if ctx.documents_only and not_covered(turn.tool_results):
            yield _refuse(turn)
            return
        offer_tools = tools_supported and rounds < ctx.settings.chat_max_tool_rounds and not turn.stop_tools
        round_parts: list[str] = []
        calls: list[ToolCall] = []
        require = offer_tools and rounds == 0 and (ctx.settings.chat_search_first or ctx.documents_only)
        if turn.passages:  # the model now reads the passages: the page says so until the first token
            yield ChatEvent("reading", {"passages": turn.passages})
        try:
            async with aclosing(
                _stream_reply(ctx, messages, offer_tools, require, turn, round_parts, calls)
            ) as replies:
                async for event in replies:
                    yield event
        except ToolsUnsupported:
            if not (offer_tools and not round_parts and not calls):
                raise
            tools_supported = False
        if not tools_supported and not turn.tool_calls:
            log.info("model %s does not support tools: retrieve-then-answer", ctx.model)
            async with aclosing(_retrieve_then_answer(ctx, messages, question, turn)) as events:
                async for event in events:
                    yield event
            continue
        if not (offer_tools and calls):
            if not turn.content.strip():
                raise LLMBadResponse(f"{ctx.model} returned an empty answer. Try again, or use a larger CHAT_MODEL.")
            return  # a final answer (tool calls made on a call without tools are ignored)
        rounds += 1
        turn.usage["tool_rounds"] = rounds
        messages.append({"role": "assistant", "content": "".join(round_parts), "tool_calls": list(calls)})
        for index, call in enumerate(calls):
            async with aclosing(_run_tool(ctx, call, index, messages, turn)) as events:
                async for event in events:
                    yield event


def _refuse(turn: Turn) -> ChatEvent:
    """documents_only and every search fell below the floor: the turn's answer is the refusal, unasked."""
    turn.parts[:] = [REFUSAL]
    turn.finish_reason = NOT_COVERED
    return ChatEvent("token", {"delta": REFUSAL})


async def _stream_reply(
    ctx: ChatContext,
    messages: list[dict[str, Any]],
    offer_tools: bool,
    require_tool: bool,
    turn: Turn,
    round_parts: list[str],
    calls: list[ToolCall],
) -> AsyncGenerator[ChatEvent, None]:
    """One streamed model call: text becomes `token` events, tool calls are collected into `calls`.

    While tools are offered, text is held back until it is clearly an answer (`HoldBack`); a request the
    server finds too long is fitted again with half the budget, once."""
    tools = ctx.tools() if offer_tools else None
    s = ctx.settings
    budget = None if ctx.context_tokens is None else ctx.context_tokens - s.chat_answer_reserve_tokens
    for attempt in range(2):
        if ctx.budget is not None:
            await ctx.budget.llm_calls()  # RateLimited past the user's budget: the turn ends, saying so
        turn.usage["llm_calls"] += 1
        sent = messages if budget is None else fit(messages, tools, budget)
        hold = HoldBack(active=offer_tools)
        call = tracing.start("llm.chat", **{"llm.model": s.chat_model, "llm.tools": bool(tools)})
        failure: BaseException | None = None
        stream = ctx.llm.stream_chat(
            model=ctx.model, messages=sent, tools=tools, require_tool=require_tool, temperature=s.chat_temperature
        )
        try:
            async with aclosing(stream):
                async for chunk in stream:
                    if chunk.content:
                        round_parts.append(chunk.content)
                        shown = hold.feed(chunk.content)
                        if shown:
                            turn.parts.append(shown)
                            yield ChatEvent("token", {"delta": shown})
                    calls.extend(chunk.tool_calls)
                    if chunk.done:
                        turn.count(chunk)
        except LLMContextOverflow as exc:
            failure = exc
            if attempt or round_parts or calls or budget is None:
                raise
            budget //= 2
            continue
        except Exception as exc:
            failure = exc
            held = hold.flush()  # a failure mid-answer: what was held is part of the partial answer
            if held:
                turn.parts.append(held)
                yield ChatEvent("token", {"delta": held})
            raise
        except BaseException as exc:  # cancelled (the client went away): keep it in the saved answer
            failure = exc
            held = hold.flush()
            if held:
                turn.parts.append(held)
            raise
        finally:
            tracing.finish(call, failure, **{"llm.tool_calls": len(calls)})
        rest, text_call = hold.finish(bool(calls), TOOL_NAME)
        if text_call is not None:
            log.info("the model wrote its tool call as text: running it")
            calls.append(text_call)
        if rest:
            turn.parts.append(rest)
            yield ChatEvent("token", {"delta": rest})
        return


async def _search_events(
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
    payload = tool_result_payload(call_id, result)
    turn.tool_results.append(payload)
    start = turn.passages + 1
    turn.passages += len(result.chunks)
    on_result(result, start)
    yield ChatEvent("tool_result", payload)


async def _run_tool(
    ctx: ChatContext, call: ToolCall, index: int, messages: list[dict[str, Any]], turn: Turn
) -> AsyncGenerator[ChatEvent, None]:
    name = call.name
    arguments = call.arguments
    refused = ctx.budget.take_tool_call() if ctx.budget is not None and index < MAX_CALLS_PER_ROUND else None
    if refused is not None:  # CHAT_MAX_TOOL_CALLS: the next call goes without tools, the answer notes it
        log.info("tool call %s refused: %s", name, refused)
        turn.stop_tools = True
        messages.append({"role": "tool", "tool_call_id": call.id, "name": name, "content": refused})
        return
    if ctx.documents is not None and name in ctx.documents.names and index < MAX_CALLS_PER_ROUND:
        outcome = ToolOutcome(turn.next_call_id(), turn.passages + 1)
        async with aclosing(run_document_tool(ctx.documents, name, arguments, outcome)) as events:
            async for event, data in events:
                if event == "tool_call":
                    turn.tool_calls.append(data)
                elif event == "tool_result":
                    turn.tool_results.append(data)
                    turn.passages += len(data["chunks"])
                    turn.usage["llm_calls"] += (data.get("summary") or {}).get("llm_calls", 0)
                yield ChatEvent(event, data)
        messages.append({"role": "tool", "tool_call_id": call.id, "name": name, "content": outcome.message})
        return
    repeated = _repeated_search(call, ctx, turn)
    if repeated is not None:
        log.info("the model repeated a search (%r): answering from the earlier passages", arguments)
        turn.stop_tools = True
        messages.append({"role": "tool", "tool_call_id": call.id, "name": name, "content": repeated})
        return
    try:
        if index >= MAX_CALLS_PER_ROUND:
            raise ToolArgumentError(f"at most {MAX_CALLS_PER_ROUND} searches at once; wait for these results")
        if not isinstance(arguments, dict):
            raise ToolArgumentError(f'the arguments were not valid JSON; call {TOOL_NAME} with {{"query": "..."}}')
        args = parse_search_args(name, arguments, ctx.document_ids)
    except ToolArgumentError as exc:
        log.info("rejected tool call %s(%r): %s", name, arguments, exc)
        messages.append({"role": "tool", "tool_call_id": call.id, "name": name, "content": f"Error: {exc}"})
        return

    def feed(result: SearchResult, start: int) -> None:
        turn.searched[_search_key(args.query, args.document_ids)] = (start, start + len(result.chunks) - 1)
        messages.append(
            {"role": "tool", "tool_call_id": call.id, "name": TOOL_NAME, "content": tool_message(result, start)}
        )

    search = _search_events(ctx, dict(arguments), args.query, args.document_ids, turn, feed, args.metadata)
    async with aclosing(search) as events:
        async for event in events:
            yield event


def _search_key(query: str, document_ids: list[UUID] | None) -> tuple[str, tuple[str, ...]]:
    return (" ".join(query.lower().split()), tuple(sorted(str(i) for i in document_ids or [])))


def _repeated_search(call: ToolCall, ctx: ChatContext, turn: Turn) -> str | None:
    """The tool message for a search this turn already ran (small models repeat themselves), else None."""
    if not isinstance(call.arguments, dict):
        return None
    try:
        args = parse_search_args(call.name, call.arguments, ctx.document_ids)
    except ToolArgumentError:
        return None
    seen = turn.searched.get(_search_key(args.query, args.document_ids))
    if seen is None:
        return None
    first, last = seen
    where = f"passages [{first}] to [{last}] above" if last >= first else "no passages (nothing matched)"
    return (
        f'You already searched for "{args.query}": the results are {where}. Do not search again; answer the '
        "user's question now from those passages, citing them by number, or say the documents don't say."
    )


async def _retrieve_then_answer(
    ctx: ChatContext, messages: list[dict[str, Any]], question: str, turn: Turn
) -> AsyncGenerator[ChatEvent, None]:
    """For models without tools: search with the question, then put the passages in the prompt."""

    def feed(result: SearchResult, start: int) -> None:
        messages[0] = {"role": "system", "content": FALLBACK_SYSTEM_PROMPT}
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        messages[last_user] = {"role": "user", "content": fallback_user_message(question, result, start)}

    arguments: dict[str, Any] = {"query": question}
    if ctx.settings.chat_rewrite_followups and len(messages) > 2:  # a follow-up: search a standalone query
        if ctx.budget is not None:
            await ctx.budget.llm_calls()
        turn.usage["llm_calls"] += 1
        timeout = ctx.settings.chat_rewrite_timeout_s
        rewrite = await standalone_query(ctx.llm, ctx.model, messages[1:-1], question, timeout)
        arguments = {"query": rewrite.query, "question": question, "rewrite": rewrite.outcome}
    query = arguments["query"]
    async with aclosing(_search_events(ctx, arguments, query, ctx.document_ids, turn, feed)) as events:
        async for event in events:
            yield event


async def _task_then_answer(
    ctx: ChatContext, messages: list[dict[str, Any]], question: str, turn: Turn
) -> AsyncGenerator[ChatEvent, None]:
    """Summarise or compare the request's documents (map-reduce, with progress), then answer from the parts."""
    if ctx.documents is None or not ctx.documents.whole_documents:
        raise LLMBadResponse("summaries are not available here: no document reader is set up")
    if turn.task_text is None:  # once per message: an answer asked again is written from the same parts
        call = ToolCall(id="task", name=SUMMARIZE_TOOL_NAME, arguments={"focus": question})
        results: list[dict[str, Any]] = []
        async with aclosing(_run_tool(ctx, call, 0, results, turn)) as events:
            async for event in events:
                yield event
        turn.task_text = results[-1]["content"] if results else ""
    text = turn.task_text
    messages[0] = {"role": "system", "content": FALLBACK_SYSTEM_PROMPT}
    messages[-1] = {"role": "user", "content": f"{question}\n\n{text}"}
