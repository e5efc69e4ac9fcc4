"""Chat routes: POST /api/chat (an SSE stream, see docs/SSE.md) and the threads API."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
from litestar import Controller, delete, get, patch, post
from sse_starlette import EventSourceResponse

from server.chat.faults import describe_failure
from server.chat.openai_routes import openai_router
from server.chat.rag_routes import rag
from server.chat.schemas import (
    TITLE_MAX_CHARS,
    ChatBody,
    ChatStream,
    Message,
    Thread,
    ThreadDetail,
    ThreadList,
    ThreadPatch,
)
from server.chat.service import ChatRequest, ChatService
from server.chat.sse import server_sent_events
from server.core.errors import BadRequest, ServiceUnavailable
from server.core.http import error_responses, response_spec
from server.core.principal import CredentialCheck, Principal
from server.core.search import parse_mode
from server.db.ratelimit import RateLimiter
from server.settings import SearchMode, Settings

PING_S = 15  # keep-alive comment lines, so proxies don't close a stream while the model thinks
SEND_TIMEOUT_S = 60  # a client that stops reading for this long is treated as gone


def validate_chat(body: ChatBody, settings: Settings) -> ChatRequest:
    """400s before any stream starts: empty or oversized message, unknown search mode."""
    message = body.message.replace("\x00", "").strip()
    if not message:
        raise BadRequest("message is empty")
    if len(message) > settings.chat_max_message_chars:
        raise BadRequest(
            f"message is too long ({len(message)} characters; the limit is {settings.chat_max_message_chars}, "
            "set by CHAT_MAX_MESSAGE_CHARS)"
        )
    # resolved here, so every search of the turn runs (and reports) the same mode: the request's or SEARCH_MODE
    mode = parse_mode(body.search_mode or str(settings.search_mode), SearchMode.hybrid).value
    return ChatRequest(
        message=message,
        thread_id=body.thread_id,
        document_ids=list(dict.fromkeys(body.document_ids)) if body.document_ids else None,
        collection_ids=list(dict.fromkeys(body.collection_ids)) if body.collection_ids else None,
        search_mode=mode,
        rerank=body.rerank,
    )


@post(
    "/api/chat",
    status_code=200,
    media_type="text/event-stream",
    responses={
        200: response_spec(ChatStream, "server-sent events (docs/SSE.md)", "text/event-stream"),
        **error_responses(404, 429),
    },
)
async def chat(
    data: ChatBody, chat: ChatService, principal: Principal, limiter: RateLimiter, credential_check: CredentialCheck
) -> EventSourceResponse:
    """Ask a question; the answer streams back as server-sent events (thread, tool_call, tool_result, token, done).
    The stream ends with an `error` event if the caller's session or token stops being valid meanwhile."""
    req = validate_chat(data, chat.settings)
    await limiter.hit(f"chat:{principal.user_id}", chat.settings.rate_chat_per_min, what="chat messages")
    if req.thread_id is not None:
        try:
            await chat.get_thread(principal, req.thread_id)
        except psycopg.Error as exc:
            raise ServiceUnavailable(describe_failure(exc).message) from exc
    return EventSourceResponse(
        server_sent_events(chat.events(principal, req), guard=lambda: credential_check(principal)),
        ping=PING_S,
        send_timeout=SEND_TIMEOUT_S,
    )


class ThreadController(Controller):
    path = "/api/threads"

    @get("/")
    async def list_threads(self, chat: ChatService, principal: Principal) -> ThreadList:
        """Threads, most recently active first."""
        return ThreadList(threads=[Thread.model_validate(r) for r in await chat.list_threads(principal)])

    @get("/{thread_id:uuid}", responses=error_responses(404))
    async def get_thread(self, thread_id: UUID, chat: ChatService, principal: Principal) -> ThreadDetail:
        """A thread with its messages (assistant messages carry their tool calls and exact tool results)."""
        thread, messages = await chat.get_thread(principal, thread_id, with_messages=True)
        return ThreadDetail(**Thread.model_validate(thread).model_dump(), messages=[Message.of(m) for m in messages])

    @patch("/{thread_id:uuid}", responses=error_responses(404))
    async def rename_thread(
        self, thread_id: UUID, data: ThreadPatch, chat: ChatService, principal: Principal
    ) -> Thread:
        title = " ".join(data.title.replace("\x00", "").split())
        if not title:
            raise BadRequest("title is empty")
        if len(title) > TITLE_MAX_CHARS:
            raise BadRequest(f"title is too long (at most {TITLE_MAX_CHARS} characters)")
        return Thread.model_validate(await chat.rename_thread(principal, thread_id, title))

    @delete("/{thread_id:uuid}", status_code=204, responses=error_responses(404))
    async def delete_thread(self, thread_id: UUID, chat: ChatService, principal: Principal) -> None:
        await chat.delete_thread(principal, thread_id)


def chat_handlers() -> list[Any]:
    return [chat, ThreadController, rag, openai_router()]
