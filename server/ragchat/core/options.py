"""A search's options, resolved once at the entry point: the request's, else the user's preferences, else the
environment's (SEARCH_MODE, FUSION, RERANK_ENABLED).

Every entry point (the chat page, /api/search, /api/rag, /v1, MCP, the CLI) calls `SearchPolicy.resolve` and
hands the `SearchOptions` it returns to the searcher, which parses nothing. The rerank cost cap is part of the
same policy, so every entry point applies it: a rerank scores `limit × RERANK_CANDIDATES_FACTOR` passages with
the LLM, so that product is capped per request (400) and, where requests are rate-limited, counted per minute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from ragchat.core.errors import BadRequest
from ragchat.core.preferences import PreferencesLookup, UserPreferences
from ragchat.core.principal import Principal
from ragchat.core.search import SearchFilters, SearchOptions
from ragchat.settings import Fusion, LimitSettings, QueryExpansion, RetrievalSettings, SearchMode, SearchModeName

__all__ = [
    "Asked",
    "Charge",
    "Fusion",
    "SearchMode",
    "SearchModeName",
    "SearchOptions",
    "SearchPolicy",
    "options_of",
    "parse_expansion",
    "parse_mode",
    "resolve",
]

#: what an entry point charges: a search (the search rate and the rerank cost), a rerank only (chat and the
#: answer routes count questions at their own rate), or nothing (the local CLI and a stdio MCP server).
Charge = Literal["search", "rerank", "none"]


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
    asked: Asked, preferences: UserPreferences | None, settings: RetrievalSettings, default_limit: int
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


class Limiter(Protocol):
    async def hit(self, key: str, limit: int, *, cost: int = 1, window_s: int = 60, what: str = "requests") -> None:
        """Count `cost` against `key`'s limit per window; over it: a 429."""
        ...


class SearchPolicy:
    """`resolve` with the caller's preferences looked up, and the cost cap applied. Built once (runtime)."""

    def __init__(
        self,
        retrieval: RetrievalSettings,
        limits: LimitSettings,
        preferences: PreferencesLookup | None,
        limiter: Limiter | None,
    ) -> None:
        self.retrieval = retrieval
        self.limits = limits
        self.preferences = preferences
        self.limiter = limiter

    async def resolve(
        self,
        principal: Principal,
        asked: Asked,
        *,
        default_limit: int = 10,
        charge: Charge = "search",
        preferences: UserPreferences | None = None,
    ) -> SearchOptions:
        """`preferences`: the caller's, when the entry point has looked them up already (else looked up here)."""
        if preferences is None and self.preferences is not None:
            preferences = await self.preferences(principal.user_id)
        options = resolve(asked, preferences, self.retrieval, default_limit)
        await self.charge(principal, options, charge)
        return options

    def rerank_candidates(self, options: SearchOptions) -> int:
        """How many passages the LLM scores for these options (0 without rerank); over the cap: a 400."""
        if not options.rerank:
            return 0
        cap = self.limits.rerank_max_candidates
        factor = max(1, self.retrieval.rerank_candidates_factor)
        candidates = options.limit * factor
        if candidates > cap:
            most = max(1, cap // factor)
            raise BadRequest(
                f"rerank scores limit × {factor} passages with the LLM: with rerank the limit is at most {most} "
                f"(RERANK_MAX_CANDIDATES={cap})"
            )
        return candidates

    async def charge(self, principal: Principal, options: SearchOptions, charge: Charge) -> None:
        """The per-request cap always; the per-user rates when `charge` says so (and a limiter is set)."""
        candidates = self.rerank_candidates(options)
        if charge == "none" or self.limiter is None:
            return
        s, who = self.limits, principal.user_id
        if charge == "search":
            await self.limiter.hit(f"search:{who}", s.rate_search_per_min, what="searches")
        if candidates:
            await self.limiter.hit(
                f"rerank:{who}", s.rate_rerank_candidates_per_min, cost=candidates, what="reranked passages"
            )


def options_of(settings: RetrievalSettings, *, default_limit: int = 10, **asked: object) -> SearchOptions:
    """The environment's options with what `asked` overrides (no user preferences): for the evaluation, the
    benches and tests, which call the searcher directly, e.g. `options_of(settings, mode="vector", limit=3)`."""
    return resolve(Asked(**asked), None, settings, default_limit)  # pyright: ignore[reportArgumentType]
