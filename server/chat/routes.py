"""Chat routes: POST /api/chat (an SSE stream, see docs/SSE.md) and the threads API."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
from litestar import Controller, delete, get, patch, post
from pydantic import BaseModel
from sse_starlette import EventSourceResponse

from server.chat.faults import describe_failure
from server.chat.openai_routes import openai_router
from server.chat.rag_routes import rag
from server.chat.service import ChatRequest, ChatService
from server.chat.sse import server_sent_events
from server.core.errors import BadRequest, ServiceUnavailable
from server.core.principal import CredentialCheck, Principal
from server.core.search import parse_mode
from server.db.ratelimit import RateLimiter
from server.settings import SearchMode, Settings

PING_S = 15  # keep-alive comment lines, so proxies don't close a stream while the model thinks
SEND_TIMEOUT_S = 60  # a client that stops reading for this long is treated as gone
TITLE_MAX_CHARS = 200


class ChatBody(BaseModel):
    message: str
    thread_id: UUID | None = None
    document_ids: list[UUID] | None = None
    collection_ids: list[UUID] | None = None
    search_mode: str | None = None
    rerank: bool | None = None


class ThreadPatch(BaseModel):
    title: str


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


@post("/api/chat", status_code=200, media_type="text/event-stream")
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


def thread_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "title": row["title"],
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(),
    }


def message_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "role": row["role"],
        "content": row["content"],
        "status": row["status"],
        "tool_calls": row["tool_calls"],
        "tool_results": row["tool_results"],
        "error": row["error"],
        "created_at": row["created_at"].isoformat(),
    }


class ThreadController(Controller):
    path = "/api/threads"

    @get("/")
    async def list_threads(self, chat: ChatService, principal: Principal) -> dict[str, Any]:
        """Threads, most recently active first."""
        return {"threads": [thread_json(r) for r in await chat.list_threads(principal)]}

    @get("/{thread_id:uuid}")
    async def get_thread(self, thread_id: UUID, chat: ChatService, principal: Principal) -> dict[str, Any]:
        """A thread with its messages (assistant messages carry their tool calls and exact tool results)."""
        thread, messages = await chat.get_thread(principal, thread_id, with_messages=True)
        return {**thread_json(thread), "messages": [message_json(m) for m in messages]}

    @patch("/{thread_id:uuid}")
    async def rename_thread(
        self, thread_id: UUID, data: ThreadPatch, chat: ChatService, principal: Principal
    ) -> dict[str, Any]:
        title = " ".join(data.title.replace("\x00", "").split())
        if not title:
            raise BadRequest("title is empty")
        if len(title) > TITLE_MAX_CHARS:
            raise BadRequest(f"title is too long (at most {TITLE_MAX_CHARS} characters)")
        return thread_json(await chat.rename_thread(principal, thread_id, title))

    @delete("/{thread_id:uuid}", status_code=204)
    async def delete_thread(self, thread_id: UUID, chat: ChatService, principal: Principal) -> None:
        await chat.delete_thread(principal, thread_id)


def chat_handlers() -> list[Any]:
    return [chat, ThreadController, rag, openai_router()]
