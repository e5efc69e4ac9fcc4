"""One chat turn end to end, as events: persist the question, run the tool loop, save what was produced.

Database connections are taken from the pool inside the generator (never from the request), briefly:
one transaction before the model runs (thread + user message), one after (the assistant message); both
commit without waiting for the WAL flush (`repository.relax_commit`), which the user would otherwise wait on.
Whatever happens (an Ollama failure, the client going away), the assistant message is saved with the
text produced so far and a status: `complete`, `incomplete` (client disconnected) or `error`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import anyio

from server.chat import repository as repo
from server.chat.answer import Answer, AnswerRequest, answer_events, collect, numbered_sources
from server.chat.citations import Embedder, check_citations
from server.chat.faults import ChatFault, describe_failure
from server.chat.loop import ChatContext, ChatEvent, Turn, initial_messages, run_loop
from server.chat.prompts import history_messages, thread_title
from server.chat.replies import citation_report
from server.core.errors import NotFound
from server.core.principal import Principal
from server.core.search import SearchService
from server.db.pool import Pool
from server.providers.llm.base import LLMProvider
from server.settings import Settings

log = logging.getLogger(__name__)
DB_TIMEOUT_S = 10.0  # waiting for a pooled connection before the model runs (the pool's own default)
SAVE_WAIT_S = 30.0  # the answer has been streamed already: under a burst, wait longer rather than lose it
SAVE_TIMEOUT_S = 40.0  # a shielded save never holds a cancelled stream longer than this


@dataclass(frozen=True)
class ChatRequest:
    """A validated POST /api/chat body."""

    message: str
    thread_id: UUID | None = None
    document_ids: list[UUID] | None = None
    collection_ids: list[UUID] | None = None
    search_mode: str | None = None
    rerank: bool | None = None


def _clean(value: Any) -> Any:
    """Postgres text and jsonb reject NUL characters; drop them from anything we store."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


async def begin_turn(pool: Pool, settings: Settings, principal: Principal, req: ChatRequest) -> tuple[UUID, list[Any]]:
    """One transaction: the thread (created, titled from the message) and the user message; returns history."""
    owner = principal.user_id
    async with pool.connection(timeout=DB_TIMEOUT_S) as conn:
        await repo.relax_commit(conn)
        if req.thread_id is None:
            thread = await repo.create_thread(conn, owner, thread_title(req.message))
            rows: list[Any] = []
        else:
            thread = await repo.get_thread(conn, owner, req.thread_id, for_update=True)
            if thread is None:
                raise NotFound(f"thread {req.thread_id} not found")
            rows = await repo.recent_messages(conn, thread["id"], settings.chat_history_messages)
            await repo.touch_thread(conn, thread["id"])
        await repo.insert_message(
            conn, message_id=uuid4(), thread_id=thread["id"], owner=owner, role="user", content=req.message
        )
    history = history_messages(rows, settings.chat_history_messages, settings.chat_history_chars)
    return thread["id"], history


async def save_answer(
    pool: Pool,
    principal: Principal,
    thread_id: UUID,
    message_id: UUID,
    turn: Turn,
    status: str,
    error: ChatFault | None,
    citations: dict[str, Any] | None = None,
) -> None:
    """One transaction: the assistant message (text, tool calls, exact tool results) and the thread's timestamp."""
    async with pool.connection(timeout=SAVE_WAIT_S) as conn:
        await repo.relax_commit(conn)
        await repo.insert_message(
            conn,
            message_id=message_id,
            thread_id=thread_id,
            owner=principal.user_id,
            role="assistant",
            content=_clean(turn.content),
            status=status,
            tool_calls=_clean(turn.tool_calls),
            tool_results=_clean(turn.tool_results),
            error=None if error is None else error.to_json(),
            usage=turn.usage,
            citations=None if citations is None else _clean(citations),
        )
        await repo.touch_thread(conn, thread_id)


async def _shielded_save(*args: Any) -> Exception | None:
    """Save even while the stream is being cancelled; return the failure instead of raising it."""
    with anyio.move_on_after(SAVE_TIMEOUT_S, shield=True):
        try:
            await save_answer(*args)
            return None
        except Exception as exc:
            log.warning("could not save the assistant message: %s", exc)
            return exc
    return TimeoutError(f"saving the answer took longer than {SAVE_TIMEOUT_S:g} s")


def error_event(fault: ChatFault) -> ChatEvent:
    return ChatEvent("error", fault.to_json())


