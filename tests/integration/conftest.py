"""Fixtures shared by the chat integration tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ragchat.settings import Settings
from tests.fakes.plugin import LLMFake
from tests.support.chat import ingest_corpus
from tests.support.corpus import Corpus


@pytest.fixture
async def corpus(pool: Any, embedder: Any, settings: Settings) -> Corpus:
    """handbook.pdf, volcano.txt and bread.txt, ingested; modules define their own `corpus` with
    tests/support/corpus.py."""
    return await ingest_corpus(pool, embedder, settings)


@pytest.fixture
def start(live_app: Callable[..., Any], llm: LLMFake) -> Callable[..., Any]:
    """Start the app with its LLM provider built from settings, pointed at the parametrized fake."""

    def _start(**overrides: Any) -> Any:
        return live_app(**{**llm.settings, **overrides})

    return _start
