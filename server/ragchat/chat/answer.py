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

from ragchat.chat.document_tools import DocumentTools
from ragchat.chat.loop import ChatContext, ChatEvent, Turn, initial_messages, run_loop
from ragchat.chat.replies import citation_report
from ragchat.core.options import options_of
from ragchat.core.principal import Principal
from ragchat.core.search import SearchOptions, SearchService
from ragchat.providers.llm.base import LLMProvider
from ragchat.settings import Settings


@dataclass(frozen=True)
class AnswerRequest:
    question: str
    history: list[dict[str, str]] = field(default_factory=list)  # earlier {role, content} turns, oldest first
    document_ids: list[UUID] | None = None
    collection_ids: list[UUID] | None = None
    metadata: dict[str, list[str]] | None = None
    # resolved at the entry point (`SearchPolicy.resolve`; the limit: passages per search, CHAT_SEARCH_LIMIT);
    # None: the environment's, for tests and tools that call the service directly
    options: SearchOptions | None = None
    retrieve_first: bool = False
    task: str = "answer"  # summarize | compare: the whole documents (`document_ids`) first, then the answer


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
    tools: DocumentTools | None = None,
) -> AsyncGenerator[ChatEvent, None]:
    """`tool_call`, `tool_result` and `token` events, then `done` (the same payloads as chat, no `thread`)."""
    ctx = ChatContext(
        llm=llm,
        search=search,
        settings=settings,
        principal=principal,
        options=req.options or options_of(settings, default_limit=settings.chat_search_limit),
        model=settings.chat_model,
        use_tools=settings.chat_use_tools and not req.retrieve_first,
        document_ids=req.document_ids,
        collection_ids=req.collection_ids,
        metadata=req.metadata,
        context_tokens=context_tokens,
        documents=tools,
        task=req.task,
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
