"""Issue 19's two fusion failures, rebuilt with real text, the real embedding model and real Postgres.

1. A keyword-stuffed report (vector #2, keyword #1) must not beat the FAQ that answers (vector #1, keyword #2)
   when the keyword list has only those two hits (min-max turned the FAQ's BM25 into 0).
2. With 200 SciFact abstracts plus an aardwolf article, "What do aardwolves eat?" must rank the aardwolf chunk
   first although the keyword arm has only a handful of hits (min-max gave the third of three a 0).

Each test also checks that its corpus really reproduces the failure: the old min-max fusion (`FUSION=score`)
on the same two lists puts the wrong chunk first.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from ragchat.core.options import options_of
from ragchat.core.search import SearchResult
from ragchat.httpapi.search import search_response
from ragchat.readscope.sql import read_scope
from ragchat.retrieval.fusion import fuse
from ragchat.retrieval.keyword import keyword_search
from ragchat.retrieval.search import Searcher
from ragchat.retrieval.vector import vector_search
from ragchat.settings import Settings
from tests.integration.test_search import add_docs
from tests.support.services import LOCAL, LOCAL_OWNER_ID, make_searcher

pytestmark = pytest.mark.slow  # minutes: `make test-slow` (CI runs it)

SCIFACT = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact-dev" / "corpus.jsonl"

FAQ = "The battery lasts about 10 hours of video playback on a full charge."
REPORT = (  # about batteries, close in meaning (vector #2), stuffed with the query's words, and no answer
    "Battery test report, week 12. The battery team ran long discharge tests on the last three prototypes. "
    "Battery temperature, battery swelling and long-term battery wear were logged; the last battery test "
    "lasted long into the night. How long the battery lasts in the field will be settled once the long-term "
    "battery results are in, at the last review."
)
OTHERS = {
    "bread.txt": "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.",
    "tides.txt": "Ocean tides are caused by the gravitational pull of the moon and the sun on the oceans.",
    "volcano.txt": "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.",
}

AARDWOLF = (  # an encyclopaedia paragraph: "aardwolf" (never the plural of the query) and "eats" once
    "The aardwolf (Proteles cristata) is a small mammal of the hyena family, native to the dry grasslands and "
    "open bush of East and Southern Africa. It is about the size of a fox, with a striped yellowish coat, a "
    "mane along its back that it raises when threatened, and large ears. It is shy and nocturnal, and spends "
    "the day in a burrow, often one dug by an aardvark or a springhare. Unlike the other hyenas it does not "
    "hunt large animals or scavenge: the aardwolf eats termites, licking up to 300,000 harvester termites a "
    "night from the surface with its broad, sticky tongue, and its cheek teeth are reduced to small pegs. "
    "Pairs share a territory marked with dung middens and secretions from anal glands, and cubs are born in "
    "the rainy season, when termites are active. The species is not threatened, although farmers sometimes "
    "kill it in the mistaken belief that it preys on livestock."
)


async def arms(searcher: Searcher, query: str, n: int = 50) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """Both arms' raw lists, exactly as the searcher asks for them in hybrid mode."""
    active = await searcher.spaces.active()
    assert active is not None
    qvec = await searcher.embed_query(active, query)
    s = searcher.settings
    async with searcher.pool.connection() as conn:
        scope = await read_scope(conn, LOCAL.user_id)
        vec = await vector_search(conn, active.space, qvec, scope=scope, n=n)
        kw = await keyword_search(conn, query, scope=scope, n=n, k1=s.bm25_k1, b=s.bm25_b)
    return vec, kw


def assert_one_honest_figure(result: SearchResult, kind: str) -> None:
    scores = [c.score for c in result.chunks]
    assert all(0.0 <= x <= 1.0 for x in scores)
    assert all(a >= b for a, b in itertools.pairwise(scores)), scores
    assert {c.score_kind for c in result.chunks} == {kind}
    docs = search_response(result).documents
    first_seen = list(dict.fromkeys(c.document_id for c in result.chunks))
    assert [d.document_id for d in docs] == first_seen


