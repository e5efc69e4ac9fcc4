"""Build the reranker for a Searcher (the LLM reranker lives in server.retrieval.rerank)."""

from __future__ import annotations

from typing import Any

from server.retrieval.rerank import LLMReranker
from server.settings import Settings


def make_reranker(llm: Any, settings: Settings) -> LLMReranker:
    return LLMReranker(llm, settings)
