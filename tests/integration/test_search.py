"""The search orchestrator and its arms on the real Postgres with the real embedding model."""

from __future__ import annotations

import math
import uuid
from typing import Any

import numpy as np
import psycopg
import pytest

from ragchat.core.options import options_of
from ragchat.core.search import SearchFilters
from ragchat.documents.ingest.registration import register_bytes
from ragchat.readscope.sql import ReadScope
from ragchat.retrieval.keyword import keyword_search
from ragchat.retrieval.search import Searcher
from ragchat.retrieval.vector import vector_search
from ragchat.settings import Settings
from ragchat.vectors.store import Space, VectorRow, create_space, insert_vectors, space_in_state
from tests.support.services import LOCAL, LOCAL_OWNER_ID, Principal, make_pipeline, make_searcher

DOCS = {
    "volcano.txt": "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.",
    "bread.txt": "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.",
    "tides.txt": "Ocean tides are caused by the gravitational pull of the moon and the sun on the oceans.",
    "python.md": "# Python\n\nPython lists are mutable sequences; tuples are immutable.",
}


async def add_docs(pool: Any, embedder: Any, settings: Settings, docs: dict[str, str], owner: uuid.UUID) -> None:
    for name, text in docs.items():
        await register_bytes(pool, owner, name, text.encode(), settings.ingestion)
    await make_pipeline(pool, embedder, settings).run()


@pytest.fixture
async def corpus(pool: Any, embedder: Any, settings: Settings) -> Searcher:
    await add_docs(pool, embedder, settings, DOCS, LOCAL_OWNER_ID)
    return make_searcher(pool, embedder, settings)


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
async def test_each_mode_finds_the_right_document(corpus: Searcher, mode: str) -> None:
    result = await corpus.search(
        "what makes sourdough bread rise?", principal=LOCAL, options=options_of(corpus.settings, limit=3, mode=mode)
    )
    assert result.mode == mode and not result.reranked
    assert result.chunks[0].filename == "bread.txt"
    trace = result.chunks[0].trace
    assert (trace.vector_rank is not None) == (mode != "keyword")
    assert (trace.keyword_rank is not None) == (mode != "vector")
    assert (trace.fused_score is not None) == (mode == "hybrid")
    assert 0 <= result.chunks[0].score <= 1
    assert result.timings.total_ms > 0 and result.has_embeddings


@pytest.mark.parametrize(("fusion", "top_score"), [("relative", None), ("score", 1.0), ("rrf", 1.0)])
async def test_hybrid_fuses_both_arms(corpus: Searcher, fusion: str, top_score: float) -> None:
    corpus.settings = corpus.settings.model_copy(update={"fusion": fusion})
    result = await corpus.search(
        "moon gravity ocean tides", principal=LOCAL, options=options_of(corpus.settings, limit=4, mode="hybrid")
    )
    top = result.chunks[0]
    assert top.filename == "tides.txt"
    assert top.trace.vector_rank == 1 and top.trace.keyword_rank == 1
    if top_score is not None:  # first in both lists: the best possible fused score
        assert top.trace.fused_score == pytest.approx(top_score)
    assert top.score == top.trace.fused_score and top.score_kind == "fused"
    assert result.timings.vector_ms > 0 and result.timings.keyword_ms > 0


async def test_confidence_reflects_similarity(corpus: Searcher) -> None:
    good = await corpus.search("volcano lava magma eruption", principal=LOCAL, options=options_of(corpus.settings))
    bad = await corpus.search(
        "quarterly revenue of the semiconductor division", principal=LOCAL, options=options_of(corpus.settings)
    )
    assert good.confidence.label in ("high", "moderate") and not good.confidence.insufficient_confidence
    assert bad.confidence.best_similarity < good.confidence.best_similarity
    assert bad.confidence.insufficient_confidence


async def test_owner_scoping_and_filters(pool: Any, embedder: Any, settings: Settings, corpus: Searcher) -> None:
    other = uuid.uuid4()
    with psycopg.connect(settings.database.database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO users (id, name) VALUES (%s, 'other')", (other,))
    await add_docs(pool, embedder, settings, {"secret.txt": "Sourdough secrets of the other user."}, other)
    for mode in ("vector", "keyword", "hybrid"):
        mine = await corpus.search("sourdough", principal=LOCAL, options=options_of(corpus.settings, mode=mode))
        assert "secret.txt" not in {c.filename for c in mine.chunks}
        theirs = await corpus.search(
            "sourdough", principal=Principal(other), options=options_of(corpus.settings, mode=mode)
        )
        assert {c.filename for c in theirs.chunks} == {"secret.txt"}

    bread = (
        (await corpus.search("bread", principal=LOCAL, options=options_of(corpus.settings, limit=1)))
        .chunks[0]
        .document_id
    )
    only = await corpus.search(
        "ocean tides", principal=LOCAL, options=options_of(corpus.settings, filters=SearchFilters(document_ids=[bread]))
    )
    assert {c.document_id for c in only.chunks} == {bread}
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE documents SET metadata = metadata || '{\"team\": \"geo\"}' WHERE filename = 'tides.txt'"
        )
    geo = await corpus.search(
        "bread", principal=LOCAL, options=options_of(corpus.settings, filters=SearchFilters(metadata={"team": "geo"}))
    )
    assert {c.filename for c in geo.chunks} == {"tides.txt"}