async def test_the_answer_outranks_the_keyword_stuffed_report(pool: Any, embedder: Any, settings: Settings) -> None:
    await add_docs(pool, embedder, settings, {"faq.txt": FAQ, "report.txt": REPORT, **OTHERS}, LOCAL_OWNER_ID)
    searcher = make_searcher(pool, embedder, settings)
    query = "How long does the battery last?"

    vec, kw = await arms(searcher, query)
    names = await chunk_names(searcher)
    assert [names[i] for i, _ in vec[:2]] == ["faq.txt", "report.txt"]  # the FAQ is closer in meaning
    assert [names[i] for i, _ in kw] == ["report.txt", "faq.txt"]  # only two keyword hits, the stuffed one first
    assert names[fuse(vec, kw, method="score")[0].id] == "report.txt"  # the old default got it wrong

    result = await searcher.search(
        query, principal=LOCAL, options=options_of(searcher.settings, limit=5, mode="hybrid")
    )
    assert [c.filename for c in result.chunks[:2]] == ["faq.txt", "report.txt"]
    assert_one_honest_figure(result, "fused")
    top = result.chunks[0]
    assert (top.trace.vector_rank, top.trace.keyword_rank) == (1, 2)
    assert top.trace.similarity is not None and top.trace.similarity == top.trace.vector_score
    assert result.confidence.best_similarity == round(max(c.similarity or 0 for c in result.chunks), 4)

    rrf = await searcher.search(
        query, principal=LOCAL, options=options_of(searcher.settings, limit=5, mode="hybrid", fusion="rrf")
    )
    first, second = rrf.chunks[:2]
    assert {first.filename, second.filename} == {"faq.txt", "report.txt"}
    assert first.score == second.score  # ranks (1, 2) and (2, 1): RRF can only tie them


async def test_a_short_keyword_list_does_not_sink_the_answer(pool: Any, embedder: Any, settings: Settings) -> None:
    with SCIFACT.open(encoding="utf-8") as fh:
        abstracts = "".join(itertools.islice(fh, 200))
    assert len(abstracts.splitlines()) == 200
    await add_docs(pool, embedder, settings, {"scifact.jsonl": abstracts, "aardwolf.txt": AARDWOLF}, LOCAL_OWNER_ID)
    searcher = make_searcher(pool, embedder, settings)
    query = "What do aardwolves eat?"

    vec, kw = await arms(searcher, query)
    names = await chunk_names(searcher)
    aardwolf = next(i for i, _ in vec if names[i] == "aardwolf.txt")
    assert vec[0][0] == aardwolf
    assert len(kw) < 50 and kw[0][0] != aardwolf  # a short keyword list, and the answer is not its first
    assert names[fuse(vec, kw, method="score")[0].id] != "aardwolf.txt"  # the old default got it wrong

    for mode, kind in (("hybrid", "fused"), ("vector", "similarity"), ("keyword", "bm25 (normalised)")):
        result = await searcher.search(
            query, principal=LOCAL, options=options_of(searcher.settings, limit=10, mode=mode)
        )
        assert_one_honest_figure(result, kind)
        if mode != "keyword":
            assert result.chunks[0].filename == "aardwolf.txt", mode
    keyword = await searcher.search(
        query, principal=LOCAL, options=options_of(searcher.settings, limit=10, mode="keyword")
    )
    assert keyword.chunks[0].score == 1.0  # BM25 relative to the best match
    assert all(c.trace.similarity is not None for c in keyword.chunks)  # the cosine stays in the trace


async def chunk_names(searcher: Searcher) -> dict[int, str]:
    async with searcher.pool.connection() as conn:
        rows = await (
            await conn.execute(
                "SELECT c.id, d.filename FROM document_chunks c JOIN documents d ON d.id = c.document_id"
            )
        ).fetchall()
    return {r["id"]: r["filename"].split("#")[0] for r in rows}