class ChatService:
    """Runs chat turns: persistence around the tool loop, with the providers it was built with."""

    def __init__(
        self,
        pool: Pool,
        llm: LLMProvider,
        search: SearchService,
        settings: Settings,
        embedder: Embedder | None = None,
    ) -> None:
        self.pool = pool
        self.llm = llm
        self.search = search
        self.settings = settings
        self.embedder = embedder  # for the citation check; None: lexical scores only
        self._windows: dict[str, int | None] = {}

    async def context_tokens(self) -> int | None:
        """The chat model's context window: CHAT_CONTEXT_TOKENS, else what its server says (asked once)."""
        if self.settings.chat_context_tokens:
            return self.settings.chat_context_tokens
        model = self.settings.chat_model
        if model not in self._windows:
            try:
                self._windows[model] = await self.llm.context_window(model)
            except Exception:
                return None  # unknown for now: ask again next turn
        return self._windows[model]

    async def check_citations(self, turn: Turn, message_id: UUID) -> dict[str, Any] | None:
        """The `citations` event's payload (server/chat/citations.py); None when the answer cites nothing."""
        passages = [source["content"] for source in numbered_sources(turn.tool_results)]
        try:
            report = await check_citations(
                turn.content,
                passages,
                self.embedder,
                judge=self.llm if self.settings.citation_judge else None,
                judge_model=self.settings.chat_model,
                judge_timeout_s=self.settings.citation_judge_timeout_s,
            )
        except Exception:  # a bug in the checker never costs the user the answer
            log.exception("chat: the citation check failed")
            return None
        return report.to_json(str(message_id)) if report.citations else None

    async def events(self, principal: Principal, req: ChatRequest) -> AsyncGenerator[ChatEvent, None]:
        """`thread`, the loop's `tool_call`/`tool_result`/`token` events, `citations`, then `done` or `error`."""
        message_id = uuid4()
        try:
            thread_id, history = await begin_turn(self.pool, self.settings, principal, req)
        except NotFound as exc:
            yield error_event(ChatFault("not_found", exc.message))
            return
        except Exception as exc:
            log.warning("chat: could not start the turn: %r", exc)
            yield error_event(describe_failure(exc))
            return
        yield ChatEvent("thread", {"thread_id": str(thread_id), "message_id": str(message_id)})

        turn = Turn()
        ctx = ChatContext(
            llm=self.llm,
            search=self.search,
            settings=self.settings,
            principal=principal,
            document_ids=req.document_ids,
            collection_ids=req.collection_ids,
            search_mode=req.search_mode,
            rerank=req.rerank,
            context_tokens=await self.context_tokens(),
        )
        fault: ChatFault | None = None
        save = (self.pool, principal, thread_id, message_id, turn)
        try:
            async with aclosing(run_loop(ctx, initial_messages(history, req.message), req.message, turn)) as events:
                async for event in events:
                    yield event
        except (asyncio.CancelledError, GeneratorExit):
            # The client went away: the LLM request is already closed (aclosing above); keep the partial answer.
            await _shielded_save(*save, "incomplete", None)
            raise
        except Exception as exc:
            fault = describe_failure(exc)
            log.warning("chat: %s: %r", fault.code, exc)

        try:
            citations = None if fault else await self.check_citations(turn, message_id)
        except asyncio.CancelledError:  # the client went away while the citations were checked
            await _shielded_save(*save, "incomplete", None)
            raise
        failed_save = await _shielded_save(*save, "error" if fault else "complete", fault, citations)
        if fault is None and failed_save is not None:
            fault = describe_failure(failed_save)
        if fault is not None:
            yield error_event(fault)
            return
        if citations is not None:
            yield ChatEvent("citations", citations)
        yield ChatEvent(
            "done",
            {
                "message_id": str(message_id),
                "finish_reason": turn.finish_reason,
                "usage": turn.usage,
                "citations": citation_report(turn.content, turn.passages),
            },
        )

    # ---- answers without a thread (RAG endpoint, OpenAI-compatible model, MCP, CLI) -------------------------
    async def answer_stream(
        self, principal: Principal, req: AnswerRequest, turn: Turn | None = None
    ) -> AsyncGenerator[ChatEvent, None]:
        """The turn's events without persistence; pass `turn` to read the text and sources afterwards."""
        async with aclosing(
            answer_events(
                self.llm, self.search, self.settings, principal, req, await self.context_tokens(), turn or Turn()
            )
        ) as events:
            async for event in events:
                yield event

    async def answer(self, principal: Principal, req: AnswerRequest) -> Answer:
        """The whole answer at once; raises what the LLM or the search raise (see faults.describe_failure)."""
        turn = Turn()
        async with aclosing(self.answer_stream(principal, req, turn)) as events:
            async for _ in events:
                pass
        return collect(turn)

    # ---- threads --------------------------------------------------------------------------------------------
    async def list_threads(self, principal: Principal) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            return await repo.list_threads(conn, principal.user_id)

    async def get_thread(
        self, principal: Principal, thread_id: UUID, *, with_messages: bool = False
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The thread (and its messages when asked); NotFound when it is not the principal's."""
        async with self.pool.connection(timeout=DB_TIMEOUT_S) as conn:
            thread = await repo.get_thread(conn, principal.user_id, thread_id)
            if thread is None:
                raise NotFound(f"thread {thread_id} not found")
            messages = await repo.list_messages(conn, principal.user_id, thread_id) if with_messages else []
        return thread, messages

    async def rename_thread(self, principal: Principal, thread_id: UUID, title: str) -> dict[str, Any]:
        async with self.pool.connection() as conn:
            thread = await repo.rename_thread(conn, principal.user_id, thread_id, title)
        if thread is None:
            raise NotFound(f"thread {thread_id} not found")
        return thread

    async def delete_thread(self, principal: Principal, thread_id: UUID) -> None:
        async with self.pool.connection() as conn:
            if not await repo.delete_thread(conn, principal.user_id, thread_id):
                raise NotFound(f"thread {thread_id} not found")
