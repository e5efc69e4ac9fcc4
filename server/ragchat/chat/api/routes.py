"""Chat routes: POST /api/chat (an SSE stream, see docs/SSE.md), attaching to and stopping an answer in
progress, and the threads API."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
from litestar import Controller, Request, delete, get, patch, post
from litestar.openapi.datastructures import ResponseSpec
from sse_starlette import EventSourceResponse
from starlette.responses import Response

from ragchat.chat.api.openai_routes import openai_router
from ragchat.chat.api.rag_routes import rag
from ragchat.chat.api.sse import run_events
from ragchat.chat.engine.faults import describe_failure
from ragchat.chat.runs import Run
from ragchat.chat.schemas import (
    BranchBody,
    ChatBody,
    ChatStream,
    Message,
    Stopped,
    Thread,
    ThreadDetail,
    ThreadList,
    ThreadPatch,
    check_task,
)
from ragchat.chat.service import ChatRequest, ChatService
from ragchat.chat.store.actions import update_thread
from ragchat.core.errors import BadRequest, Conflict, DatabaseUnavailable
from ragchat.core.http import error_responses, response_spec
from ragchat.core.options import Asked, SearchOptions, SearchPolicy
from ragchat.core.preferences import PreferencesLookup, UserPreferences
from ragchat.core.principal import CredentialCheck, Principal
from ragchat.db.ratelimit import RateLimiter
from ragchat.readscope.sql import require_readable
from ragchat.settings import Settings

PING_S = 15  # keep-alive comment lines, so proxies don't close a stream while the model thinks
SEND_TIMEOUT_S = 60  # a client that stops reading for this long is treated as gone
NOTHING_RUNNING = Response(status_code=204)


def validate_chat(
    body: ChatBody, settings: Settings, options: SearchOptions, preferences: UserPreferences | None = None
) -> ChatRequest:
    """400s before any stream starts: empty or oversized message, unknown search mode, wrong combinations of
    regenerate_id / continue_id / edit_id. What the body omits comes from the user's preferences; `options`
    were resolved from the body by the search policy, so every search of the turn runs (and reports) them."""
    message = body.message.replace("\x00", "").strip()
    targets = [name for name in ("regenerate_id", "continue_id", "edit_id") if getattr(body, name) is not None]
    if len(targets) > 1:
        raise BadRequest(f"at most one of regenerate_id, continue_id and edit_id (got {', '.join(targets)})")
    if targets and body.thread_id is None:
        raise BadRequest(f"{targets[0]} needs the thread_id of its thread")
    if targets and targets[0] != "edit_id":
        message = ""  # the question is the saved one
    elif not message:
        raise BadRequest("message is empty" + (" (the edited question)" if targets else ""))
    if len(message) > settings.chat_max_message_chars:
        raise BadRequest(
            f"message is too long ({len(message)} characters; the limit is {settings.chat_max_message_chars}, "
            "set by CHAT_MAX_MESSAGE_CHARS)"
        )
    check_task(body.task, body.document_ids, "document_ids")
    model = body.model.strip() if body.model else None
    if model is None and preferences is not None and preferences.chat_model != settings.chat_model:
        model = preferences.chat_model
    return ChatRequest(
        message=message,
        thread_id=body.thread_id,
        document_ids=list(dict.fromkeys(body.document_ids)) if body.document_ids else None,
        collection_ids=list(dict.fromkeys(body.collection_ids)) if body.collection_ids else None,
        options=options,
        model=model,
        regenerate_id=body.regenerate_id,
        continue_id=body.continue_id,
        edit_id=body.edit_id,
        documents_only=bool(
            body.documents_only
            if body.documents_only is not None
            else (preferences.documents_only if preferences is not None else settings.chat_documents_only)
        ),
        task=body.task,
    )


def _stream(run: Run, after: int = 0, *, seed: bool = False) -> EventSourceResponse:
    return EventSourceResponse(run_events(run, after, seed=seed), ping=PING_S, send_timeout=SEND_TIMEOUT_S)


def _after(run: Run, last_event_id: str | None) -> int:
    """The sequence number a `Last-Event-ID` (`<message_id>:<seq>`) names in `run`; 0 for another answer's."""
    if not last_event_id:
        return 0
    message_id, _, seq = last_event_id.strip().partition(":")
    if not seq.isdigit() or len(seq) > 12:
        raise BadRequest("Last-Event-ID (or after) must be <message_id>:<seq>, as sent in the event ids")
    return int(seq) if message_id == str(run.message_id) else 0


