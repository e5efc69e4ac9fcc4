"""Answers that are not chat threads: the RAG endpoint, the OpenAI-compatible model, MCP's `ask`, and
`ragchat search --rag`. The same pipeline as a chat turn (pipeline.py: the loop, the answer rules, the
verification); nothing is saved.

`retrieve_first=True` is retrieve-then-answer (one search with the question, passages in the prompt, one
model call): what `POST /api/rag` promises. Otherwise the model searches through the tool, as in chat.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from ragchat.chat.engine.document_tools import DocumentTools
from ragchat.chat.engine.llm_budget import MessageBudget
from ragchat.chat.engine.loop import ChatContext, ChatEvent, Turn, initial_messages
from ragchat.chat.engine.pipeline import run_answer, task_of
from ragchat.chat.engine.replies import citation_report
from ragchat.chat.engine.verify import Verification, numbered_sources
from ragchat.core.options import SearchDefaults, options_of
from ragchat.core.principal import Principal
from ragchat.core.search import SearchOptions, SearchService
from ragchat.providers.llm.base import LLMProvider
from ragchat.settings import LLMSettings


@dataclass(frozen=True)
class AnswerRequest:
    question: str
    history: list[dict[str, str]] = field(default_factory=list)  # earlier {role, content} turns, oldest first
    document_ids: list[UUID] | None = None
    collection_ids: list[UUID] | None = None
    metadata: dict[str, list[str]] | None = None
    # resolved at the entry point (`RequestPolicy.check`; the limit: passages per search, CHAT_SEARCH_LIMIT);
    # None: the environment's, for tests and tools that call the service directly
    options: SearchOptions | None = None
    retrieve_first: bool = False
    task: str = "answer"  # summarize | compare: the whole documents (`document_ids`) first, then the answer
    documents_only: bool = False  # refuse when nothing matches well enough, never answer from the model alone


@dataclass
class Answer:
    text: str
    sources: list[dict[str, Any]]  # every passage the model saw, numbered from 1 in the order it saw them
    tool_results: list[dict[str, Any]]
    usage: dict[str, Any]
    finish_reason: str | None
    citations: dict[str, Any]  # {cited, invalid}: the [n] markers in `text`
    # per-sentence verdicts, repaired markers, not_covered, searched (verify.Verification.to_json); None: the
    # check itself failed
    verification: dict[str, Any] | None = None


async def answer_events(
    llm: LLMProvider,
    search: SearchService,
    settings: LLMSettings,
    principal: Principal,
    req: AnswerRequest,
    context_tokens: int | None,
    turn: Turn,
    tools: DocumentTools | None = None,
    budget: MessageBudget | None = None,
    *,
    defaults: SearchDefaults,
) -> AsyncGenerator[ChatEvent, None]:
    """`tool_call`, `tool_result`, `token` and `retry` events (the same payloads as chat, no `thread`), with the
    answer rules of the pipeline (pipeline.py); the caller verifies the answer and says `done`. `defaults`: the
    search options of a request that set none (the retrieval settings)."""
    task = req.task if tools is None else task_of(req.question, req.task, req.document_ids)
    ctx = ChatContext(
        llm=llm,
        search=search,
        settings=settings,
        principal=principal,
        options=req.options or options_of(defaults, default_limit=settings.chat_search_limit),
        model=settings.chat_model,
        use_tools=settings.chat_use_tools and not req.retrieve_first,
        document_ids=req.document_ids,
        collection_ids=req.collection_ids,
        metadata=req.metadata,
        context_tokens=context_tokens,
        documents_only=req.documents_only,
        documents=tools,
        task=task,
        budget=budget,
    )
    messages = initial_messages(req.history, req.question)
    async with aclosing(run_answer(ctx, messages, req.question, req.history, turn)) as events:
        async for event in events:
            yield event


def collect(turn: Turn, verification: Verification | None = None) -> Answer:
    text = verification.text if verification is not None else turn.content
    return Answer(
        text=text,
        sources=numbered_sources(turn.tool_results),
        tool_results=turn.tool_results,
        usage=turn.usage,
        finish_reason=turn.finish_reason,
        citations=citation_report(text, turn.passages),
        verification=None if verification is None else verification.to_json(),
    )