@pytest.mark.parametrize(
    "query",
    [
        "'",
        "&",
        "|",
        "!",
        ":*",
        "(",
        "a & b | !c:* (",
        "'); DROP TABLE documents; --",
        "the and of a",
        "Vulkanausbruch und Lava",
        "火山の噴火",
        "x" * 10_000,
        " ".join(["volcano"] * 2500),
    ],
)
async def test_hostile_and_odd_queries_never_raise(corpus: Searcher, query: str) -> None:
    for mode in ("vector", "keyword", "hybrid"):
        result = await corpus.search(query, principal=LOCAL, options=options_of(corpus.settings, mode=mode))
        assert result.mode == mode
    stop_words = await corpus.search(
        "the and of a", principal=LOCAL, options=options_of(corpus.settings, mode="keyword")
    )
    assert stop_words.chunks == []


async def test_empty_query_and_empty_corpus(pool: Any, embedder: Any, settings: Settings) -> None:
    searcher = make_searcher(pool, embedder, settings)
    empty = await searcher.search("anything", principal=LOCAL, options=options_of(searcher.settings))
    assert empty.chunks == [] and not empty.has_embeddings and empty.confidence.insufficient_confidence
    await add_docs(pool, embedder, settings, {"a.txt": "Some text."}, LOCAL_OWNER_ID)
    blank = await searcher.search("   ", principal=LOCAL, options=options_of(searcher.settings))
    assert blank.chunks == [] and blank.has_embeddings


async def test_bad_mode_is_a_clear_error(corpus: Searcher) -> None:
    from ragchat.core.errors import BadRequest

    with pytest.raises(BadRequest, match="vector, keyword or hybrid"):
        await corpus.search("x", principal=LOCAL, options=options_of(corpus.settings, mode="semantic"))


def test_invalid_search_mode_setting_fails_at_startup() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="SEARCH_MODE"):
        Settings(_env_file=None, search_mode="semantic")  # type: ignore[call-arg]


# ----------------------------------------------------------------------------------------------- BM25


async def active_test_space(pool: Any) -> Space:
    """The active space for the random vectors below (created on first use)."""
    async with pool.connection() as conn, conn.transaction():
        return await space_in_state(conn, "active") or await create_space(conn, "test", "random", 384, "active")


async def insert_chunks(pool: Any, texts: list[str], owner: uuid.UUID = LOCAL_OWNER_ID, title: str = "") -> uuid.UUID:
    """One ready document with these chunk texts and random unit vectors (no model needed)."""
    rng = np.random.default_rng(abs(hash(texts[0])) % 2**32)
    space = await active_test_space(pool)
    async with pool.connection() as conn, conn.transaction():
        doc = await (
            await conn.execute(
                """INSERT INTO documents (owner_id, filename, title, content_type, byte_size, sha256, status)
                   VALUES (%s, %s, %s, 'text/plain', 1, %s, 'ready') RETURNING id""",
                (owner, f"{uuid.uuid4()}.txt", title, uuid.uuid4().hex),
            )
        ).fetchone()
        async with conn.cursor().copy(
            "COPY document_chunks (document_id, owner_id, chunk_index, title, content, token_count, content_hash)"
            " FROM STDIN"
        ) as copy:
            for i, text in enumerate(texts):
                await copy.write_row((doc["id"], owner, i, title, text, 1, f"h{i}"))
        ids = await (
            await conn.execute("SELECT id, chunk_index FROM document_chunks WHERE document_id = %s", (doc["id"],))
        ).fetchall()
        vectors = []
        for row in sorted(ids, key=lambda r: r["chunk_index"]):
            v = rng.normal(size=384).astype(np.float32)
            vectors.append(VectorRow(row["id"], doc["id"], owner, f"h{row['chunk_index']}", v / np.linalg.norm(v)))
        await insert_vectors(conn, space, vectors)
    return doc["id"]


