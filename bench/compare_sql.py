"""The database side of the refactor, statement by statement: the pre-refactor SQL vs the new code's, on the
two data directories `bench/compare_refactor.py` leaves behind (`<work>/old`, `<work>/new`: the same chunks,
the largest size built last), both servers up at once, interleaved in one process.

End-to-end search latency on the 2-core box is dominated by the query embedding, which swings with load;
this isolates what the refactor changed in Postgres (no model is loaded):

* vector arm, n=50 / n=10, ef_search 100 — old: `document_chunks.embedding` with its HNSW index; new:
  `vector_search(conn, space, …)` on `chunk_embeddings` and the space's partial expression index;
* hydration of 10 ids — old: chunks ⋈ documents, similarity from `c.embedding`; new: the statement
  `Searcher._hydrate` builds (… LEFT JOIN chunk_embeddings for the similarity);
* the ingest store transaction of one 2-chunk document (rolled back, and committed) — old: `store_chunks`
  of 0fa9ef7 (one COPY with the vectors); new: `server.documents.repository.store_chunks` (space check `FOR SHARE`, COPY
  chunks, read their ids, COPY vectors via `insert_vectors`);
* the embedding-cache lookup for 256 hashes — old: `cached_embeddings`; new: `store.cached_vectors`.

The old statements are copied from 0fa9ef7 (its code cannot be imported next to the new one); the new side
calls the new server functions. Per statement and round, N timed executions each (order alternating by
round); medians of per-round medians, ratio new/old.

    .venv/bin/python bench/compare_sql.py [--work /tmp/ragchat-compare] [--rounds 5] [--n 200]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import re
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import psycopg
from pgvector.psycopg import register_vector_async
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from bench.common import RESULTS, cpu_context, table, write_json
from server.db.access import ReadScope
from server.db.embedded import start_embedded
from server.documents import repository as repo
from server.retrieval.vector import vector_search
from server.vectors import store
from server.vectors.store import Space

BENCH_OWNER = uuid.UUID("00000000-0000-0000-0000-0000000be9c4")
MODEL = "all-MiniLM-L6-v2"


async def connect(uri: str) -> psycopg.AsyncConnection:
    conn = await psycopg.AsyncConnection.connect(uri, autocommit=True, row_factory=dict_row)
    await register_vector_async(conn)
    return conn


# ---- the pre-refactor statements (0fa9ef7) -----------------------------------------------------------------
async def old_vector(conn: psycopg.AsyncConnection, q: np.ndarray, n: int) -> list[int]:
    async with conn.transaction():
        await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(max(100, n)),))
        rows = await (
            await conn.execute(
                """SELECT c.id, c.embedding <=> %(q)s AS distance FROM document_chunks c
                   WHERE c.owner_id = %(owner)s AND c.embedding IS NOT NULL
                   ORDER BY c.embedding <=> %(q)s LIMIT %(n)s""",
                {"q": q, "owner": BENCH_OWNER, "n": n},
            )
        ).fetchall()
    return [r["id"] for r in rows]


OLD_HYDRATE = """SELECT c.id, c.document_id, c.chunk_index, c.content, c.page, c.section, c.content_hash,
                        d.filename, d.title, d.metadata, 1 - (c.embedding <=> %(q)s) AS similarity
                 FROM document_chunks c JOIN documents d ON d.id = c.document_id
                 WHERE c.id = ANY(%(ids)s)"""


async def old_store(conn: psycopg.AsyncConnection, doc: uuid.UUID, chunks: list[dict[str, Any]], src: str) -> None:
    await conn.execute("DELETE FROM document_chunks WHERE document_id = %s", (doc,))
    async with conn.cursor().copy(
        """COPY document_chunks (document_id, owner_id, chunk_index, title, content, page, section,
                                 token_count, content_hash, embedding, embedding_model) FROM STDIN"""
    ) as copy:
        for i, c in enumerate(chunks):
            await copy.write_row(
                (doc, BENCH_OWNER, i, c["title"], c["content"], None, None, c["token_count"], c["content_hash"],
                 c["embedding"], MODEL)
            )  # fmt: skip
    await conn.execute(
        """UPDATE documents SET status = 'ready', error = NULL, title = %s, chunks_total = %s, chunks_done = %s,
               page_count = %s, metadata = metadata || %s, locked_at = NULL, updated_at = now()
           WHERE id = %s""",
        (chunks[0]["title"], len(chunks), len(chunks), None, Jsonb({}), doc),
    )
    await conn.execute(
        "DELETE FROM documents WHERE owner_id = %s AND metadata->>'source_path' = %s AND id <> %s",
        (BENCH_OWNER, src, doc),
    )


async def old_cache(conn: psycopg.AsyncConnection, hashes: list[str]) -> int:
    rows = await (
        await conn.execute(
            """SELECT DISTINCT ON (content_hash) content_hash, embedding FROM document_chunks
               WHERE owner_id = %s AND embedding_model = %s AND content_hash = ANY(%s)
                 AND embedding IS NOT NULL""",
            (BENCH_OWNER, MODEL, hashes),
        )
    ).fetchall()
    return len(rows)


# ---- the new code --------------------------------------------------------------------------------------------
def new_hydrate_sql(space: Space) -> sql.Composed:
    """The statement `Searcher._hydrate` builds for an active space and a query vector."""
    return sql.SQL(
        """SELECT c.id, c.document_id, c.chunk_index, c.content, c.page, c.section, c.content_hash,
                  d.filename, d.title, d.metadata, {} AS similarity
           FROM document_chunks c JOIN documents d ON d.id = c.document_id {}
           WHERE c.id = ANY(%(ids)s)"""
    ).format(
        sql.SQL("1 - ({} <=> %(q)s)").format(space.vector_expr("e")),
        sql.SQL("LEFT JOIN chunk_embeddings e ON e.space_id = {} AND e.chunk_id = c.id").format(sql.Literal(space.id)),
    )


async def new_store(
    conn: psycopg.AsyncConnection, space: Space, doc: uuid.UUID, chunks: list[dict[str, Any]], src: str
) -> None:
    stored = [
        repo.StoredChunk(i, c["content"], None, None, c["token_count"], c["content_hash"], c["embedding"])
        for i, c in enumerate(chunks)
    ]
    await repo.store_chunks(
        conn,
        document_id=doc,
        owner=BENCH_OWNER,
        title=chunks[0]["title"],
        chunks=stored,
        space=space,
        page_count=None,
        metadata={},
        replaces_source=src,
    )


async def insert_document(conn: psycopg.AsyncConnection, doc: uuid.UUID, src: str) -> None:
    name = f"sqlbench/{doc}"
    await conn.execute(
        """INSERT INTO documents (id, owner_id, filename, title, content_type, byte_size, sha256, status, metadata)
           VALUES (%s, %s, %s, %s, 'text/plain', 1000, %s, 'processing', %s)""",
        (doc, BENCH_OWNER, name, name, hashlib.sha256(name.encode()).hexdigest(), Jsonb({"source_path": src})),
    )


# ---- timing ----------------------------------------------------------------------------------------------------
async def timed(n: int, call: Callable[[int], Awaitable[Any]]) -> float:
    """Median ms of n calls."""
    lat = []
    for i in range(n):
        start = time.perf_counter()
        await call(i)
        lat.append((time.perf_counter() - start) * 1000)
    return statistics.median(lat)


async def explain(conn: psycopg.AsyncConnection, query: Any, params: dict[str, Any]) -> list[str]:
    if isinstance(query, str):
        query = sql.SQL(query)  # type: ignore[arg-type]
    rows = await (await conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + query, params)).fetchall()
    return [re.sub(r"'\[[-0-9.e,]{40,}\]'", "'[…]'", r["QUERY PLAN"]) for r in rows]


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    old_db, new_db = start_embedded(args.work / "old"), start_embedded(args.work / "new")
    try:
        old, new = await connect(old_db.uri), await connect(new_db.uri)
        space = await store.space_in_state(new, "active")
        assert space is not None, "the new data dir has no active embedding space"
        sizes = {
            "old": (await (await old.execute("SELECT count(*) AS n FROM document_chunks")).fetchone())["n"],  # type: ignore[index]
            "new": (await (await new.execute("SELECT count(*) AS n FROM chunk_embeddings")).fetchone())["n"],  # type: ignore[index]
        }
        real = await (
            await old.execute(
                "SELECT title, content, token_count, content_hash, embedding FROM bench_real_chunks ORDER BY src_id"
            )
        ).fetchall()
        rng = np.random.default_rng(5)
        vecs = np.stack([store.as_array(r["embedding"]) for r in real])
        qs = vecs[rng.integers(0, len(vecs), 64)] + rng.normal(0, 0.05, (64, vecs.shape[1])).astype(np.float32)
        qs /= np.linalg.norm(qs, axis=1, keepdims=True)
        chunks = [dict(r, embedding=store.as_array(r["embedding"])) for r in real]
        top = {i: (await old_vector(old, qs[i % 64], 10)) for i in range(64)}
        hashes = [[c["content_hash"] for c in chunks[(k * 97) % len(chunks) :][:256]] for k in range(16)]

        async def o_store(i: int) -> None:
            doc, src = uuid.uuid4(), f"sqlbench#{i}"
            async with old.transaction(force_rollback=True):
                await insert_document(old, doc, src)
                await old_store(old, doc, chunks[(2 * i) % (len(chunks) - 1) :][:2], src)

        async def n_store(i: int) -> None:
            doc, src = uuid.uuid4(), f"sqlbench#{i}"
            async with new.transaction(force_rollback=True):
                await insert_document(new, doc, src)
                await new_store(new, space, doc, chunks[(2 * i) % (len(chunks) - 1) :][:2], src)

        async def o_store_commit(i: int) -> None:
            doc, src = uuid.uuid4(), f"sqlbench#{i}"
            async with old.transaction():
                await insert_document(old, doc, src)
                await old_store(old, doc, chunks[(2 * i) % (len(chunks) - 1) :][:2], src)

        async def n_store_commit(i: int) -> None:
            doc, src = uuid.uuid4(), f"sqlbench#{i}"
            async with new.transaction():
                await insert_document(new, doc, src)
                await new_store(new, space, doc, chunks[(2 * i) % (len(chunks) - 1) :][:2], src)

        hydrate_new = new_hydrate_sql(space)
        cases: dict[str, tuple[Callable[[int], Awaitable[Any]], Callable[[int], Awaitable[Any]]]] = {
            "vector arm n=50 (ef 100)": (
                lambda i: old_vector(old, qs[i % 64], 50),
                lambda i: vector_search(new, space, qs[i % 64], scope=ReadScope(BENCH_OWNER), n=50),
            ),
            "vector arm n=10 (ef 100)": (
                lambda i: old_vector(old, qs[i % 64], 10),
                lambda i: vector_search(new, space, qs[i % 64], scope=ReadScope(BENCH_OWNER), n=10),
            ),
            "hydrate 10 ids": (
                lambda i: await_all(old.execute(OLD_HYDRATE, {"q": qs[i % 64], "ids": top[i % 64]})),
                lambda i: await_all(new.execute(hydrate_new, {"q": qs[i % 64], "ids": top[i % 64]})),
            ),
            "store 1 document, 2 chunks (txn, rolled back)": (o_store, n_store),
            "store 1 document, 2 chunks (committed)": (o_store_commit, n_store_commit),
            "embedding-cache lookup, 256 hashes": (
                lambda i: old_cache(old, hashes[i % 16]),
                lambda i: store.cached_vectors(new, space, BENCH_OWNER, hashes[i % 16]),
            ),
        }
        per: dict[str, dict[str, list[float]]] = {k: {"old": [], "new": []} for k in cases}
        context_start = cpu_context()
        for rnd in range(args.rounds):
            for name, (o, n) in cases.items():
                await timed(10, o)  # warm
                await timed(10, n)
                order = [("old", o), ("new", n)] if rnd % 2 == 0 else [("new", n), ("old", o)]
                for tree, call in order:
                    per[name][tree].append(await timed(args.n, call))
        for conn in (old, new):  # the committed documents (their chunks and vectors cascade)
            await conn.execute("DELETE FROM documents WHERE filename LIKE 'sqlbench/%%'")
        plans = {
            "hydrate_old": await explain(old, OLD_HYDRATE, {"q": qs[0], "ids": top[0]}),
            "hydrate_new": await explain(new, hydrate_new, {"q": qs[0], "ids": top[0]}),
        }
        await old.close()
        await new.close()
    finally:
        old_db.stop()
        new_db.stop()
    summary = {
        name: {
            "old_ms": round(statistics.median(v["old"]), 3),
            "new_ms": round(statistics.median(v["new"]), 3),
            "ratio": round(statistics.median(v["new"]) / statistics.median(v["old"]), 3),
            "ratio_by_round": [round(b / a, 3) for a, b in zip(v["old"], v["new"], strict=True)],
        }
        for name, v in per.items()
    }
    return {
        "chunks": sizes,
        "rounds": args.rounds,
        "n": args.n,
        "summary": summary,
        "plans": plans,
        "cpu_context_start": context_start,
        "cpu_context_end": cpu_context(),
    }


async def await_all(cursor_coro: Awaitable[Any]) -> list[Any]:
    return await (await cursor_coro).fetchall()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=Path("/tmp/ragchat-compare"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--n", type=int, default=200, help="timed executions per statement, tree and round")
    p.add_argument("--json", type=Path, default=RESULTS / "refactor_compare_sql.json")
    args = p.parse_args(argv)
    out = asyncio.run(main_async(args))
    rows = [
        [name, s["old_ms"], s["new_ms"], f"{s['ratio']:.3f}", " ".join(f"{x:.2f}" for x in s["ratio_by_round"])]
        for name, s in out["summary"].items()
    ]
    print(
        table(
            ["statement (median ms)", "old", "new", "×", "× by round"],
            rows,
            title=f"pre-refactor SQL vs new code, {out['chunks']['new']:,} chunks, {args.rounds} rounds × {args.n}; "
            f"load {out['cpu_context_start']['loadavg']} → {out['cpu_context_end']['loadavg']}",
        )
    )
    for name, plan in out["plans"].items():
        print(f"\n{name}:\n" + "\n".join("  " + line for line in plan))
    write_json(args.json, out)
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
