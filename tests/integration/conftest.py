"""Fixtures shared by the chat integration tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest
from ragchat.settings import Settings

from tests.fakes.plugin import LLMFake
from tests.support.chat import ingest_corpus


@pytest.fixture
async def corpus(pool: Any, embedder: Any, settings: Settings) -> dict[str, UUID]:
    """handbook.pdf, volcano.txt and bread.txt, ingested (modules may define their own `corpus`)."""
    return await ingest_corpus(pool, embedder, settings)


@pytest.fixture
def start(live_app: Callable[..., Any], llm: LLMFake) -> Callable[..., Any]:
    """Start the app with its LLM provider built from settings, pointed at the parametrized fake."""

    def _start(**overrides: Any) -> Any:
        return live_app(**{**llm.settings, **overrides})

    return _start
