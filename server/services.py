"""The process-wide clients a request handler needs, built once by the app's lifespan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from psycopg_pool import AsyncConnectionPool

from server.retrieval.embedder import Embedder
from server.settings import Settings


@dataclass
class Services:
    settings: Settings
    pool: AsyncConnectionPool
    embedder: Embedder
    llm: Any  # ollama.AsyncClient (or anything speaking its interface)
    searcher: Any = None  # server.retrieval.search.Searcher
    extras: dict[str, Any] = field(default_factory=dict)
