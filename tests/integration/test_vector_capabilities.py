"""pgvector's capabilities, detected: on >= 0.8 spaces get a halfvec HNSW index and filtered searches scan it
iteratively; a space indexed as `vector` (older pgvector, or made before) keeps the old path (short HNSW
answers retried exactly) until the start-up rebuild turns its index into halfvec."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest

from ragchat.core.search import SearchFilters
from ragchat.db.capabilities import modern_pgvector, pgvector_version, version_tuple
from ragchat.readscope.sql import ReadScope
from ragchat.retrieval.filters import filter_sql
from ragchat.retrieval.vector import _SET_EF, EF_MAX, EfPolicy, _run, vector_search
from ragchat.vectors.indexes import upgrade_indexes
from ragchat.vectors.store import Space, VectorRow, create_space, insert_vectors, list_spaces
from tests.support.services import LOCAL_OWNER_ID

DIM = 32


def test_version_parsing() -> None:
    assert version_tuple("0.8.6") == (0, 8, 6) and version_tuple("0.7.0-dev") == (0, 7, 0)
    assert version_tuple(None) == () and version_tuple("x") == ()
    assert [modern_pgvector(v) for v in ("0.5.1", "0.6.2", "0.7.4", "0.8.0", "0.8.6", "0.10.1", None)] == [
        False,
        False,
        False,
        True,
        True,
        True,
        False,
    ]


async def add_documents(pool: Any, spaces: list[Space], docs: int, per_doc: int) -> list[uuid.UUID]:
    """Ready documents of random unit vectors, the same vectors in every given space."""
    rng = np.random.default_rng(29)
    ids: list[uuid.UUID] = []
    async with pool.connection() as conn, conn.transaction():
        for d in range(docs):
            doc = await (
                await conn.execute(
                    """INSERT INTO documents (owner_id, filename, title, content_type, byte_size, sha256, status)
                       VALUES (%s, %s, '', 'text/plain', 1, %s, 'ready') RETURNING id""",
                    (LOCAL_OWNER_ID, f"d{d}.txt", uuid.uuid4().hex),
                )
            ).fetchone()
            async with conn.cursor().copy(
                "COPY document_chunks (document_id, owner_id, chunk_index, title, content, token_count, content_hash)"
                " FROM STDIN"
            ) as copy:
                for i in range(per_doc):
                    await copy.write_row((doc["id"], LOCAL_OWNER_ID, i, "", f"chunk {d}-{i}", 1, f"h{i}"))
            chunks = await (
                await conn.execute("SELECT id FROM document_chunks WHERE document_id = %s ORDER BY id", (doc["id"],))
            ).fetchall()
            rows = []
            for c in chunks:
                v = rng.normal(size=DIM).astype(np.float32)
                rows.append(VectorRow(c["id"], doc["id"], LOCAL_OWNER_ID, f"h{c['id']}", v / np.linalg.norm(v)))
            for space in spaces:
                await insert_vectors(conn, space, rows)
            ids.append(doc["id"])
        await conn.execute("ANALYZE chunk_embeddings")
    return ids


async def index_defs(pool: Any, space: Space) -> list[str]:
    async with pool.connection() as conn:
        rows = await (
            await conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename = 'chunk_embeddings' AND indexdef LIKE %s",
                (f"%space_id = {space.id})%",),
            )
        ).fetchall()
    return [r["indexdef"] for r in rows]


def unit(seed: int) -> np.ndarray:
    q = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return q / np.linalg.norm(q)


@pytest.mark.slow
async def test_halfvec_index_and_iterative_filtered_scans(pool: Any, db: str) -> None:
    async with pool.connection() as conn, conn.transaction():
        if not modern_pgvector(await pgvector_version(conn)):
            pytest.skip("the test database's pgvector is older than 0.8")
        half = await create_space(conn, "test", "random-half", DIM, "active")  # detected: halfvec
        full = await create_space(conn, "test", "random-full", DIM, "building", index_type="vector")  # forced
    assert half.index_type == "halfvec" and full.index_type == "vector"
    assert any("halfvec_cosine_ops" in d for d in await index_defs(pool, half))
    assert any("vector_cosine_ops" in d and "halfvec" not in d for d in await index_defs(pool, full))

    docs = await add_documents(pool, [half, full], docs=60, per_doc=100)  # 6,000 chunks
    target = docs[17]  # 100 of 6,000 chunks: a 1.7% filter
    filters = SearchFilters(document_ids=[target])
    scope = ReadScope(LOCAL_OWNER_ID)
    where, params = filter_sql(scope, filters, alias="e")
    async with pool.connection() as conn:
        in_target = {
            r["id"]
            for r in await (
                await conn.execute("SELECT id FROM document_chunks WHERE document_id = %s", (target,))
            ).fetchall()
        }
        for seed in range(5):
            q = unit(seed)
            args = {**params, "q": q, "n": 10}
            # One HNSW scan each, no exact retry: the iterative scan fills the answer, the plain one cannot. (With
            # sorting off the planner takes the index for ORDER BY … LIMIT even under this selective filter; one
            # connection and transaction each: SET LOCAL lasts to the end of the outer transaction.)
            async with pool.connection() as plain_conn, plain_conn.transaction():
                await plain_conn.execute("SET LOCAL enable_sort = off")
                plain = await _run(plain_conn, full, where, args, exact=False, ef=EfPolicy(10))
            async with pool.connection() as half_conn, half_conn.transaction():
                await half_conn.execute("SET LOCAL enable_sort = off")
                iterative = await _run(half_conn, half, where, args, exact=False, ef=EfPolicy(10))
            assert len(iterative) == 10 and {r["id"] for r in iterative} <= in_target
            assert len(plain) < 10

            # Through vector_search both are right: exact where the filter is small, retried exactly when short.
            exact = await vector_search(conn, half, q, scope=scope, n=10, filters=filters)
            for space in (half, full):
                via_index = await vector_search(conn, space, q, scope=scope, n=10, filters=filters, exact_max_rows=0)
                assert [i for i, _ in via_index] == [i for i, _ in exact]
                assert [s for _, s in via_index] == pytest.approx([s for _, s in exact], abs=1e-6)


async def test_a_vector_index_is_rebuilt_as_halfvec(pool: Any, db: str) -> None:
    async with pool.connection() as conn, conn.transaction():
        if not modern_pgvector(await pgvector_version(conn)):
            pytest.skip("the test database's pgvector is older than 0.8")
        old = await create_space(conn, "test", "random", DIM, "active", index_type="vector")
    await add_documents(pool, [old], docs=10, per_doc=50)
    scope = ReadScope(LOCAL_OWNER_ID)
    async with pool.connection() as conn:
        before = [await vector_search(conn, old, unit(s), scope=scope, n=10) for s in range(5)]
        rebuilt = await upgrade_indexes(conn)
        again = await upgrade_indexes(conn)
        (now,) = [s for s in await list_spaces(conn) if s.id == old.id]
        after = [await vector_search(conn, now, unit(s), scope=scope, n=10) for s in range(5)]
    assert [s.id for s in rebuilt] == [old.id] and again == []
    assert now.index_type == "halfvec"
    defs = await index_defs(pool, now)
    assert len(defs) == 1 and "halfvec_cosine_ops" in defs[0] and "_half" in defs[0]
    for b, a in zip(before, after, strict=True):
        assert [i for i, _ in a] == [i for i, _ in b]
        assert [s for _, s in a] == pytest.approx([s for _, s in b], abs=1e-6)


async def test_ef_search_grows_with_the_index_as_the_policy_says(pool: Any, db: str) -> None:
    """The statement that sets hnsw.ef_search reads the index's row estimate and computes what EfPolicy.at
    computes; an index that is not there (or never analysed) counts as small."""
    async with pool.connection() as conn, conn.transaction():
        space = await create_space(conn, "test", "random-ef", DIM, "active")
    await add_documents(pool, [space], docs=4, per_doc=50)  # 200 rows, analysed
    async with pool.connection() as conn:
        await conn.execute("ANALYZE chunk_embeddings")  # also estimates the partial HNSW index's reltuples
        row = await (
            await conn.execute(
                "SELECT reltuples FROM pg_class WHERE oid = to_regclass(quote_ident(%s))", (space.index_relname,)
            )
        ).fetchone()
        assert row is not None and row["reltuples"] == 200
        cases = [  # (reference rows, policy, index name)
            (100_000.0, EfPolicy(100, 0.3, 1.0), space.index_relname),  # below the reference: the base
            (10.0, EfPolicy(100, 0.3, 1.0), space.index_relname),  # 20x the reference: 100 * 20**0.3 = 246
            (10.0, EfPolicy(100, 0.0, 2.0), space.index_relname),  # no growth, a filtered scan: 200
            (1.0, EfPolicy(400, 1.0, 4.0), space.index_relname),  # capped at pgvector's limit
            (10.0, EfPolicy(64, 0.5, 1.0), "no_such_index"),  # unknown index: small
        ]
        for reference, policy, index in cases:
            async with conn.transaction():
                params = {"max": EF_MAX, "base": policy.base, "factor": policy.factor, "growth": policy.growth}
                await conn.execute(_SET_EF, {**params, "reference": reference, "index": index})
                got = await (await conn.execute("SELECT current_setting('hnsw.ef_search')::int AS ef")).fetchone()
            rows = 200.0 if index == space.index_relname else 1.0
            scale = max(1.0, rows / reference) ** policy.growth
            expected = min(EF_MAX, max(policy.base, round(policy.base * policy.factor * scale)))
            assert got is not None and got["ef"] == expected
        assert [c[1].at(r) for c, r in [(cases[0], 200.0), (cases[1], 2_000_000.0)]] == [100, 246]
        assert EfPolicy(100, 0.3).at(1_000_000) == 200 and EfPolicy(100, 0.3, 2.0).at(1_000_000) == 399
