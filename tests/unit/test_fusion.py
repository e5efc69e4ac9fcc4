"""Fusion of the vector and keyword lists: RRF, min-max score fusion and the default, relative fusion."""

from __future__ import annotations

import math
import random
import uuid

import pytest

from ragchat.cli.search import print_results
from ragchat.core.search import ChunkHit, Trace
from ragchat.httpapi.search import Passage, by_document
from ragchat.retrieval.fusion import fuse, keyword_only, rrf, vector_only
from ragchat.retrieval.search import monotone


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
    for method in ("relative", "score", "rrf", "weighted_rrf"):
        assert fuse([], [], method=method) == []
    fused = rrf([(1, 1.0)], [(2, 1.0)], k=10, weights=(1.0, 2.0))
    assert fused[0].id == 2 and fused[0].score == pytest.approx(2 / 11)


def test_score_fusion_normalises_each_list() -> None:
    fused = fuse([(1, 0.9), (2, 0.5)], [(2, 30.0), (3, 10.0)], method="score", vector_weight=0.5)
    scores = {f.id: f.score for f in fused}
    assert scores == {1: pytest.approx(0.5), 2: pytest.approx(0.5), 3: pytest.approx(0.0)}


def test_weighted_rrf_leans_towards_the_heavier_arm() -> None:
    fused = fuse([(1, 0.9)], [(2, 5.0)], method="weighted_rrf", k=60, vector_weight=0.75)
    assert [f.id for f in fused] == [1, 2]
    # scaled to 0..1 by the best possible value, a chunk first in both lists: 1 / 61
    assert fused[0].score == pytest.approx(0.75) and fused[1].score == pytest.approx(0.25)


def test_rrf_through_fuse_is_scaled_to_one_for_a_chunk_first_in_both() -> None:
    fused = fuse([(1, 0.9), (2, 0.4)], [(1, 8.0), (3, 2.0)], method="rrf", k=60)
    assert fused[0].id == 1 and fused[0].score == pytest.approx(1.0)
    assert fused[1].score == pytest.approx((1 / 62) / (2 / 61))


# The first case: FAQ vector 1 / keyword 2, keyword-stuffed report vector 2 / keyword 1, two keyword hits.
FAQ, REPORT = 22, 11  # the FAQ has the larger id: an id tie-break would put the report first
BATTERY_VECTOR = [(FAQ, 0.71), (REPORT, 0.55), (33, 0.20)]
BATTERY_KEYWORD = [(REPORT, 4.1), (FAQ, 3.2)]


def test_minmax_over_two_keyword_hits_is_the_bug_relative_fixes() -> None:
    old = fuse(BATTERY_VECTOR, BATTERY_KEYWORD, method="score")
    assert old[0].id == REPORT  # the FAQ's BM25 3.2 became 0: the report wins
    new = fuse(BATTERY_VECTOR, BATTERY_KEYWORD, method="relative")
    assert new[0].id == FAQ
    faq = new[0]
    assert faq.score == pytest.approx(0.75 * 0.71 + 0.25 * 3.2 / 4.1)  # the default weight for relative: 0.75
    assert (faq.vector_rank, faq.keyword_rank) == (1, 2)


def test_rrf_ties_are_broken_by_similarity_not_by_chunk_id() -> None:
    fused = fuse(BATTERY_VECTOR, BATTERY_KEYWORD, method="rrf")
    assert fused[0].score == pytest.approx(fused[1].score)  # ranks (1, 2) and (2, 1): a tie
    assert [f.id for f in fused[:2]] == [FAQ, REPORT]  # both are first somewhere; the FAQ's cosine is higher
    swapped = fuse([(REPORT, 0.71), (FAQ, 0.55)], [(FAQ, 4.1), (REPORT, 3.2)], method="rrf")
    assert [f.id for f in swapped[:2]] == [REPORT, FAQ]


