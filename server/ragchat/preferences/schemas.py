"""Request and response models of GET/PUT /api/preferences (a user's Settings page; /api/settings is an alias)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ragchat.core.options import SearchModeName
from ragchat.core.schemas import Flag

ChunkStrategy = Literal["auto", "line", "sentence", "semantic"]
Theme = Literal["light", "dark", "system"]
MODEL_NAME_MAX = 200
MODEL_NAME_PATTERN = r"^[^\x00-\x1f]*[^\s\x00-\x1f][^\x00-\x1f]*$"  # not blank, no control characters


class PreferenceValues(BaseModel):
    """What a user may change without touching the server's environment."""

    chat_model: str = Field(description="the chat model answers use when the request names none")
    search_mode: SearchModeName = Field(description="the chat's search mode when the request names none")
    rerank: bool = Field(description="rerank chat searches with the LLM when the request does not say")
    chunk_strategy: ChunkStrategy = Field(description="how uploads are chunked when the upload does not say")
    metadata_extraction: bool = Field(description="extract titles, topics… from new documents with the LLM")
    theme: Theme = Field(description="the web client's colours")
    documents_only: bool = Field(
        default=False,
        description="when the documents do not cover a question, say so instead of answering from the model's "
        "own knowledge (a thread may override it)",
    )


class PreferencesPatch(BaseModel):
    """PUT /api/preferences: only the fields sent change; `null` puts a field back to the environment's default."""

    model_config = ConfigDict(extra="forbid")

    chat_model: str | None = Field(default=None, min_length=1, max_length=MODEL_NAME_MAX, pattern=MODEL_NAME_PATTERN)
    search_mode: SearchModeName | None = None
    rerank: Flag | None = None
    chunk_strategy: ChunkStrategy | None = None
    metadata_extraction: Flag | None = None
    theme: Theme | None = None
    documents_only: Flag | None = None


class PreferencesView(BaseModel):
    values: PreferenceValues = Field(description="what applies to this user now")
    defaults: PreferenceValues = Field(description="the environment's values (CHAT_MODEL, SEARCH_MODE…)")
    restart_required: list[str] = Field(
        description="settings whose change takes effect only after the server restarts (none today)"
    )
