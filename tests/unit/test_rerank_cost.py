"""What a chat search's LLM rerank costs at the measured speed (retrieval/rerank_cost.py): calls per method, the
seconds only once the model was measured, none for a cross-encoder server."""

from __future__ import annotations

import pytest

from ragchat.providers.llm.speed import ModelSpeed
from ragchat.retrieval.rerank_cost import rerank_cost
from ragchat.settings import RetrievalSettings

MEASURED = ModelSpeed(prompt_tps=100.0, gen_tps=10.0, answer_tokens=50.0, samples=3)


def test_json_scores_each_candidate_and_reads_a_dozen_reply_tokens() -> None:
    cost = rerank_cost(MEASURED, RetrievalSettings(rerank_candidates_factor=3, rerank_passage_chars=600), 6)
    assert (cost.calls, cost.candidates, cost.method) == (18, 18, "json")
    assert cost.seconds == pytest.approx(18 * ((600 / 3 + 24) / 100 + 12 / 10), abs=0.1)


def test_listwise_reads_a_window_of_passages_per_call() -> None:
    settings = RetrievalSettings(rerank_method="listwise", rerank_listwise_size=10, rerank_candidates_factor=3)
    cost = rerank_cost(MEASURED, settings, 6)
    assert (cost.calls, cost.candidates) == (2, 18)
    assert cost.seconds == pytest.approx(2 * ((10 * 1000 / 3 + 24) / 100 + 1 / 10), abs=0.1)


def test_no_seconds_before_the_model_was_measured_or_with_a_cross_encoder() -> None:
    assert rerank_cost(ModelSpeed(), RetrievalSettings(), 6).seconds is None
    assert rerank_cost(ModelSpeed(prompt_tps=100.0), RetrievalSettings(), 6).seconds is None
    http = RetrievalSettings(rerank_provider="http", rerank_url="http://127.0.0.1:8080")
    assert rerank_cost(MEASURED, http, 6).seconds is None