def test_ties_prefer_the_better_rank_first() -> None:
    # Relative fusion, both 0.2: chunk 9 is vector #1 (0.5 x 0.4); chunk 3 is vector #2 and keyword #2
    # (0.5 x 0.2 + 0.5 x 2 / 10), never better than second. The lower id does not win the tie.
    fused = fuse([(9, 0.4), (3, 0.2)], [(7, 10.0), (3, 2.0)], method="relative", vector_weight=0.5)
    by_id = {f.id: f for f in fused}
    assert by_id[9].score == pytest.approx(by_id[3].score)
    assert [f.id for f in fused] == [7, 9, 3]


def test_short_keyword_list_keeps_its_magnitude() -> None:
    # The second case: three keyword hits, the right chunk third with a BM25 close to the top.
    answer, abstract = 1, 2
    vector = [(answer, 0.68), *((100 + i, 0.5 - i * 0.01) for i in range(25)), (abstract, 0.12)]
    vector += [(200 + i, 0.11 - i * 0.001) for i in range(23)]  # rank 27 of 50
    keyword = [(abstract, 7.81), (300, 7.5), (answer, 7.16)]
    assert fuse(vector, keyword, method="score")[0].id == abstract  # min-max made 7.16 a 0
    fused = fuse(vector, keyword, method="relative")
    assert fused[0].id == answer
    assert fused[0].score == pytest.approx(0.75 * 0.68 + 0.25 * 7.16 / 7.81)


def test_relative_does_not_depend_on_the_list_tail() -> None:
    # Cutting either list shorter, or adding worse hits, changes no score of the chunks that stay.
    vector = [(1, 0.8), (2, 0.6), (3, 0.3)]
    keyword = [(2, 9.0), (1, 4.5), (4, 1.0)]
    full = {f.id: f.score for f in fuse(vector, keyword, method="relative")}
    longer = {f.id: f.score for f in fuse([*vector, (9, 0.01)], [*keyword, (8, 0.001)], method="relative")}
    short = {f.id: f.score for f in fuse(vector[:2], keyword[:2], method="relative")}
    for chunk in (1, 2):
        assert full[chunk] == pytest.approx(longer[chunk]) == pytest.approx(short[chunk])


def test_relative_gives_a_cut_off_chunk_the_last_score_of_a_full_list() -> None:
    vector = [(1, 0.8), (2, 0.6), (3, 0.3)]  # full: depth 3, so chunk 4 scored at most 0.3 there
    keyword = [(4, 10.0), (1, 5.0)]  # not full: chunks 2 and 3 matched no query term
    scores = {f.id: f.score for f in fuse(vector, keyword, method="relative", vector_weight=0.5, depth=3)}
    assert scores[4] == pytest.approx(0.5 * 0.3 + 0.5 * 1.0)
    assert scores[2] == pytest.approx(0.5 * 0.6 + 0.0)
    unbounded = {f.id: f.score for f in fuse(vector, keyword, method="relative", vector_weight=0.5)}
    assert unbounded[4] == pytest.approx(0.5)  # without a depth, missing is 0
    both_full = {f.id: f.score for f in fuse(vector, keyword, method="relative", vector_weight=0.5, depth=2)}
    assert both_full[2] == pytest.approx(0.5 * 0.6 + 0.5 * 0.5)  # cut off below keyword #2 (5.0 / 10.0)


@pytest.mark.parametrize("method", ["relative", "score", "rrf", "weighted_rrf"])
def test_every_method_scores_in_zero_one_and_sorts_descending(method: str) -> None:
    rng = random.Random(7)
    for _ in range(200):
        ids = rng.sample(range(1000), 60)
        vector = sorted(((i, rng.random()) for i in ids[:40]), key=lambda p: -p[1])
        keyword = sorted(((i, rng.random() * 30) for i in ids[20:]), key=lambda p: -p[1])
        fused = fuse(vector, keyword, method=method, vector_weight=rng.random(), depth=rng.choice([None, 20, 40]))
        scores = [f.score for f in fused]
        assert all(0.0 <= s <= 1.0 and math.isfinite(s) for s in scores)
        assert scores == sorted(scores, reverse=True)
        assert len(fused) == len(set(ids))