@post(
    "/api/chat",
    status_code=200,
    media_type="text/event-stream",
    responses={
        200: response_spec(ChatStream, "server-sent events (docs/SSE.md)", "text/event-stream"),
        **error_responses(400, 404, 409, 429, 503),
    },
)
async def chat(
    data: ChatBody,
    chat: ChatService,
    principal: Principal,
    limiter: RateLimiter,
    credential_check: CredentialCheck,
    user_preferences: PreferencesLookup,
    search_policy: SearchPolicy,
) -> EventSourceResponse:
    """Ask a question (or regenerate, continue, edit); the answer streams back as server-sent events (thread,
    tool_call, tool_result, token, done). The answer is generated by a run that outlives this request: a
    client that goes away can attach again (GET /api/threads/{id}/stream). 409 while the thread has an answer
    in progress. The answer stops with an `error` event if the caller's session or token stops being valid."""
    try:
        preferences = await user_preferences(principal.user_id)
    except psycopg.Error as exc:
        raise DatabaseUnavailable(describe_failure(exc).message) from exc
    asked = Asked(mode=data.search_mode, rerank=data.rerank)
    limit = chat.settings.chat_search_limit
    options = await search_policy.resolve(principal, asked, default_limit=limit, charge="none", preferences=preferences)
    req = validate_chat(data, chat.settings, options, preferences)
    try:
        async with chat.pool.connection() as conn:  # an id the caller cannot read: 404 before any stream starts
            await require_readable(conn, principal.user_id, req.document_ids, req.collection_ids)
    except psycopg.Error as exc:
        raise DatabaseUnavailable(describe_failure(exc).message) from exc
    await limiter.hit(f"chat:{principal.user_id}", chat.settings.rate_chat_per_min, what="chat messages")
    await search_policy.charge(principal, options, "rerank")
    try:
        run = await chat.start(principal, req, guard=lambda: credential_check(principal))
    except psycopg.Error as exc:
        raise DatabaseUnavailable(describe_failure(exc).message) from exc
    return _stream(run)


@get(
    "/api/threads/{thread_id:uuid}/stream",
    status_code=200,
    media_type="text/event-stream",
    responses={
        200: response_spec(ChatStream, "server-sent events (docs/SSE.md)", "text/event-stream"),
        204: ResponseSpec(None, description="no answer is in progress in this thread"),
        **error_responses(400, 404, 409),
    },
)
async def attach(
    thread_id: UUID, request: Request[Any, Any, Any], chat: ChatService, principal: Principal, after: str | None = None
) -> EventSourceResponse:
    """Attach to the thread's answer in progress: the events after `Last-Event-ID` (or `?after=`), then live
    ones until done or error. 204 when nothing is running; 409 when another server process generates it."""
    try:
        if await chat.running_elsewhere(principal, thread_id):
            raise Conflict("this answer is being generated by another server process: route /stream by thread")
    except psycopg.Error as exc:
        raise DatabaseUnavailable(describe_failure(exc).message) from exc
    run = chat.runs.get(thread_id)
    last = request.headers.get("last-event-id") or after
    if run is None or (run.finished and not last):
        return NOTHING_RUNNING  # type: ignore[return-value]  # an ASGI response, as EventSourceResponse is
    seq = _after(run, last)
    if run.finished and seq >= run.head:
        return NOTHING_RUNNING  # type: ignore[return-value]
    return _stream(run, seq, seed=True)


@post("/api/threads/{thread_id:uuid}/stop", status_code=200, responses=error_responses(404))
async def stop(thread_id: UUID, chat: ChatService, principal: Principal) -> Stopped:
    """Stop the thread's answer in progress; it is saved incomplete ("Stopped — this answer is incomplete.")."""
    return Stopped(stopped=await chat.stop(principal, thread_id))


class ThreadController(Controller):
    path = "/api/threads"

    @get("/")
    async def list_threads(self, chat: ChatService, principal: Principal) -> ThreadList:
        """Threads, most recently active first."""
        return ThreadList(threads=[Thread.model_validate(r) for r in await chat.list_threads(principal)])

    @get("/{thread_id:uuid}", responses=error_responses(404))
    async def get_thread(self, thread_id: UUID, chat: ChatService, principal: Principal) -> ThreadDetail:
        """A thread with its messages (assistant messages carry their tool calls and exact tool results)."""
        return await _detail(chat, principal, thread_id)

    @post("/{thread_id:uuid}/branch", status_code=200, responses=error_responses(404, 409))
    async def switch_branch(
        self, thread_id: UUID, data: BranchBody, chat: ChatService, principal: Principal
    ) -> ThreadDetail:
        """Show the branch through `message_id` (its newest descendant leaf); 409 while an answer runs."""
        await chat.switch_branch(principal, thread_id, data.message_id)
        return await _detail(chat, principal, thread_id)

    @patch("/{thread_id:uuid}", responses=error_responses(400, 404))
    async def rename_thread(
        self, thread_id: UUID, data: ThreadPatch, chat: ChatService, principal: Principal
    ) -> Thread:
        """Rename the thread and/or replace its saved settings (neither moves it up the list)."""
        return Thread.model_validate(await update_thread(chat.pool, principal, thread_id, data))

    @delete("/{thread_id:uuid}", status_code=204, responses=error_responses(404))
    async def delete_thread(self, thread_id: UUID, chat: ChatService, principal: Principal) -> None:
        await chat.delete_thread(principal, thread_id)


async def _detail(chat: ChatService, principal: Principal, thread_id: UUID) -> ThreadDetail:
    thread, messages = await chat.get_thread(principal, thread_id, with_messages=True)
    return ThreadDetail(
        **Thread.model_validate(thread).model_dump(),
        messages=[Message.of(m) for m in messages],
        running_message_id=thread["running_message_id"],
    )


def chat_handlers() -> list[Any]:
    return [chat, attach, stop, ThreadController, rag, openai_router()]
