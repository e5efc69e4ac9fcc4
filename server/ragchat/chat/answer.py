"""Answers that are not chat threads: the RAG endpoint, the OpenAI-compatible model, MCP's `ask`, and
`ragchat search --rag`. The same loop, tools, prompts and retrieval as a chat turn; nothing is saved.

`retrieve_first=True` is retrieve-then-answer (one search with the question, passages in the prompt, one
model call): what `POST /api/rag` promises. Otherwise the model searches through the tool, as in chat.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from ragchat.chat.loop import ChatContext, ChatEvent, Turn, initial_messages, run_loop
from ragchat.chat.replies import citation_report
from ragchat.core.principal import Principal
from ragchat.core.search import SearchService
from ragchat.providers.llm.base import LLMProvider
from ragchat.settings import Settings


@dataclass(frozen=True)
class AnswerRequest:
    question: str
    history: list[dict[str, str]] = field(default_factory=list)  # earlier {role, content} turns, oldest first
    document_ids: list[UUID] | None = None
    collection_ids: list[UUID] | None = None
    metadata: dict[str, list[str]] | None = None
    search_mode: str | None = None
    rerank: bool | None = None
    search_limit: int | None = None  # passages per search (default CHAT_SEARCH_LIMIT)
    retrieve_first: bool = False


@dataclass
class Answer:
    text: str
    sources: list[dict[str, Any]]  # every passage the model saw, numbered from 1 in the order it saw them
    tool_results: list[dict[str, Any]]
    usage: dict[str, Any]
    finish_reason: str | None
    citations: dict[str, Any]  # {cited, invalid}: the [n] markers in `text`


def numbered_sources(tool_results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"n": n, **chunk} for n, chunk in enumerate((c for r in tool_results for c in r["chunks"]), 1)]


async def answer_events(
    llm: LLMProvider,
    search: SearchService,
    settings: Settings,
    principal: Principal,
    req: AnswerRequest,
    context_tokens: int | None,
    turn: Turn,
) -> AsyncGenerator[ChatEvent, None]:
    """`tool_call`, `tool_result` and `token` events, then `done` (the same payloads as chat, no `thread`)."""
    updates: dict[str, Any] = {}
    if req.search_limit:
        updates["chat_search_limit"] = max(1, min(req.search_limit, settings.search_limit_max))
    if req.retrieve_first:
        updates["chat_use_tools"] = False
    ctx = ChatContext(
        llm=llm,
        search=search,
        settings=settings.model_copy(update=updates) if updates else settings,
        principal=principal,
        document_ids=req.document_ids,
        collection_ids=req.collection_ids,
        metadata=req.metadata,
        search_mode=req.search_mode,
        rerank=req.rerank,
        context_tokens=context_tokens,
    )
    async with aclosing(run_loop(ctx, initial_messages(req.history, req.question), req.question, turn)) as events:
        async for event in events:
            yield event
    yield ChatEvent(
        "done",
        {
            "finish_reason": turn.finish_reason,
            "usage": turn.usage,
            "citations": citation_report(turn.content, turn.passages),
        },
    )


def collect(turn: Turn) -> Answer:
    return Answer(
        text=turn.content,
        sources=numbered_sources(turn.tool_results),
        tool_results=turn.tool_results,
        usage=turn.usage,
        finish_reason=turn.finish_reason,
        citations=citation_report(turn.content, turn.passages),
    )
