"""One chat turn end to end, as events: persist the question and the answer's row, run the tool loop in a
detached run (runs.py), save what was produced.

Database connections are taken from the pool briefly: one transaction before the model runs (turns.py: the
thread, the question, the answer's row marked 'streaming'), a heartbeat every few seconds while it streams
(with the text so far), one at the end (the answer). Those writes commit without waiting for the WAL flush
(`repository.relax_commit`). Whatever happens (an Ollama failure, a stop, the server shutting down), the
answer row ends `complete`, `incomplete` (stopped: its `error` says why) or `error`, with the text so far. A
row left 'streaming' by a process that died is expired to `incomplete` ("interrupted") when found stale.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Any
from uuid import UUID

import anyio

from ragchat.chat.engine.answer import Answer, AnswerRequest, answer_events, collect
from ragchat.chat.engine.citations import Embedder
from ragchat.chat.engine.document_tools import DocumentTools
from ragchat.chat.engine.faults import ChatFault, describe_failure
from ragchat.chat.engine.llm_budget import MessageBudget, notes_text
from ragchat.chat.engine.loop import ChatContext, ChatEvent, Turn, initial_messages
from ragchat.chat.engine.pipeline import AnswerFailed, run_answer, task_of
from ragchat.chat.engine.prompts import continue_messages
from ragchat.chat.engine.replies import citation_report
from ragchat.chat.engine.summarize import SummaryLimits
from ragchat.chat.engine.titles import generate_title
from ragchat.chat.engine.verify import Verification, numbered_sources, verify_answer
from ragchat.chat.runs import STOPPED, Guard, Run, RunRegistry
from ragchat.chat.store import repository as repo
from ragchat.chat.store.audit import answer_sources, record_answer
from ragchat.chat.store.turns import BUSY, DB_TIMEOUT_S, ChatRequest, TurnPlan, begin_turn
from ragchat.core.audit import AuditAction, AuditWriter
from ragchat.core.errors import Conflict, NotFound
from ragchat.core.matches import DocumentFinder
from ragchat.core.options import options_of
from ragchat.core.principal import Principal
from ragchat.core.reading import DocumentReader
from ragchat.core.search import SearchOptions, SearchService
from ragchat.db.pool import Pool
from ragchat.db.ratelimit import RateLimiter
from ragchat.providers.llm.base import LLMProvider
from ragchat.settings import LimitSettings, LLMSettings, RetrievalSettings

__all__ = ["ChatRequest", "ChatService"]
log = logging.getLogger(__name__)
SAVE_WAIT_S = 30.0  # the answer has been streamed already: under a burst, wait longer rather than lose it
SAVE_TIMEOUT_S = 40.0  # a shielded save never holds a cancelled run longer than this


def _clean(value: Any) -> Any:
    """Postgres text and jsonb reject NUL characters; drop them from anything we store."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


async def save_answer(
    pool: Pool,
    thread_id: UUID,
    message_id: UUID,
    turn: Turn,
    status: str,
    error: ChatFault | None,
    citations: dict[str, Any] | None = None,
    *,
    audit: Callable[[Any, str], Awaitable[None]] | None = None,
) -> None:
    """One transaction: the answer's row (text, tool calls, exact tool results, status), the thread's time, and
    (`audit(conn, status)`) the audit row of what the answer showed."""
    async with pool.connection(timeout=SAVE_WAIT_S) as conn:
        await repo.relax_commit(conn)
        await repo.finish_message(
            conn,
            message_id,
            content=_clean(turn.content),
            status=status,
            tool_calls=_clean(turn.tool_calls),
            tool_results=_clean(turn.tool_results),
            error=None if error is None else error.to_json(),
            usage=turn.usage,
            citations=None if citations is None else _clean(citations),
        )
        await repo.touch_thread(conn, thread_id)
        if audit is not None:
            await audit(conn, status)


async def _shielded_save(*args: Any, **kwargs: Any) -> Exception | None:
    """Save even while the run is being cancelled; return the failure instead of raising it."""
    with anyio.move_on_after(SAVE_TIMEOUT_S, shield=True):
        try:
            await save_answer(*args, **kwargs)
            return None
        except Exception as exc:
            log.warning("could not save the assistant message: %s", exc)
            return exc
    return TimeoutError(f"saving the answer took longer than {SAVE_TIMEOUT_S:g} s")


