"""Question generation's validation (garbage, fences, think blocks), the metrics library against metrics.py,
and the comparison table."""

from __future__ import annotations

import random

import pytest

from ragchat.evaluation.generate import QUESTION_SCHEMA, parse_question
from ragchat.evaluation.metrics import evaluate
from ragchat.evaluation.report import compare_table
from ragchat.evaluation.scoring import mean_scores, measure_names, per_query_scores
from ragchat.providers.llm.replies import clean_reply


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"question": "What makes sourdough rise?"}', "What makes sourdough rise?"),
        ('```json\n{"question": "What makes sourdough rise?"}\n```', "What makes sourdough rise?"),
        ('<think>the passage is about bread</think>{"question": "Why does bread rise?"}', "Why does bread rise?"),
        ('reasoning...</think>\n{"question": "Why does bread rise?"}', "Why does bread rise?"),
        ('Sure! Here it is: {"question": "  How   do tides   work? "} Hope that helps', "How do tides work?"),
    ],
)
def test_accepts_and_cleans(raw: str, expected: str) -> None:
    assert parse_question(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        None,
        "What makes bread rise?",  # no JSON
        '{"question": ""}',
        '{"question": "?"}',
        '{"question": "12345678 9"}',  # no words
        '{"question": 42}',
        '{"q": "What makes bread rise?"}',
        '{"question": "' + "x y " * 200 + '"}',  # too long
        '<think>{"question": "What makes bread rise?"}',  # unterminated reasoning is not an answer
        '{"question": "What makes bread rise?"',  # truncated
        "\x00\xff garbage {{{",
    ],
)
def test_rejects_garbage(raw: str | None) -> None:
    assert parse_question(raw) is None


def test_schema_and_clean() -> None:
    assert QUESTION_SCHEMA["required"] == ["question"]
    assert clean_reply('x ```json\n{"a": 1}\n``` y') == '{"a": 1}'


def test_ir_measures_agrees_with_metrics_py_on_a_fixed_run() -> None:
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(40)]
    qrels = {f"q{i}": {d: rng.choice([1, 1, 2]) for d in rng.sample(docs, rng.randint(1, 4))} for i in range(30)}
    run = {q: rng.sample(docs, 15) for q in qrels}
    run["q0"] = []  # retrieved nothing: 0, still counted in the mean
    ours = evaluate(run, qrels, (1, 5, 10))
    library = mean_scores(per_query_scores(run, qrels, (1, 5, 10)), measure_names((1, 5, 10)))
    assert library["ndcg@10"] > 0
    for name in ("ndcg@10", "mrr@10", "recall@1", "recall@5", "recall@10"):
        assert library[name] == pytest.approx(ours[name], abs=1e-6), name


def test_scoring_rejects_duplicates_and_bad_k() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        per_query_scores({"q": ["a", "a"]}, {"q": {"a": 1}}, (1,))
    with pytest.raises(ValueError, match="positive"):
        per_query_scores({"q": ["a"]}, {"q": {"a": 1}}, (0,))


def test_compare_table_deltas() -> None:
    table = compare_table([("run 1", {"hybrid ndcg@10": 0.5}), ("run 2", {"hybrid ndcg@10": 0.75, "x": 1.0})])
    row = next(line for line in table.splitlines() if line.startswith("hybrid ndcg@10"))
    assert "0.5000" in row and "0.7500" in row and "+0.2500" in row
    assert "—" in next(line for line in table.splitlines() if line.startswith("x "))


RESULTS = {
    "configs": {
        "vector": {"metrics": {"recall@1": 0.5, "ndcg@10": 0.6}, "latency_ms": {"p50": 10.0, "p95": 20.0},
                   "by_category": {"geo": {"queries": 2, "metrics": {"ndcg@10": 0.25}}}},
        "hybrid": {"metrics": {"recall@1": 0.75, "ndcg@10": 0.7}, "latency_ms": {"p50": 12.0, "p95": 30.0},
                   "by_category": {"geo": {"queries": 2, "metrics": {"ndcg@10": 0.5}}}},
    }
}  # fmt: skip


def test_tables_of_one_run() -> None:
    from ragchat.evaluation.report import config_columns, format_categories, format_results

    table = format_results(RESULTS)
    assert "hybrid" in table and "0.7500" in table and "30.0" in table
    cats = format_categories(RESULTS)
    assert "geo" in cats and "0.2500" in cats and "0.5000" in cats
    modes = compare_table(config_columns(RESULTS))  # --compare modes: hybrid against vector
    assert "+0.2500" in next(line for line in modes.splitlines() if line.startswith("recall@1"))
    assert format_categories({"configs": {}}) == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["eval"],
        ["eval", "--compare", "5"],
        ["eval", "--compare", "5", "x"],
        ["eval", "--dataset", "d", "--generate", "3"],
    ],
)
def test_cli_refuses_bad_combinations_without_opening_anything(argv: list[str]) -> None:
    from ragchat.cli import main

    assert main(argv) == 2
