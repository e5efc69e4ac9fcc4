"""Build the reranker for a Searcher (the LLM reranker lives in server.retrieval.rerank)."""

from __future__ import annotations

from typing import Any

from server.settings import Settings


def make_reranker(llm: Any, settings: Settings) -> Any:
    try:
        from server.retrieval.rerank import LLMReranker
    except ImportError:  # the reranker module is not part of this build yet
        return None
    return LLMReranker(llm, settings)
