"""A search's options, resolved once at the entry point: the request's, else the user's preferences, else the
environment's (SEARCH_MODE, FUSION, RERANK_ENABLED).

Every entry point (the chat page, /api/search, /api/rag, /v1, MCP, the CLI) asks the one request policy
(`ragchat.policy.request.RequestPolicy.check`), which calls `resolve` and hands the `SearchOptions` it returns to
the searcher, which parses nothing; the same policy applies the rerank cost cap and the rates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, get_args

from ragchat.core.errors import BadRequest
from ragchat.core.preferences import UserPreferences
from ragchat.core.search import Fusion, QueryExpansion, SearchFilters, SearchMode, SearchModeName, SearchOptions

__all__ = [
    "Asked",
    "Fusion",
    "SearchDefaults",
    "SearchMode",
    "SearchModeName",
    "SearchOptions",
    "options_of",
    "parse_expansion",
    "parse_mode",
    "resolve",
]


class SearchDefaults(Protocol):
    """The environment's defaults of a search (the settings' retrieval group has them)."""

    @property
    def search_mode(self) -> SearchMode: ...
    @property
    def fusion(self) -> Fusion: ...
    @property
    def rerank_enabled(self) -> bool: ...
    @property
    def search_limit_max(self) -> int: ...
    @property
    def query_expansion(self) -> QueryExpansion: ...


def parse_mode(value: str | SearchMode | None) -> SearchMode | None:
    """A search mode from a request or the CLI (None: not said); unknown names are a 400."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return SearchMode(str(value).strip().lower())
    except ValueError:
        raise BadRequest(f"unknown search mode {str(value)[:40]!r}: use vector, keyword or hybrid") from None


def _fusion(value: str | None) -> Fusion | None:
    if value is None:
        return None
    for name in get_args(Fusion):
        if value == name:
            return name
    raise BadRequest(f"unknown fusion {value[:40]!r}: use {', '.join(get_args(Fusion))}")


def parse_expansion(value: str | None) -> QueryExpansion | None:
    """A query expansion from a request (None: not said); unknown names are a 400."""
    if value is None or not value.strip():
        return None
    wanted = value.strip().lower()
    for name in get_args(QueryExpansion):
        if wanted == name:
            return name
    raise BadRequest(f"unknown expansion {value[:40]!r}: use {', '.join(get_args(QueryExpansion))}")


@dataclass(frozen=True)
class Asked:
    """What one request said about its search; None: it did not say."""

    mode: str | SearchMode | None = None
    fusion: str | None = None
    rerank: bool | None = None
    limit: int | None = None
    filters: SearchFilters | None = None
    expansion: str | None = None


def resolve(
    asked: Asked, preferences: UserPreferences | None, settings: SearchDefaults, default_limit: int
) -> SearchOptions:
    """The one place a search's options are decided: the request, then the user's preferences, then the
    environment. The limit is clamped to SEARCH_LIMIT_MAX; empty filters are none."""
    mode = parse_mode(asked.mode) or (preferences.search_mode if preferences else None)
    rerank = asked.rerank
    if rerank is None:
        rerank = preferences.rerank if preferences else settings.rerank_enabled
    limit = asked.limit if asked.limit is not None else default_limit
    filters = asked.filters if asked.filters is not None and asked.filters.active else None
    return SearchOptions(
        mode=mode or settings.search_mode,
        fusion=_fusion(asked.fusion) or settings.fusion,
        rerank=bool(rerank),
        limit=max(1, min(int(limit), settings.search_limit_max)),
        filters=filters,
        expansion=parse_expansion(asked.expansion) or settings.query_expansion,
    )


def options_of(settings: SearchDefaults, *, default_limit: int = 10, **asked: object) -> SearchOptions:
    """The environment's options with what `asked` overrides (no user preferences): for the evaluation, the
    benches and tests, which call the searcher directly, e.g. `options_of(settings, mode="vector", limit=3)`."""
    return resolve(Asked(**asked), None, settings, default_limit)  # pyright: ignore[reportArgumentType]
