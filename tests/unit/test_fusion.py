"""Reciprocal Rank Fusion."""

from __future__ import annotations

import pytest

from server.retrieval.fusion import rrf


def test_a_chunk_in_both_lists_beats_chunks_in_one() -> None:
    fused = rrf([(1, 0.9), (2, 0.8)], [(3, 12.0), (1, 10.0)], k=60)
    assert fused[0].id == 1
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert {f.id for f in fused} == {1, 2, 3}


def test_ranks_are_one_based_and_traced() -> None:
    fused = {f.id: f for f in rrf([(7, 0.5)], [(8, 3.0), (7, 1.0)], k=60)}
    assert fused[7].vector_rank == 1 and fused[7].keyword_rank == 2
    assert fused[7].vector_score == 0.5 and fused[7].keyword_score == 1.0
    assert fused[8].vector_rank is None and fused[8].score == pytest.approx(1 / 61)


def test_duplicates_within_a_list_count_once() -> None:
    fused = rrf([(1, 0.9), (1, 0.8), (2, 0.7)], [], k=60)
    assert [f.id for f in fused] == [1, 2]
    assert fused[0].score == pytest.approx(1 / 61)
    assert fused[1].vector_rank == 3  # its real position in the list


def test_empty_inputs_and_weights() -> None:
    assert rrf([], []) == []
    fused = rrf([(1, 1.0)], [(2, 1.0)], k=10, weights=(1.0, 2.0))
    assert fused[0].id == 2 and fused[0].score == pytest.approx(2 / 11)


def test_score_fusion_normalises_each_list() -> None:
    from server.retrieval.fusion import fuse

    fused = fuse([(1, 0.9), (2, 0.5)], [(2, 30.0), (3, 10.0)], method="score", vector_weight=0.5)
    scores = {f.id: f.score for f in fused}
    assert scores == {1: pytest.approx(0.5), 2: pytest.approx(0.5), 3: pytest.approx(0.0)}
    assert fused[0].keyword_rank is None or fused[0].vector_rank is not None


def test_weighted_rrf_leans_towards_the_heavier_arm() -> None:
    from server.retrieval.fusion import fuse

    fused = fuse([(1, 0.9)], [(2, 5.0)], method="weighted_rrf", k=60, vector_weight=0.75)
    assert [f.id for f in fused] == [1, 2]
    assert fused[0].score == pytest.approx(1.5 / 61) and fused[1].score == pytest.approx(0.5 / 61)
