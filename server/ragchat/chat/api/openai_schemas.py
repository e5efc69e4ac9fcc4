"""Request and response models of the OpenAI-compatible `/v1` routes (OpenAI's wire names and shapes)."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from ragchat.chat.schemas import AnswerVerification
from ragchat.core.schemas import Flag

MODEL_ID = "ragchat"
MAX_MESSAGES = 200


class CompletionMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None


class Completion(BaseModel):
    model_config = ConfigDict(extra="allow")  # temperature, top_p, … are accepted and ignored
    model: str = MODEL_ID
    messages: list[CompletionMessage] = Field(max_length=MAX_MESSAGES)
    stream: Flag = False
    documents_only: Flag | None = Field(
        default=None, description="ragchat's extension: refuse when nothing matches well (default: your preference)"
    )
    document_ids: list[UUID] | None = Field(
        default=None, max_length=500, description="ragchat's extension: search only these documents"
    )
    collection_ids: list[UUID] | None = Field(
        default=None, max_length=100, description="ragchat's extension: search only these collections"
    )


class Model(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "ragchat"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: str = "stop"


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class CompletionSource(BaseModel):
    n: int
    document_id: UUID
    filename: str
    title: str
    page: int | None
    section: str | None
    score: float
    content: str


class ChatCompletion(BaseModel):
    """OpenAI's chat.completion, plus `sources` (the passages the answer's [n] refer to)."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage
    sources: list[CompletionSource]
    verification: AnswerVerification | None = Field(
        default=None, description="ragchat's extension (OpenAI clients ignore it): per-sentence verdicts, coverage"
    )


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str = Field(description="invalid_request_error, authentication_error or server_error")
    code: str
    request_id: str


class OpenAIError(BaseModel):
    """Errors of the /v1 routes, in OpenAI's shape (what its clients parse)."""

    error: OpenAIErrorDetail
