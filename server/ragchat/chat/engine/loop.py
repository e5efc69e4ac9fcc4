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
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from ragchat.chat.engine.budget import fit
from ragchat.chat.engine.context import ChatContext, ChatEvent, Turn
from ragchat.chat.engine.coverage import NOT_COVERED, REFUSAL, not_covered
from ragchat.chat.engine.document_tools import SUMMARIZE_TOOL_NAME
from ragchat.chat.engine.prompts import FALLBACK_SYSTEM_PROMPT, SYSTEM_PROMPT, fallback_user_message
from ragchat.chat.engine.replies import HoldBack
from ragchat.chat.engine.rewrite import standalone_query
from ragchat.chat.engine.toolbox import registry_for, search_events, tool_reply
from ragchat.chat.engine.tools import TOOL_NAME, ToolArgumentError
from ragchat.core.search import SearchResult
from ragchat.observability import metrics, tracing
from ragchat.providers.llm.base import (
    LLMBadResponse,
    LLMContextOverflow,
    LLMError,
    ToolCall,
    ToolsUnsupported,
)
from ragchat.providers.llm.speed import estimate_prompt_tokens

__all__ = ["ChatContext", "ChatEvent", "Turn", "initial_messages", "run_loop"]
log = logging.getLogger(__name__)
MAX_CALLS_PER_ROUND = 4
ESTIMATE_MIN_S = 3.0  # an `estimate` event only when the first token is expected to take at least this long


def initial_messages(history: list[dict[str, str]], question: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, *history, {"role": "user", "content": question}]


async def run_loop(
    ctx: ChatContext, messages: list[dict[str, Any]], question: str, turn: Turn
) -> AsyncGenerator[ChatEvent, None]:
    """Stream one assistant turn. Raises what the LLM or the search raise; `turn` keeps the partial state.
    Measured (observability/metrics.py): time to first token, tokens per second after it, tool rounds, LLM errors."""
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
    tools = registry_for(ctx).schemas() if offer_tools else None
    s = ctx.settings
    budget = None if ctx.context_tokens is None else ctx.context_tokens - s.chat_answer_reserve_tokens
    for attempt in range(2):
        if ctx.budget is not None:
            await ctx.budget.llm_calls()  # RateLimited past the user's budget: the turn ends, saying so
        turn.usage["llm_calls"] += 1
        sent = messages if budget is None else fit(messages, tools, budget)
        estimate = _estimate(ctx, sent, tools, turn)
        if estimate is not None:
            yield estimate
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


def _estimate(
    ctx: ChatContext, sent: list[dict[str, Any]], tools: list[dict[str, Any]] | None, turn: Turn
) -> ChatEvent | None:
    """`estimate` before a model call: its prompt's tokens ÷ the model's measured prompt speed (providers/llm/
    speed.py) until the first token, plus a usual answer ÷ its generation speed; None when never measured or
    quick."""
    guess = ctx.llm.speed.estimate(ctx.model, estimate_prompt_tokens(sent, tools))
    if guess.first_token_s is None or guess.first_token_s < ESTIMATE_MIN_S:
        return None
    stage = "reading" if turn.passages else "thinking"
    return ChatEvent("estimate", {"stage": stage, "passages": turn.passages, **guess.to_json()})


async def _run_tool(
    ctx: ChatContext, call: ToolCall, index: int, messages: list[dict[str, Any]], turn: Turn
) -> AsyncGenerator[ChatEvent, None]:
    """One call: refused (the message's tool budget, too many at once, an unknown tool, bad arguments: the
    reason goes back to the model as the tool's answer), else parsed once and run by its tool (toolbox.py)."""
    refused = ctx.budget.take_tool_call() if ctx.budget is not None and index < MAX_CALLS_PER_ROUND else None
    if refused is not None:  # CHAT_MAX_TOOL_CALLS: the next call goes without tools, the answer notes it
        log.info("tool call %s refused: %s", call.name, refused)
        turn.stop_tools = True
        messages.append(tool_reply(call, refused))
        return
    registry = registry_for(ctx)
    tool = registry.get(call.name)
    try:
        if tool is None:
            offered = ", ".join(registry.names)
            raise ToolArgumentError(f"there is no tool named {call.name!r}; the tools are {offered}")
        if index >= MAX_CALLS_PER_ROUND:
            raise ToolArgumentError(f"at most {MAX_CALLS_PER_ROUND} tool calls at once; wait for these results")
        parsed = tool.parse(call.arguments, ctx)
    except ToolArgumentError as exc:
        log.info("rejected tool call %s(%r): %s", call.name, call.arguments, exc)
        messages.append(tool_reply(call, f"Error: {exc}"))
        return
    async with aclosing(tool.run(ctx, call, parsed, messages, turn)) as events:
        async for event in events:
            yield event


async def _retrieve_then_answer(
    ctx: ChatContext, messages: list[dict[str, Any]], question: str, turn: Turn
) -> AsyncGenerator[ChatEvent, None]:
    """For models without tools: search with the question, then put the passages in the prompt."""

    def feed(result: SearchResult, start: int) -> None:
        messages[0] = {"role": "system", "content": FALLBACK_SYSTEM_PROMPT}
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        content = fallback_user_message(question, result, start, sentences=ctx.settings.chat_passage_sentences)
        messages[last_user] = {"role": "user", "content": content}

    arguments: dict[str, Any] = {"query": question}
    if ctx.settings.chat_rewrite_followups and len(messages) > 2:  # a follow-up: search a standalone query
        if ctx.budget is not None:
            await ctx.budget.llm_calls()
        turn.usage["llm_calls"] += 1
        timeout = ctx.settings.chat_rewrite_timeout_s
        rewrite = await standalone_query(ctx.llm, ctx.model, messages[1:-1], question, timeout)
        arguments = {"query": rewrite.query, "question": question, "rewrite": rewrite.outcome}
    query = arguments["query"]
    async with aclosing(search_events(ctx, arguments, query, ctx.document_ids, turn, feed)) as events:
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