def error_event(fault: ChatFault) -> ChatEvent:
    return ChatEvent("error", fault.to_json())


def _resumed(plan: TurnPlan) -> Turn:
    """The turn so far: empty, or the saved answer being continued (its text, searches and usage)."""
    turn = Turn()
    saved = plan.continued
    if saved is None:
        return turn
    if saved["content"]:
        turn.parts.append(saved["content"])
    turn.tool_calls = list(saved["tool_calls"] or [])
    turn.tool_results = list(saved["tool_results"] or [])
    turn.passages = len(numbered_sources(turn.tool_results))
    turn.stop_tools = True  # continue from the passages it had
    for key, value in (saved["usage"] or {}).items():
        if isinstance(value, int) and key in turn.usage:
            turn.usage[key] = value
    return turn


class ChatService:
    """Runs chat turns: persistence around the tool loop, with the providers it was built with."""

    def __init__(
        self,
        pool: Pool,
        llm: LLMProvider,
        search: SearchService,
        settings: LLMSettings,
        embedder: Embedder | None = None,
        runs: RunRegistry | None = None,
        *,
        retrieval: RetrievalSettings,
        limits: LimitSettings,
        audit: AuditWriter,
        finder: DocumentFinder | None = None,
        reader: DocumentReader | None = None,
        limiter: RateLimiter | None = None,
    ) -> None:
        self.pool = pool
        self.limiter = limiter  # the users' LLM budgets (llm_budget.py); None: per-message limits only
        self.audit = audit
        self.finder = finder  # find_documents for the model; None: search_documents only
        self.reader = reader  # read_document and summarize_documents; None: not offered
        self.llm = llm
        self.search = search
        self.settings = settings
        self.retrieval = retrieval  # the search options' defaults; what a message's rerank costs
        self.limits = limits  # the users' LLM budgets
        self.embedder = embedder  # for the citation check; None: lexical scores only
        self.runs = runs or RunRegistry()
        self._windows: dict[str, int | None] = {}
        self._titling: set[asyncio.Task[None]] = set()  # titles being generated (kept so they are not collected)

    def _title_later(self, plan: TurnPlan, answer: str, budget: MessageBudget | None = None) -> None:
        """Title the new thread from its first exchange, in the background: the stream never waits for it."""

        async def title() -> None:
            if budget is not None and not await budget.optional_llm_call():
                return  # the user's LLM budget is spent: the trimmed question stays the title
            timeout = self.settings.chat_title_timeout_s
            new = await generate_title(self.llm, plan.model, plan.question, answer, timeout)
            if not new or new == plan.title:
                return
            try:
                async with self.pool.connection(timeout=DB_TIMEOUT_S) as conn:
                    await repo.retitle_thread(conn, plan.thread_id, plan.title, new)
            except Exception as exc:
                log.info("chat: the generated title was not saved (%s)", exc)

        task = asyncio.get_running_loop().create_task(title())
        self._titling.add(task)
        task.add_done_callback(self._titling.discard)

    async def context_tokens(self, model: str | None = None) -> int | None:
        """The chat model's context window: CHAT_CONTEXT_TOKENS, else what its server says (asked once)."""
        if self.settings.chat_context_tokens:
            return self.settings.chat_context_tokens
        model = model or self.settings.chat_model
        if model not in self._windows:
            try:
                self._windows[model] = await self.llm.context_window(model)
            except Exception:
                return None  # unknown for now: ask again next turn
        return self._windows[model]

    def budget(self, principal: Principal, options: SearchOptions | None) -> MessageBudget:
        """A new answer's LLM budget (llm_budget.py), charged to the user's counters."""
        r = self.retrieval
        rerank = r.rerank_enabled if options is None else options.rerank
        limit = self.settings.chat_search_limit if options is None else options.limit
        cost = limit * max(1, r.rerank_candidates_factor) if rerank and r.rerank_provider == "llm" else 0
        return MessageBudget(principal.user_id, self.limits, self.limiter, rerank_cost=cost)

    def document_tools(
        self,
        principal: Principal,
        document_ids: list[UUID] | None,
        collection_ids: list[UUID] | None,
        metadata: dict[str, list[str]] | None,
        model: str,
        window: int | None,
    ) -> DocumentTools | None:
        """The turn's document tools (find, read, summarise), bounded by the request's scope."""
        if self.finder is None:
            return None
        s = self.settings
        limits = SummaryLimits(
            context_tokens=window or s.summary_context_tokens,
            answer_reserve=s.chat_answer_reserve_tokens,
            max_sections=s.summary_max_sections,
            max_parts=s.summary_max_parts,
        )
        return DocumentTools(
            self.finder, principal, document_ids, collection_ids, metadata,
            reader=self.reader, llm=self.llm, model=model, limits=limits, temperature=s.chat_temperature,
        )  # fmt: skip

    async def verify(
        self, turn: Turn, model: str | None = None, budget: MessageBudget | None = None, *, question: str = ""
    ) -> Verification | None:
        """The answer's verification (verify.py: per-sentence verdicts, citation repair, coverage); None when the
        check itself failed (a bug in the checker never costs the user the answer). The LLM judge's call is
        charged to `budget`; with the budget spent the judge is skipped (`judged: false`)."""
        judge = self.settings.citation_judge and (budget is None or await budget.optional_llm_call())
        try:
            return await verify_answer(
                turn.content,
                turn.tool_results,
                self.embedder,
                finish_reason=turn.finish_reason,
                question=question,
                judge=self.llm if judge else None,
                judge_model=model or self.settings.chat_model,
                judge_timeout_s=self.settings.citation_judge_timeout_s,
            )
        except Exception:
            log.exception("chat: the citation check failed")
            return None

    async def start(self, principal: Principal, req: ChatRequest, guard: Guard | None = None) -> Run:
        """Save the question and the answer's row (NotFound, Conflict, BadRequest, database errors raise
        here, before any stream), then generate the answer in a run that outlives the request. RateLimited
        (429) first when the user's LLM budget is spent, or a Summarise action finds no summary slot."""
        budget = self.budget(principal, req.options)
        await budget.admit(req.task if req.continue_id is None else "answer")
        try:
            plan = await begin_turn(self.pool, self.settings, principal, req)
        except BaseException:
            await budget.close()
            raise
        turn = _resumed(plan)
        run = Run(plan.thread_id, plan.message_id, principal.user_id, seed=turn.content)

        async def beat() -> None:
            async with self.pool.connection(timeout=DB_TIMEOUT_S) as conn:
                await repo.relax_commit(conn)
                if await repo.heartbeat(conn, plan.message_id, _clean(turn.content)):
                    run.stop(STOPPED)  # asked from another server process

        return self.runs.start(run, self.events(principal, req, plan, turn, run, budget), beat=beat, guard=guard)

    async def events(
        self,
        principal: Principal,
        req: ChatRequest,
        plan: TurnPlan,
        turn: Turn,
        run: Run | None = None,
        budget: MessageBudget | None = None,
    ) -> AsyncGenerator[ChatEvent, None]:
        """`thread`, the loop's `tool_call`/`tool_result`/`token` events, `citations`, then `done` or `error`."""
        message_id = plan.message_id
        yield ChatEvent(
            "thread",
            {"thread_id": str(plan.thread_id), "question_id": str(plan.question_id), "message_id": str(message_id)},
        )
        settings = self.settings
        # another model than CHAT_MODEL, or a continuation, goes through the tool loop (which falls back itself)
        use_tools = settings.chat_use_tools or plan.model != settings.chat_model or plan.continued is not None
        window = await self.context_tokens(plan.model)
        ctx = ChatContext(
            llm=self.llm,
            search=self.search,
            settings=settings,
            principal=principal,
            options=req.options or options_of(self.retrieval, default_limit=settings.chat_search_limit),
            model=plan.model,
            use_tools=use_tools,
            document_ids=req.document_ids,
            collection_ids=req.collection_ids,
            context_tokens=window,
            documents_only=req.documents_only,
            documents=self.document_tools(principal, req.document_ids, req.collection_ids, None, plan.model, window),
            task=req.task if plan.continued is None else "answer",
        )
        if plan.continued is None and ctx.documents is not None:
            ctx.task = task_of(plan.question, req.task, req.document_ids)
        budget = ctx.budget = budget or self.budget(principal, ctx.options)
        if ctx.documents is not None:
            ctx.documents.budget = budget
        if plan.continued is None:
            messages = initial_messages(plan.history, plan.question)
        else:
            messages = continue_messages(plan.history, plan.question, turn.content, turn.tool_results)
        fault: ChatFault | None = None
        save = (self.pool, plan.thread_id, message_id, turn)

        async def audited(conn: Any, status: str) -> None:
            details = {"thread_id": plan.thread_id, "status": status, **answer_sources(turn.tool_results)}
            await self.audit.record(
                conn, AuditAction.CHAT_ANSWER, principal, target_type="message", target_id=message_id, details=details
            )

        try:
            quality = plan.continued is None
            answering = run_answer(ctx, messages, plan.question, plan.history, turn, check_quality=quality)
            async with aclosing(answering) as events:
                async for event in events:
                    yield event
        except (asyncio.CancelledError, GeneratorExit):
            # stopped: the LLM request is already closed (aclosing above); keep the partial answer
            await _shielded_save(*save, "incomplete", (run and run.stop_fault) or STOPPED, audit=audited)
            raise
        except AnswerFailed as exc:  # failed twice: an error with Regenerate, never shown as a normal answer
            fault = exc.fault
        except Exception as exc:
            fault = describe_failure(exc)
            log.warning("chat: %s: %r", fault.code, exc)
        finally:
            await budget.close()  # the summary slot, if the message held one

        try:
            verification = None if fault else await self.verify(turn, plan.model, budget, question=plan.question)
        except asyncio.CancelledError:  # stopped while the citations were checked
            await _shielded_save(*save, "incomplete", (run and run.stop_fault) or STOPPED, audit=audited)
            raise
        if verification is not None and verification.repaired:
            turn.parts[:] = [verification.text]  # the answer as shown: with the markers the check added
        note = "" if fault else notes_text(budget.notes)
        if note:  # a limit refused work: the answer says so (after the checks, which it is not part of)
            turn.parts.append(note)
            yield ChatEvent("token", {"delta": note})
        citations = None if verification is None else verification.to_json(str(message_id))
        failed_save = await _shielded_save(*save, "error" if fault else "complete", fault, citations, audit=audited)
        if fault is None and failed_save is not None:
            fault = describe_failure(failed_save)
        if fault is not None:
            yield error_event(fault)
            return
        if citations is not None:
            yield ChatEvent("citations", citations)
        if plan.first and self.settings.chat_title_generation:
            self._title_later(plan, turn.content, budget)
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
        self, principal: Principal, req: AnswerRequest, turn: Turn | None = None, out: list[Answer] | None = None
    ) -> AsyncGenerator[ChatEvent, None]:
        """The pipeline's events without persistence: the loop's, `retry`, then `citations` (the verification,
        always) and `done` {finish_reason, usage, citations, verification}. Pass `out` to get the `Answer` (its
        text with repaired markers). A twice-failed answer raises `AnswerFailed`. The audit log gets what it
        showed once it ends (however it ends)."""
        turn = turn or Turn()
        status = "error"
        budget = self.budget(principal, req.options)
        await budget.admit(req.task)  # RateLimited: the JSON doors answer 429
        window = await self.context_tokens()
        tools = self.document_tools(
            principal, req.document_ids, req.collection_ids, req.metadata, self.settings.chat_model, window
        )
        if tools is not None:
            tools.budget = budget
        try:
            run = answer_events(
                self.llm, self.search, self.settings, principal, req, window, turn,
                tools=tools, budget=budget, defaults=self.retrieval,
            )  # fmt: skip
            try:
                async with aclosing(run) as events:
                    async for event in events:
                        yield event
            finally:
                await budget.close()
            verification = await self.verify(turn, budget=budget, question=req.question)
            if verification is not None and verification.repaired:
                turn.parts[:] = [verification.text]
            answer = collect(turn, verification)
            if note := notes_text(budget.notes):  # a limit refused work: the answer says so
                turn.parts.append(note)
                answer.text += note
                yield ChatEvent("token", {"delta": note})
            if out is not None:
                out.append(answer)
            if verification is not None:
                yield ChatEvent("citations", verification.to_json())
            yield ChatEvent(
                "done",
                {
                    "finish_reason": turn.finish_reason,
                    "usage": turn.usage,
                    "citations": answer.citations,
                    "verification": answer.verification,
                },
            )
            status = "complete"
        except (asyncio.CancelledError, GeneratorExit):
            status = "incomplete"
            raise
        finally:
            await record_answer(self.pool, self.audit, principal, turn, status)

    async def answer(self, principal: Principal, req: AnswerRequest) -> Answer:
        """The whole answer at once, verified; raises what the LLM or the search raise (faults.describe_failure)
        and `AnswerFailed`."""
        out: list[Answer] = []
        async with aclosing(self.answer_stream(principal, req, out=out)) as events:
            async for _ in events:
                pass
        return out[0]

    # ---- threads --------------------------------------------------------------------------------------------
    async def list_threads(self, principal: Principal) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            return await repo.list_threads(conn, principal.user_id)

    async def get_thread(
        self, principal: Principal, thread_id: UUID, *, with_messages: bool = False
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The thread (and its active branch when asked, each message with `siblings`, and the thread with
        `running_message_id`); NotFound when it is not the principal's."""
        async with self.pool.connection(timeout=DB_TIMEOUT_S) as conn:
            thread = await repo.get_thread(conn, principal.user_id, thread_id)
            if thread is None:
                raise NotFound(f"thread {thread_id} not found")
            if not with_messages:
                return thread, []
            running = await repo.running_message(conn, thread_id)
            messages = await repo.list_messages(conn, principal.user_id, thread_id)
            by_parent = await repo.siblings(conn, thread_id)
        for message in messages:
            message["siblings"] = by_parent.get(message["parent_id"], [message["id"]])
        return {**thread, "running_message_id": running}, messages

    async def switch_branch(self, principal: Principal, thread_id: UUID, message_id: UUID) -> None:
        """Show the branch through `message_id` (its newest descendant leaf); 409 while an answer runs."""
        async with self.pool.connection(timeout=DB_TIMEOUT_S) as conn:
            if await repo.get_thread(conn, principal.user_id, thread_id, for_update=True) is None:
                raise NotFound(f"thread {thread_id} not found")
            message = await repo.get_message(conn, principal.user_id, message_id)
            if message is None or message["thread_id"] != thread_id:
                raise NotFound(f"message {message_id} not found in thread {thread_id}")
            if await repo.running_message(conn, thread_id) is not None:
                raise Conflict(BUSY)
            await repo.set_active_leaf(conn, thread_id, await repo.newest_leaf_under(conn, message_id))

    async def running_elsewhere(self, principal: Principal, thread_id: UUID) -> bool:
        """The thread has an answer in progress that this process is not generating (another process's)."""
        async with self.pool.connection(timeout=DB_TIMEOUT_S) as conn:
            if await repo.get_thread(conn, principal.user_id, thread_id) is None:
                raise NotFound(f"thread {thread_id} not found")
            running = await repo.running_message(conn, thread_id)
        run = self.runs.running(thread_id)
        return running is not None and (run is None or run.message_id != running)

    async def stop(self, principal: Principal, thread_id: UUID) -> bool:
        """Stop the thread's answer in progress (saved incomplete); False when none runs. Here: stopped and
        saved before this returns; in another server process: at its next heartbeat (within HEARTBEAT_S)."""
        async with self.pool.connection(timeout=DB_TIMEOUT_S) as conn:
            if await repo.get_thread(conn, principal.user_id, thread_id) is None:
                raise NotFound(f"thread {thread_id} not found")
        if await self.runs.stop(thread_id):
            return True
        async with self.pool.connection(timeout=DB_TIMEOUT_S) as conn:
            await repo.expire_stale(conn, thread_id)
            return await repo.request_stop(conn, thread_id)

    async def sweep_interrupted(self) -> int:
        """Startup: answers left 'streaming' by a process that died (stale heartbeat) become incomplete."""
        async with self.pool.connection(timeout=DB_TIMEOUT_S) as conn:
            return await repo.expire_stale(conn)

    async def rename_thread(self, principal: Principal, thread_id: UUID, title: str) -> dict[str, Any]:
        async with self.pool.connection() as conn:
            thread = await repo.rename_thread(conn, principal.user_id, thread_id, title)
        if thread is None:
            raise NotFound(f"thread {thread_id} not found")
        return thread

    async def delete_thread(self, principal: Principal, thread_id: UUID) -> None:
        async with self.pool.connection() as conn:
            if await repo.get_thread(conn, principal.user_id, thread_id) is None:
                raise NotFound(f"thread {thread_id} not found")
        await self.runs.stop(thread_id)
        async with self.pool.connection() as conn:
            if not await repo.delete_thread(conn, principal.user_id, thread_id):
                raise NotFound(f"thread {thread_id} not found")
