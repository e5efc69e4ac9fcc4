"""Hand-computed checks for ragchat.evaluation.metrics (trec_eval / pytrec_eval / BEIR conventions)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pytest

from ragchat.evaluation.metrics import (
    DEFAULT_KS,
    dedup_keep_first,
    evaluate,
    mrr_at_k,
    ndcg_at_k,
    percentiles,
    precision_at_k,
    recall_at_k,
)

Metric = Callable[[Sequence[str], Mapping[str, int], int], float]

LOG2_3 = math.log2(3)  # 1.5849625007211562; 1 / LOG2_3 = 0.6309297535714575

# Shared example: ranked [d3, d1, d2], graded qrels {d1: 1, d2: 2}.
RANKED = ["d3", "d1", "d2"]
RELS = {"d1": 1, "d2": 2}


# --------------------------------------------------------------------------------------------- nDCG


def test_ndcg_at_3_graded_example() -> None:
    # DCG@3  = 0/log2(2) + 1/log2(3) + 2/log2(4) = 0 + 0.6309298 + 1.0 = 1.6309298
    # IDCG@3 = ideal order [d2 (2), d1 (1)] = 2/log2(2) + 1/log2(3) = 2 + 0.6309298 = 2.6309298
    # nDCG@3 = 1.6309298 / 2.6309298 = 0.6199062
    dcg = 0 / 1 + 1 / LOG2_3 + 2 / 2
    idcg = 2 / 1 + 1 / LOG2_3
    assert dcg == pytest.approx(1.6309297535714575)
    assert idcg == pytest.approx(2.6309297535714575)
    assert ndcg_at_k(RANKED, RELS, 3) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(RANKED, RELS, 3) == pytest.approx(0.6199062, abs=1e-7)


def test_ndcg_cutoff_applies_to_run_and_ideal() -> None:
    # k=1: DCG@1 = 0 (d3 unjudged)                                  -> 0
    assert ndcg_at_k(RANKED, RELS, 1) == 0.0
    # k=2: DCG@2 = 0 + 1/log2(3) = 0.6309298; IDCG@2 = 2 + 1/log2(3) = 2.6309298
    #      nDCG@2 = 0.6309298 / 2.6309298 = 0.2398125
    assert ndcg_at_k(RANKED, RELS, 2) == pytest.approx((1 / LOG2_3) / (2 + 1 / LOG2_3))
    assert ndcg_at_k(RANKED, RELS, 2) == pytest.approx(0.2398125, abs=1e-7)


def test_ndcg_ideal_is_cut_at_k_even_with_more_relevant_docs() -> None:
    # qrels has 3 relevant docs, k=1: IDCG@1 = 1/log2(2) = 1 (only the best one fits); run [a] -> DCG@1 = 1
    assert ndcg_at_k(["a"], {"a": 1, "b": 1, "c": 1}, 1) == 1.0
    # k=2, run [a, x]: DCG@2 = 1; IDCG@2 = 1 + 1/log2(3) = 1.6309298 -> 0.6131472
    assert ndcg_at_k(["a", "x"], {"a": 1, "b": 1, "c": 1}, 2) == pytest.approx(1 / (1 + 1 / LOG2_3))


def test_ndcg_k_larger_than_list_equals_full_list() -> None:
    # Only 3 documents retrieved; missing ranks 4..10 add nothing to DCG, and the ideal has only 2 docs.
    assert ndcg_at_k(RANKED, RELS, 10) == pytest.approx(ndcg_at_k(RANKED, RELS, 3))
    assert ndcg_at_k(RANKED, RELS, 100) == pytest.approx(0.6199062, abs=1e-7)


def test_ndcg_graded_uses_linear_gain() -> None:
    # Best order [d2, d1]: DCG = 2/1 + 1/log2(3) = IDCG -> 1.0
    assert ndcg_at_k(["d2", "d1"], RELS, 10) == pytest.approx(1.0)
    # Swapped [d1, d2]: DCG = 1/1 + 2/log2(3) = 1 + 1.2618595 = 2.2618595
    #                   nDCG = 2.2618595 / 2.6309298 = 0.8597187
    # (exponential gain 2^rel - 1 would give (1 + 3/log2(3)) / (3 + 1/log2(3)) = 0.7967 instead)
    swapped = ndcg_at_k(["d1", "d2"], RELS, 10)
    assert swapped == pytest.approx((1 + 2 / LOG2_3) / (2 + 1 / LOG2_3))
    assert swapped == pytest.approx(0.8597187, abs=1e-7)
    assert swapped != pytest.approx((1 + 3 / LOG2_3) / (3 + 1 / LOG2_3))


def test_ndcg_no_relevant_retrieved_is_zero() -> None:
    assert ndcg_at_k(["x", "y", "z"], RELS, 10) == 0.0
    assert ndcg_at_k([], RELS, 10) == 0.0


def test_ndcg_zero_and_negative_judgements_add_no_gain() -> None:
    # d1 judged 0 (or -1) is non-relevant: DCG = 0 + 1/log2(3); IDCG = 1 (only d2) -> 0.6309298
    assert ndcg_at_k(["d1", "d2"], {"d1": 0, "d2": 1}, 10) == pytest.approx(1 / LOG2_3)
    assert ndcg_at_k(["d1", "d2"], {"d1": -1, "d2": 1}, 10) == pytest.approx(1 / LOG2_3)


def test_query_without_relevant_judgements_scores_zero() -> None:
    rels = {"d1": 0}
    for metric in (ndcg_at_k, mrr_at_k, recall_at_k, precision_at_k):
        assert metric(["d1"], rels, 5) == 0.0
        assert metric(["d1"], {}, 5) == 0.0


# ---------------------------------------------------------------------------------------------- MRR


def test_mrr_first_relevant_rank() -> None:
    # [d3, d1, d2]: first relevant (d1) at rank 2 -> 1/2; d2 at rank 3 does not matter.
    assert mrr_at_k(RANKED, RELS, 10) == 0.5
    # Relevant only at rank 3 -> 1/3
    assert mrr_at_k(["x", "y", "d1"], RELS, 3) == pytest.approx(1 / 3)
    # ... but outside the cutoff at k=2 -> 0
    assert mrr_at_k(["x", "y", "d1"], RELS, 2) == 0.0
    # Relevant at rank 1 -> 1
    assert mrr_at_k(["d2", "x"], RELS, 1) == 1.0


def test_mrr_ignores_grade_and_zero_judgements() -> None:
    # d1 is judged 0 -> not relevant; first relevant is d2 at rank 2 -> 1/2 (its grade 5 does not matter)
    assert mrr_at_k(["d1", "d2"], {"d1": 0, "d2": 5}, 10) == 0.5
    assert mrr_at_k(["x", "y"], RELS, 10) == 0.0


# ------------------------------------------------------------------------------------------- Recall


def test_recall_counts_relevant_in_top_k_over_all_relevant() -> None:
    rels = {"d1": 1, "d2": 2, "d4": 1, "d5": 0}  # 3 relevant docs (d5 judged non-relevant)
    # top1 [d3] -> 0/3; top2 [d3, d1] -> 1/3; top3 [d3, d1, d2] -> 2/3
    assert recall_at_k(RANKED, rels, 1) == 0.0
    assert recall_at_k(RANKED, rels, 2) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, rels, 3) == pytest.approx(2 / 3)
    # k larger than the list: still 2 of 3 found
    assert recall_at_k(RANKED, rels, 100) == pytest.approx(2 / 3)
    # grade does not matter for recall: the 2 relevant of RELS are both in the top 3 -> 2/2
    assert recall_at_k(RANKED, RELS, 3) == 1.0


def test_recall_no_relevant_retrieved_is_zero() -> None:
    assert recall_at_k(["x", "y"], RELS, 10) == 0.0


# ---------------------------------------------------------------------------------------- Precision


def test_precision_uses_k_in_denominator() -> None:
    # top3 [d3, d1, d2] holds 2 relevant -> 2/3
    assert precision_at_k(RANKED, RELS, 3) == pytest.approx(2 / 3)
    # top1 [d3] -> 0/1
    assert precision_at_k(RANKED, RELS, 1) == 0.0
    # k=10 but only 3 retrieved: still divided by k (trec_eval P_10) -> 2/10
    assert precision_at_k(RANKED, RELS, 10) == pytest.approx(0.2)
    assert precision_at_k(RANKED, RELS, 100) == pytest.approx(0.02)


# --------------------------------------------------------------------------------------- validation


@pytest.mark.parametrize("metric", [ndcg_at_k, mrr_at_k, recall_at_k, precision_at_k])
@pytest.mark.parametrize("k", [0, -1])
def test_k_must_be_positive(metric: Metric, k: int) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        metric(RANKED, RELS, k)


@pytest.mark.parametrize("metric", [ndcg_at_k, mrr_at_k, recall_at_k, precision_at_k])
def test_duplicates_in_top_k_are_rejected(metric: Metric) -> None:
    with pytest.raises(ValueError, match="dedup_keep_first"):
        metric(["d1", "d1", "d2"], RELS, 3)


# -------------------------------------------------------------------------------------------- dedup


def test_dedup_keep_first_preserves_first_occurrence_order() -> None:
    assert dedup_keep_first(["d2", "d1", "d2", "d3", "d1"]) == ["d2", "d1", "d3"]
    assert dedup_keep_first([]) == []
    assert dedup_keep_first(iter(["a", "a"])) == ["a"]


def test_dedup_makes_a_relevant_document_count_once() -> None:
    # Chunk-level hits map to documents d1, d1, d1, d2 -> documents [d1, d2].
    chunk_docs = ["d1", "d1", "d1", "d2"]
    docs = dedup_keep_first(chunk_docs)
    assert docs == ["d1", "d2"]
    # qrels {d1: 1, d9: 1}: recall@3 = 1/2 (not 3/2); precision@3 = 1/3; nDCG@3 = 1 / (1 + 1/log2(3))
    rels = {"d1": 1, "d9": 1}
    assert recall_at_k(docs, rels, 3) == 0.5
    assert precision_at_k(docs, rels, 3) == pytest.approx(1 / 3)
    assert ndcg_at_k(docs, rels, 3) == pytest.approx(1 / (1 + 1 / LOG2_3))


# ----------------------------------------------------------------------------------------- evaluate


def test_evaluate_averages_over_qrels_queries() -> None:
    qrels = {
        "q1": {"d1": 1, "d2": 2},
        "q2": {"d7": 1},  # missing from the run -> 0 on every metric
        "q3": {"d9": 1},
    }
    run = {
        "q1": ["d3", "d1", "d2"],
        "q3": ["d9"],
        "q_extra": ["d1"],  # not in qrels -> ignored
    }
    # Per query (k=1 | k=3):
    #   q1: ndcg 0 | 0.6199062   mrr 0 | 1/2   recall 0 | 2/2   precision 0 | 2/3
    #   q2: everything 0
    #   q3: ndcg 1 | 1           mrr 1 | 1     recall 1 | 1     precision 1 | 1/3
    # Mean over 3 queries:
    #   ndcg@3 = (0.6199062 + 0 + 1) / 3 = 0.5399687, mrr@3 = (0.5 + 0 + 1) / 3 = 0.5,
    #   recall@3 = (1 + 0 + 1) / 3 = 2/3, precision@3 = (2/3 + 0 + 1/3) / 3 = 1/3, every @1 = 1/3.
    scores = evaluate(run, qrels, ks=(1, 3))
    assert list(scores) == [
        "ndcg@1",
        "ndcg@3",
        "mrr@1",
        "mrr@3",
        "recall@1",
        "recall@3",
        "precision@1",
        "precision@3",
    ]
    ndcg_q1 = (1 / LOG2_3 + 1) / (2 + 1 / LOG2_3)
    assert scores["ndcg@3"] == pytest.approx((ndcg_q1 + 0 + 1) / 3)
    assert scores["ndcg@3"] == pytest.approx(0.5399687, abs=1e-7)
    assert scores["mrr@3"] == pytest.approx(0.5)
    assert scores["recall@3"] == pytest.approx(2 / 3)
    assert scores["precision@3"] == pytest.approx(1 / 3)
    for name in ("ndcg", "mrr", "recall", "precision"):
        assert scores[f"{name}@1"] == pytest.approx(1 / 3)


def test_evaluate_default_keys() -> None:
    scores = evaluate({"q": ["d"]}, {"q": {"d": 1}})
    assert DEFAULT_KS == (1, 3, 5, 10, 100)
    expected = {f"{m}@{k}" for m in ("ndcg", "mrr", "recall", "precision") for k in DEFAULT_KS}
    assert set(scores) == expected
    assert scores["ndcg@10"] == 1.0
    assert scores["mrr@10"] == 1.0
    assert scores["recall@100"] == 1.0
    assert scores["precision@10"] == pytest.approx(0.1)  # 1 relevant / k=10


def test_evaluate_empty_run_scores_zero() -> None:
    scores = evaluate({}, {"q1": {"d1": 1}, "q2": {"d2": 1}}, ks=(10,))
    assert scores == {"ndcg@10": 0.0, "mrr@10": 0.0, "recall@10": 0.0, "precision@10": 0.0}
    assert evaluate({"q1": []}, {"q1": {"d1": 1}}, ks=(5,))["ndcg@5"] == 0.0


def test_evaluate_validation() -> None:
    with pytest.raises(ValueError, match="qrels is empty"):
        evaluate({"q": ["d"]}, {})
    with pytest.raises(ValueError, match="at least one"):
        evaluate({"q": ["d"]}, {"q": {"d": 1}}, ks=())
    with pytest.raises(ValueError, match="positive integer"):
        evaluate({"q": ["d"]}, {"q": {"d": 1}}, ks=(0,))
    with pytest.raises(ValueError, match="'q'"):
        evaluate({"q": ["d", "d"]}, {"q": {"d": 1}}, ks=(5,))


# -------------------------------------------------- cross-check against a transcription of trec_eval


def _trec_eval_ndcg_cut(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    """Literal port of trec_eval 9.0.x m_ndcg_cut.c (0-based i, discount log2(i + 2), rel-level ideal)."""
    dcg = 0.0
    for i, doc_id in enumerate(ranked[:k]):
        gain = rels.get(doc_id, 0)
        if gain > 0:
            dcg += gain / math.log2(i + 2)
    # rel_levels[lvl] = number of judged docs at relevance lvl; walk from the highest level down.
    levels = [0] * (max([0, *rels.values()]) + 1)
    for rel in rels.values():
        if rel >= 0:
            levels[rel] += 1
    cur_lvl, lvl_count, ideal = len(levels) - 1, 0, 0.0
    i = 0
    while i < k:
        lvl_count += 1
        while cur_lvl > 0 and lvl_count > levels[cur_lvl]:
            cur_lvl -= 1
            lvl_count = 1
        if cur_lvl == 0:
            break
        ideal += cur_lvl / math.log2(i + 2)
        i += 1
    return dcg / ideal if ideal > 0 else dcg


def test_ndcg_matches_trec_eval_transcription_on_random_runs() -> None:
    rng = random.Random(1234)
    docs = [f"d{i}" for i in range(30)]
    for _ in range(500):
        rels = {doc: rng.choice([0, 0, 1, 1, 2, 3]) for doc in rng.sample(docs, rng.randint(1, 12))}
        ranked = rng.sample(docs, rng.randint(0, 20))
        for k in (1, 3, 5, 10, 100):
            assert ndcg_at_k(ranked, rels, k) == pytest.approx(_trec_eval_ndcg_cut(ranked, rels, k), abs=1e-12)


# --------------------------------------------------------------------------------------- percentiles


def test_percentiles_linear_interpolation() -> None:
    # sorted [1, 2, 3, 4], n-1 = 3:
    #   p50: index 3*0.50 = 1.5  -> 2 + 0.5*(3-2)  = 2.5
    #   p95: index 3*0.95 = 2.85 -> 3 + 0.85*(4-3) = 3.85
    #   p99: index 3*0.99 = 2.97 -> 3 + 0.97*(4-3) = 3.97
    result = percentiles([4.0, 1.0, 3.0, 2.0])
    assert list(result) == ["p50", "p95", "p99"]
    assert result["p50"] == pytest.approx(2.5)
    assert result["p95"] == pytest.approx(3.85)
    assert result["p99"] == pytest.approx(3.97)


def test_percentiles_edge_cases() -> None:
    assert percentiles([]) == {"p50": 0.0, "p95": 0.0, "p99": 0.0}
    assert percentiles([7.0]) == {"p50": 7.0, "p95": 7.0, "p99": 7.0}
    assert percentiles([1, 2, 3], ps=(0, 100, 99.9)) == {
        "p0": 1.0,
        "p100": 3.0,
        "p99.9": pytest.approx(2.998),
    }
    with pytest.raises(ValueError, match="within"):
        percentiles([1.0], ps=(101,))


def test_percentiles_match_numpy_default() -> None:
    rng = random.Random(7)
    ps = (0, 1, 25, 50, 90, 95, 99, 99.9, 100)
    for n in (1, 2, 3, 10, 101, 1000):
        values = [rng.expovariate(0.01) for _ in range(n)]
        result = percentiles(values, ps=ps)
        expected = np.percentile(values, ps)
        for p, want in zip(ps, expected, strict=True):
            assert result[f"p{p:g}"] == pytest.approx(float(want), rel=1e-12, abs=1e-12)