async def test_bm25_matches_a_hand_computed_example(pool: Any, db: str) -> None:
    await insert_chunks(pool, ["apple banana", "apple apple cherry", "banana cherry cherry date"])
    async with pool.connection() as conn:
        hits = await keyword_search(conn, "apples", scope=ReadScope(LOCAL_OWNER_ID), n=10, k1=0.9, b=0.4)
        ids = {
            r["content"]: r["id"]
            for r in await (await conn.execute("SELECT id, content FROM document_chunks")).fetchall()
        }
    # N = 3 chunks, lengths 2, 3, 4 → avgdl = 3; "apple" stems to "appl", df = 2.
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))

    def bm25(tf: int, dl: int) -> float:
        return idf * tf * 1.9 / (tf + 0.9 * (1 - 0.4 + 0.4 * dl / 3))

    assert hits == [
        (ids["apple apple cherry"], pytest.approx(bm25(2, 3))),
        (ids["apple banana"], pytest.approx(bm25(1, 2))),
    ]


async def test_deleting_a_document_updates_document_frequencies(pool: Any, db: str) -> None:
    keep = await insert_chunks(pool, ["zebra stripes", "zebra herd"])
    drop = await insert_chunks(pool, ["zebra crossing", "pedestrian crossing"])

    async def stats() -> tuple[dict[str, int], int, int]:
        async with pool.connection() as conn:
            sql = "SELECT term, sum(df) AS df FROM bm25_group_terms GROUP BY term HAVING sum(df) <> 0"
            terms = {r["term"]: r["df"] for r in await (await conn.execute(sql)).fetchall()}
            sql = "SELECT sum(n_chunks) AS n_chunks, sum(total_len) AS total_len FROM bm25_group_stats"
            s = await (await conn.execute(sql)).fetchone()
        return terms, s["n_chunks"], s["total_len"]

    terms, n, total = await stats()
    assert terms["zebra"] == 3 and terms["cross"] == 2 and n == 4 and total == 8
    async with pool.connection() as conn:
        await conn.execute("DELETE FROM documents WHERE id = %s", (drop,))  # cascades to its chunks
    terms, n, total = await stats()
    assert terms == {"zebra": 2, "stripe": 1, "herd": 1} and n == 2 and total == 4
    assert keep


async def test_common_word_queries_stay_bounded_and_rank_sensibly(pool: Any, db: str) -> None:
    texts = []
    for i in range(3000):
        words = [w for w, m in (("alpha", 2), ("beta", 3), ("gamma", 5)) if i % m != 0]
        texts.append(" ".join(words) + f" filler{i}")
    await insert_chunks(pool, texts)
    async with pool.connection() as conn:
        hits = await keyword_search(conn, "alpha beta gamma", scope=ReadScope(LOCAL_OWNER_ID), n=10, candidates=200)
        contents = {
            r["id"]: r["content"]
            for r in await (
                await conn.execute(
                    "SELECT id, content FROM document_chunks WHERE id = ANY(%s)", ([h[0] for h in hits],)
                )
            ).fetchall()
        }
    assert len(hits) == 10
    assert all({"alpha", "beta", "gamma"} <= set(contents[h[0]].split()) for h in hits)


# ------------------------------------------------------------------------------------ filtered HNSW


@pytest.mark.slow
async def test_selective_filter_still_returns_limit_results_at_20k(pool: Any, db: str) -> None:
    docs = [await insert_chunks(pool, [f"chunk {d}-{i}" for i in range(200)]) for d in range(100)]
    target = docs[42]  # 200 of 20,000 chunks: a 1% filter
    rng = np.random.default_rng(7)
    q = rng.normal(size=384).astype(np.float32)
    q /= np.linalg.norm(q)
    filters = SearchFilters(document_ids=[target])
    space = await active_test_space(pool)
    async with pool.connection() as conn:
        exact = await vector_search(conn, space, q, scope=ReadScope(LOCAL_OWNER_ID), n=10, filters=filters)
        # force the HNSW path: before pgvector 0.8 it comes back short after post-filtering and must fall back to
        # an exact scan; from 0.8 the iterative scan fills it
        via_index = await vector_search(
            conn, space, q, scope=ReadScope(LOCAL_OWNER_ID), n=10, filters=filters, exact_max_rows=0
        )
        in_target = {
            r["id"]
            for r in await (
                await conn.execute("SELECT id FROM document_chunks WHERE document_id = %s", (target,))
            ).fetchall()
        }
    assert len(exact) == 10 and len(via_index) == 10
    assert {i for i, _ in exact} <= in_target and {i for i, _ in via_index} <= in_target
    if space.index_type == "halfvec":
        # pgvector >= 0.8: the iterative scan fills the answer from the index (approximate, no exact retry);
        # random 384-dimension vectors are a near-tie worst case for HNSW
        assert len({i for i, _ in via_index} & {i for i, _ in exact}) >= 7
    else:
        assert [i for i, _ in via_index] == [i for i, _ in exact]
