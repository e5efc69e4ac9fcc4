"""Message actions and what the chat's controls need: feedback (set, exported), a thread as a file, the
LLM server's models."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from litestar import Response, get, put
from litestar.params import Parameter

from ragchat.chat.api.export import export_filename, thread_json, thread_markdown
from ragchat.chat.schemas import ChatModel, ChatModels, Feedback, FeedbackBody
from ragchat.chat.service import ChatService
from ragchat.chat.store.actions import feedback_csv, feedback_jsonl, feedback_rows, set_feedback
from ragchat.core.errors import ServiceUnavailable
from ragchat.core.ownership import UserNames
from ragchat.core.preferences import PreferencesLookup
from ragchat.core.principal import Principal
from ragchat.httpapi.http import error_responses, file_download
from ragchat.providers.llm.base import LLMError

MODELS_TIMEOUT_S = 5.0


def _attachment(body: str, filename: str, media_type: str) -> Response[str]:
    return Response(
        body,
        media_type=media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"},
    )


@put("/api/messages/{message_id:uuid}/feedback", responses=error_responses(400, 404))
async def put_feedback(message_id: UUID, data: FeedbackBody, chat: ChatService, principal: Principal) -> Feedback:
    """Rate an answer up or down (null: no rating) with an optional note (2,000 characters at most)."""
    return Feedback.model_validate(await set_feedback(chat.pool, principal, message_id, data))


@get(
    "/api/feedback/export",
    responses=error_responses(400, 403),
    operation_class=file_download("application/x-ndjson", "text/csv"),
)
async def export_feedback(
    chat: ChatService,
    principal: Principal,
    user_names: UserNames,
    format: Literal["jsonl", "csv"] = "jsonl",
    everyone: Annotated[bool, Parameter(query="all", description="admins: every user's feedback")] = False,
) -> Response[str]:
    """Your rated answers with their question, thread and model, as JSON lines or CSV (an attachment)."""
    rows = await feedback_rows(chat.pool, principal, user_names, everyone=everyone)
    stamp = datetime.now(UTC).strftime("%Y%m%d")
    if format == "csv":
        return _attachment(feedback_csv(rows), f"ragchat-feedback-{stamp}.csv", "text/csv")
    return _attachment(feedback_jsonl(rows), f"ragchat-feedback-{stamp}.jsonl", "application/x-ndjson")


@get(
    "/api/threads/{thread_id:uuid}/export",
    responses=error_responses(404),
    operation_class=file_download("text/markdown", "application/json"),
)
async def export_thread(
    thread_id: UUID, chat: ChatService, principal: Principal, format: Literal["markdown", "json"] = "markdown"
) -> Response[str]:
    """The thread's active branch as Markdown or JSON: questions, answers, sources, citation checks."""
    thread, messages = await chat.get_thread(principal, thread_id, with_messages=True)
    name = export_filename(str(thread.get("title") or ""), format)
    if format == "json":
        return _attachment(thread_json(thread, messages), name, "application/json")
    return _attachment(thread_markdown(thread, messages), name, "text/markdown")


@get("/api/models", responses=error_responses(503))
async def list_models(chat: ChatService, principal: Principal, user_preferences: PreferencesLookup) -> ChatModels:
    """The models the LLM server offers (Ollama /api/tags, OpenAI /v1/models); 503 when it does not answer."""
    try:
        infos = await asyncio.wait_for(chat.llm.list_models(), MODELS_TIMEOUT_S)
    except LLMError as exc:
        raise ServiceUnavailable(exc.message) from exc
    except TimeoutError as exc:
        raise ServiceUnavailable(f"the LLM server did not list its models within {MODELS_TIMEOUT_S:g} s") from exc
    preferences = await user_preferences(principal.user_id)
    return ChatModels(
        models=[ChatModel(name=m.name, size=m.size, family=m.family) for m in infos],
        default=preferences.chat_model,
        provider="openai" if chat.llm.name == "openai" else "ollama",
    )


def action_handlers() -> list[Any]:
    return [put_feedback, export_feedback, export_thread, list_models]
