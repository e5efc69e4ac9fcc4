"""One request policy: what a request may read and how it searches, decided in one place for every door.

The chat page, /api/search, /api/search/documents, /api/rag, /v1, the MCP tools, the CLI and a thread's saved
settings are thin adapters: each parses its own body into an `Ask` (what the caller asked) and calls
`RequestPolicy.check`, which returns the `Checked` request or raises the one domain error:

- the search options: the request's, else the user's preferences, else the environment's (`core.options.resolve`);
  `documents_only` and the chat model the same way; an unknown name is a 400;
- the rerank cost cap (limit × RERANK_CANDIDATES_FACTOR ≤ RERANK_MAX_CANDIDATES, else 400), always;
- the readable ids: a document or collection the caller may not read, or that does not exist, is a 404 naming
  the kind and the ids (`readscope.sql.require_readable`), the same words from every door;
- the per-user rates (RATE_SEARCH_PER_MIN or RATE_CHAT_PER_MIN, and RATE_RERANK_CANDIDATES_PER_MIN) as `charge`
  says: 429;
- a database that does not answer while deciding: `DatabaseUnavailable` (503), mapped here and in the web error
  handler by the same `database_error`.

Built once in the composition root (`runtime.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

import psycopg
from psycopg_pool import PoolTimeout

from ragchat.core.errors import BadRequest, DatabaseUnavailable, RagchatError
from ragchat.core.options import Asked, resolve
from ragchat.core.preferences import PreferencesLookup, UserPreferences
from ragchat.core.principal import Principal
from ragchat.core.search import SearchOptions
from ragchat.db.pool import Pool
from ragchat.db.ratelimit import RateLimiter
from ragchat.readscope.sql import require_readable
from ragchat.settings import LimitSettings, LLMSettings, RetrievalSettings

__all__ = ["Ask", "Charge", "Checked", "RequestPolicy", "database_error"]

#: What a request is charged: `search` (RATE_SEARCH_PER_MIN), `question` (RATE_CHAT_PER_MIN: chat, /api/rag,
#: /v1, MCP ask and summaries), or nothing per user (`none`: the local CLI, a stdio MCP server). The rerank cap
#: applies to all three; the reranked passages are counted per user with `search` and `question`.
Charge = Literal["search", "question", "none"]


def database_error(exc: BaseException) -> RagchatError | None:
    """A database that does not answer (down, restarting, no connection to give) as the domain's 503; None
    for anything else. The web error handler uses the same mapping."""
    if isinstance(exc, DatabaseUnavailable):
        return exc
    if isinstance(exc, PoolTimeout | psycopg.OperationalError | psycopg.InterfaceError):
        return DatabaseUnavailable()
    return None


@dataclass(frozen=True)
class Ask:
    """What one request asked for; None: it did not say (the preference or the environment decides)."""

    search: Asked | None = None  # the search options asked (None: the request runs no search of its own)
    document_ids: Sequence[UUID] | None = None
    collection_ids: Sequence[UUID] | None = None
    documents_only: bool | None = None
    model: str | None = None
    default_limit: int | None = None  # passages when `search.limit` is not said (None: 10)
    charge: Charge = "none"


@dataclass(frozen=True)
class Checked:
    """The request as the policy resolved and checked it: every id readable, the rates charged."""

    options: SearchOptions | None  # None when `Ask.search` was None
    document_ids: list[UUID] | None  # deduplicated, in the order asked; None when none were asked
    collection_ids: list[UUID] | None
    documents_only: bool
    model: str | None  # the request's, else the user's when it differs from CHAT_MODEL, else None (CHAT_MODEL)


def _ids(ids: Sequence[UUID] | None) -> list[UUID] | None:
    return list(dict.fromkeys(ids)) if ids else None


class RequestPolicy:
    """The one request policy (module docstring). `preferences` and `limiter` are None where there are none."""

    def __init__(
        self,
        pool: Pool,
        retrieval: RetrievalSettings,
        limits: LimitSettings,
        llm: LLMSettings,
        preferences: PreferencesLookup | None = None,
        limiter: RateLimiter | None = None,
    ) -> None:
        self.pool = pool
        self.retrieval = retrieval
        self.limits = limits
        self.llm = llm
        self.preferences = preferences
        self.limiter = limiter

    async def check(self, principal: Principal, ask: Ask) -> Checked:
        """Resolve and check `ask` for `principal`: 400, 404, 429 or 503 as the module docstring says."""
        try:
            return await self._check(principal, ask)
        except Exception as exc:
            mapped = database_error(exc)
            if mapped is None or mapped is exc:
                raise
            raise mapped from exc

    async def _check(self, principal: Principal, ask: Ask) -> Checked:
        preferences = None
        if self.preferences is not None and (ask.search is not None or ask.charge == "question"):
            preferences = await self.preferences(principal.user_id)
        options = None
        if ask.search is not None:
            options = resolve(ask.search, preferences, self.retrieval, ask.default_limit or 10)
        candidates = self.rerank_candidates(options)
        documents, collections = _ids(ask.document_ids), _ids(ask.collection_ids)
        if documents or collections:
            async with self.pool.connection() as conn:
                await require_readable(conn, principal.user_id, documents, collections)
        await self._charge(principal, ask.charge, candidates)
        return Checked(
            options=options,
            document_ids=documents,
            collection_ids=collections,
            documents_only=self._documents_only(ask.documents_only, preferences),
            model=self._model(ask.model, preferences),
        )

    def _documents_only(self, asked: bool | None, preferences: UserPreferences | None) -> bool:
        if asked is not None:
            return bool(asked)
        return preferences.documents_only if preferences is not None else self.llm.chat_documents_only

    def _model(self, asked: str | None, preferences: UserPreferences | None) -> str | None:
        if asked and asked.strip():
            return asked.strip()
        if preferences is not None and preferences.chat_model != self.llm.chat_model:
            return preferences.chat_model
        return None

    def rerank_candidates(self, options: SearchOptions | None) -> int:
        """How many passages the LLM scores for these options (0 without rerank); over the cap: a 400. A rerank
        scores `limit × RERANK_CANDIDATES_FACTOR` passages, so that product is capped per request."""
        if options is None or not options.rerank:
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

    async def _charge(self, principal: Principal, charge: Charge, candidates: int) -> None:
        if charge == "none" or self.limiter is None:
            return
        s, who = self.limits, principal.user_id
        if charge == "search":
            await self.limiter.hit(f"search:{who}", s.rate_search_per_min, what="searches")
        else:
            await self.limiter.hit(f"chat:{who}", s.rate_chat_per_min, what="questions")
        if candidates:
            await self.limiter.hit(
                f"rerank:{who}", s.rate_rerank_candidates_per_min, cost=candidates, what="reranked passages"
            )