def test_relative_clips_hostile_scores() -> None:
    # Cosine can come back a hair outside 0..1 and BM25 may be 0 for every hit: no NaN, no score above 1.
    fused = fuse([(1, 1.0000002), (2, -0.3)], [(1, 0.0), (2, 0.0)], method="relative")
    assert [f.id for f in fused] == [1, 2]
    assert all(0.0 <= f.score <= 1.0 for f in fused)


def test_single_arm_scores() -> None:
    assert [(f.id, f.score, f.vector_rank) for f in vector_only([(3, 0.7), (1, 0.2)])] == [(3, 0.7, 1), (1, 0.2, 2)]
    kw = keyword_only([(5, 8.0), (6, 2.0)])
    assert [(f.id, f.score, f.keyword_rank, f.keyword_score) for f in kw] == [(5, 1.0, 1, 8.0), (6, 0.25, 2, 2.0)]
    assert keyword_only([]) == [] and [f.score for f in keyword_only([(1, 0.0)])] == [0.0]


# ---- one honest figure per hit: monotone scores, documents in chunk order, the CLI's label ----


def hit(chunk_id: int, doc: uuid.UUID, score: float, rerank: float | None = None, kind: str = "fused") -> ChunkHit:
    return ChunkHit(
        id=chunk_id,
        document_id=doc,
        filename=f"{doc}.txt",
        title="t",
        chunk_index=chunk_id,
        content="x",
        score=score,
        score_kind=kind,  # type: ignore[arg-type]
        trace=Trace(rerank_score=rerank),
    )


def test_monotone_caps_scores_and_names_reranked_hits() -> None:
    d = uuid.uuid4()
    # A rerank deadline left the last two unscored: they keep the retrieval score, capped by the last scored.
    hits = [hit(1, d, 0.9, 0.9), hit(2, d, 0.4, 0.4), hit(3, d, 0.8), hit(4, d, 0.2)]
    out = monotone(hits)
    assert [h.score for h in out] == [0.9, 0.4, 0.4, 0.2]
    assert [h.score_kind for h in out] == ["rerank", "rerank", "fused", "fused"]
    assert [h.id for h in out] == [1, 2, 3, 4] and monotone([]) == []


def test_documents_follow_the_chunk_order() -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    # Document b's best chunk is second in the list; a later chunk of a has a higher cosine but no say.
    chunks = [hit(1, b, 0.8), hit(2, a, 0.7), hit(3, b, 0.6), hit(4, a, 0.5)]
    docs = by_document([Passage.of(c) for c in chunks])
    assert [d.document_id for d in docs] == [b, a]
    assert [d.best_chunk.id for d in docs] == [1, 2] and [d.matched_chunks for d in docs] == [2, 2]
    assert [d.max_score for d in docs] == [0.8, 0.7]


def test_the_cli_says_what_the_score_is(capsys: pytest.CaptureFixture[str]) -> None:
    d = uuid.uuid4()
    chunks = [hit(1, d, 0.9, 0.9, "rerank"), hit(2, d, 0.5)]
    api = {
        "chunks": [c.public().model_dump(mode="json") for c in chunks],
        "mode": "hybrid",
        "reranked": True,
        "timing_ms": {"total_ms": 1.0},
        "confidence": {"label": "high"},
        "has_embeddings": True,
    }
    print_results(api, as_json=False)
    out = capsys.readouterr().out
    assert "score: LLM rerank relevance (0-1), then hybrid fusion of similarity and BM25 (0-1)" in out


def test_long_lists_fuse_in_bounded_time() -> None:
    import time

    vector = [(i, 1 - i / 40_000) for i in range(20_000)]
    keyword = [(i + 10_000, 40.0 - i / 1000) for i in range(20_000)]
    for method in ("relative", "score", "rrf", "weighted_rrf"):
        # the CPU time of this thread, not the wall clock: bounded work whatever else the machine is doing
        start = time.thread_time()
        fused = fuse(vector, keyword, method=method, depth=20_000)
        assert len(fused) == 30_000 and time.thread_time() - start < 2.0
