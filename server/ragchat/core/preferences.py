"""A user's effective settings (their Settings-page choices over the environment's defaults), as the
domains see them. The preferences package stores them; the composition root hands the lookup to the routes
and services that apply them (chat, uploads, ingestion), so no domain imports another."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from uuid import UUID

from ragchat.core.search import SearchMode


@dataclass(frozen=True)
class UserPreferences:
    """What one user's requests default to when they do not say."""

    chat_model: str
    search_mode: SearchMode
    rerank: bool
    chunk_strategy: str  # auto | line | sentence | semantic
    metadata_extraction: bool
    theme: str  # light | dark | system (the web client applies it)
    documents_only: bool = False  # refuse rather than answer from the model's own knowledge


#: The effective preferences of a user (by id).
PreferencesLookup = Callable[[UUID], Awaitable[UserPreferences]]

#: The users who chose `metadata_extraction` = the given value on their own page (their choice overrides the
#: environment's METADATA_EXTRACTION for their documents).
ChoseMetadataExtraction = Callable[[bool], Awaitable[list[UUID]]]
