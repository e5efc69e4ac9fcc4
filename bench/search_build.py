"""Building one size of the search bench: its own database in the bench cluster, streamed COPY, timed index
builds, sizes and memory. Used by bench/search.py.

Each size lives in a database of its own (`bench_<size>`, in the same embedded cluster as the SciFact corpus),
migrated by the runtime like any other. A finished build is recorded in that database's `bench_meta`
(`built`: size, seed, noise, real chunk count); a rerun with the same parameters finds it, checks the two
indexes are there, and skips the load. Synthetic chunks are generated and COPYed in batches, so memory stays
bounded by the batch, whatever the size.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import resource
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, LiteralString, Protocol, cast

import numpy as np
import psycopg
from psycopg import sql
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb

from ragchat.db.pool import Conn
from ragchat.vectors.store import Space, as_array

GIN_INDEX = "document_chunks_search_idx"
BENCH_TABLES = (
    "documents",
    "document_chunks",
    "chunk_embeddings",
    "bm25_groups",
    "bm25_document_groups",
    "bm25_group_terms",
    "bm25_group_stats",
)
ChunkRow = tuple[Any, ...]  # (document_id, owner_id, chunk_index, title, content, page, section, tokens, hash, vec)


class RowSource(Protocol):
    seed: int
    noise: float
    namespace: uuid.UUID
    kind: str  # "isotropic", "shaped" or "tree" (synthetic_batches)
    reader: uuid.UUID | None  # shaped and tree builds: every document in a collection shared `read` with this user

    def batches(self, count: int, batch: int, skip: set[int] | None = None) -> Iterator[tuple[int, list[ChunkRow]]]: ...


def log(msg: str) -> None:
    import sys

    print(msg, file=sys.stderr, flush=True)


async def fetch(conn: Conn, query: Any, params: Any = None) -> list[dict[str, Any]]:
    return await (await conn.execute(query, params)).fetchall()


def size_db_uri(base_uri: str, size: int, kind: str = "shaped") -> tuple[str, str]:
    """The URI of the bench database for `size` (same server, other database name) and that name. A `tree`
    build has a database of its own, so the shaped build of the same size stays for comparison."""
    name = f"bench_{size}" if kind != "tree" else f"bench_{size}_tree"
    return re.sub(r"^(postgres(?:ql)?://[^/]*/)[^?]*", lambda m: m.group(1) + name, base_uri, count=1), name


async def ensure_database(admin_uri: str, name: str) -> None:
    async with await psycopg.AsyncConnection[DictRow].connect(admin_uri, autocommit=True, row_factory=dict_row) as conn:
        have = await fetch(conn, "SELECT 1 FROM pg_database WHERE datname = %s", (name,))
        if not have:
            await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


async def meta_get(conn: Conn, key: str) -> Any:
    await conn.execute("CREATE TABLE IF NOT EXISTS bench_meta (key text PRIMARY KEY, value jsonb NOT NULL)")
    rows = await fetch(conn, "SELECT value FROM bench_meta WHERE key = %s", (key,))
    return rows[0]["value"] if rows else None


async def meta_set(conn: Conn, key: str, value: Any) -> None:
    await conn.execute(
        """INSERT INTO bench_meta (key, value) VALUES (%s, %s)
           ON CONFLICT (key) DO UPDATE SET value = excluded.value""",
        (key, Jsonb(value)),
    )


async def index_defs(conn: Conn, space: Space) -> dict[str, str]:
    """`CREATE INDEX` statements of the GIN index and of the space's partial HNSW index, read from the catalog
    the first time they are seen and kept in `bench_meta` (a build drops them, then re-creates them)."""
    names = [GIN_INDEX, hnsw_name(space)]
    key = f"indexdefs_space_{space.id}"
    found = await fetch(conn, "SELECT indexname, indexdef FROM pg_indexes WHERE indexname = ANY(%s)", (names,))
    defs = {r["indexname"]: r["indexdef"] for r in found}
    if len(defs) == 2:
        await meta_set(conn, key, defs)
        return defs
    saved = await meta_get(conn, key)
    if saved is None or len(saved) != 2:
        raise SystemExit(f"expected indexes {names} (or their saved definitions), found {list(defs)}")
    return saved


def if_not_exists(indexdef: str) -> LiteralString:
    """A `CREATE INDEX` read from pg_indexes, made a no-op when the index is there: a resumed build keeps the
    indexes a killed run's backend finished (indexes stay consistent with the rows whenever they were built)."""
    return cast(LiteralString, indexdef.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1))


def hnsw_name(space: Space) -> str:
    """The space's HNSW index name, as `Space.index_name()` spells it (`_half` on a halfvec index)."""
    return f"chunk_embeddings_hnsw_{space.id}{'_half' if space.index_type == 'halfvec' else ''}"


BENCH_COLLECTION = uuid.UUID("00000000-0000-0000-0000-00000000c011")


def bucket(doc: uuid.UUID) -> str:
    """A document's `bench_bucket` metadata value, "00".."99": filters on 1 or 10 buckets keep 1% or 10%."""
    return f"{doc.int % 100:02d}"


async def copy_documents(conn: Conn, owner: uuid.UUID, docs: list[tuple[uuid.UUID, str]], shared: bool = False) -> None:
    """COPY ready documents with their `bench_bucket`; `shared`: also into BENCH_COLLECTION (before their chunks
    arrive, so the BM25 triggers count them in the shared group at once)."""
    async with conn.cursor().copy(
        """COPY documents (id, owner_id, filename, title, content_type, byte_size, sha256, status,
                           chunks_total, chunks_done, metadata) FROM STDIN"""
    ) as copy:
        for doc, name in docs:
            sha = hashlib.sha256(name.encode()).hexdigest()
            meta = Jsonb({"bench_bucket": bucket(doc)})
            await copy.write_row((doc, owner, name, name, "text/plain", 1000, sha, "ready", 2, 2, meta))
    if shared:
        async with conn.cursor().copy("COPY document_collections (collection_id, document_id) FROM STDIN") as copy:
            for doc, _name in docs:
                await copy.write_row((BENCH_COLLECTION, doc))


async def share_setup(conn: Conn, owner: uuid.UUID, reader: uuid.UUID) -> None:
    """The reader's account and BENCH_COLLECTION (the owner's), shared `read` with the reader."""
    await conn.execute(
        """INSERT INTO users (id, name, username) VALUES (%s, 'bench-reader', 'bench-reader')
           ON CONFLICT (id) DO NOTHING""",
        (reader,),
    )
    await conn.execute(
        "INSERT INTO collections (id, owner_id, name) VALUES (%s, %s, 'bench-all') ON CONFLICT (id) DO NOTHING",
        (BENCH_COLLECTION, owner),
    )
    await conn.execute(
        """INSERT INTO collection_members (collection_id, user_id, role) VALUES (%s, %s, 'owner'), (%s, %s, 'read')
           ON CONFLICT DO NOTHING""",
        (BENCH_COLLECTION, owner, BENCH_COLLECTION, reader),
    )


async def copy_chunks(conn: Conn, space: Space, rows: list[ChunkRow]) -> None:
    """COPY chunk rows into document_chunks with ids taken from its identity sequence, then their vectors."""
    first = await copy_chunk_rows(conn, rows)
    await copy_vector_rows(conn, space, rows, first)


async def copy_chunk_rows(conn: Conn, rows: list[ChunkRow]) -> list[int]:
    """COPY chunks into document_chunks with ids drawn from its identity sequence; the ids, in row order."""
    got = await fetch(
        conn,
        "SELECT array_agg(nextval(pg_get_serial_sequence('document_chunks', 'id'))) AS ids FROM generate_series(1, %s)",
        (len(rows),),
    )
    ids: list[int] = got[0]["ids"]
    async with conn.cursor().copy(
        """COPY document_chunks (id, document_id, owner_id, chunk_index, title, content, page, section,
                                 token_count, content_hash) FROM STDIN"""
    ) as copy:
        for i, r in zip(ids, rows, strict=True):
            await copy.write_row((i, *r[:-1]))
    return ids


async def copy_vector_rows(conn: Conn, space: Space, rows: list[ChunkRow], ids: list[int]) -> None:
    """The rows' vectors into the space, in binary (what the server's `insert_vectors` writes as text)."""
    async with conn.cursor().copy(
        "COPY chunk_embeddings (space_id, chunk_id, document_id, owner_id, content_hash, embedding) "
        "FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["int4", "int8", "uuid", "uuid", "text", "vector"])
        for i, r in zip(ids, rows, strict=True):
            await copy.write_row((space.id, i, r[0], r[1], r[8], r[9]))


def build_key(size: int, real_n: int, synth: RowSource) -> dict[str, Any]:
    key = {"size": size, "real": real_n, "seed": synth.seed, "noise": synth.noise}
    if synth.kind != "isotropic":  # builds made before the shaped generator keep their key
        key |= {"kind": synth.kind, "shared_with": str(synth.reader) if synth.reader else None, "buckets": True}
    return key


async def built_already(conn: Conn, space: Space, key: dict[str, Any]) -> dict[str, Any] | None:
    """The saved build record when this database holds exactly this build with both indexes in place."""
    saved = await meta_get(conn, "built")
    if not saved or saved.get("key") != key:
        return None
    have = await fetch(
        conn,
        "SELECT to_regclass(%s) IS NOT NULL AS gin, to_regclass(%s) IS NOT NULL AS hnsw",
        (GIN_INDEX, hnsw_name(space)),
    )
    return saved["build"] if have[0]["gin"] and have[0]["hnsw"] else None


async def build_size(
    conn: Conn,
    space: Space,
    size: int,
    owner: uuid.UUID,
    real: list[dict[str, Any]],
    synth: RowSource,
    *,
    maintenance_work_mem: str,
    parallel_workers: int,
    batch: int,
    connect: Callable[[], Awaitable[Conn]],
    loaders: int = 2,
) -> dict[str, Any]:
    """`size` chunks for `owner` in this database (reused when already built, resumed when a load was cut
    short: the batches already in are recorded in bench_meta); every step timed."""
    real_n = min(size, len(real))
    key = build_key(size, real_n, synth)
    saved = await built_already(conn, space, key)
    if saved is not None:
        log(f"  reusing the {size}-chunk build in this database (load skipped)")
        return {**saved, "reused": True}
    indexdefs = await index_defs(conn, space)
    t: dict[str, Any] = {"real_chunks": real_n, "synthetic_chunks": size - real_n, "batch_rows": batch}
    await conn.execute("DELETE FROM bench_meta WHERE key = 'built'")
    loading = await meta_get(conn, "loading")
    if loading is None or loading.get("key") != key:
        for name in indexdefs:  # built after the load
            await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))
        await conn.execute(
            "TRUNCATE document_chunks, chunk_embeddings, document_collections, "
            "bm25_groups, bm25_document_groups, bm25_group_terms, bm25_group_stats, documents "
            "RESTART IDENTITY CASCADE"
        )
        await conn.execute("INSERT INTO users (id, name) VALUES (%s, 'bench') ON CONFLICT (id) DO NOTHING", (owner,))
        if synth.reader is not None:
            await share_setup(conn, owner, synth.reader)
        for table in BENCH_TABLES:  # autovacuum would re-read the table during the load; VACUUM ANALYZE follows
            await conn.execute(sql.SQL("ALTER TABLE {} SET (autovacuum_enabled = false)").format(sql.Identifier(table)))
        start = time.perf_counter()
        await load_real(conn, space, owner, real[:real_n], synth.reader is not None)
        t["load_real_s"] = round(time.perf_counter() - start, 2)
        loading = {"key": key, "batches": [], "load_real_s": t["load_real_s"]}
        await meta_set(conn, "loading", loading)
    else:
        t["load_real_s"] = loading.get("load_real_s")
        t["resumed_after_batches"] = len(loading["batches"])
        log(f"  resuming the load: {len(loading['batches'])} batches of {batch} already in")

    synth_n = size - real_n
    if synth_n:
        start = time.perf_counter()
        stats = await load_synthetic(
            conn, connect, space, owner, synth, synth_n, batch, set(loading["batches"]), loaders
        )
        t.update(stats)
        t["load_synthetic_wall_s"] = round(time.perf_counter() - start, 2)
        t["loaders"] = loaders

    await conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (maintenance_work_mem,))
    await conn.execute("SELECT set_config('max_parallel_maintenance_workers', %s, false)", (str(parallel_workers),))
    t["maintenance_work_mem"] = maintenance_work_mem
    t["max_parallel_maintenance_workers"] = parallel_workers
    t["loadavg_before_indexes"] = [round(x, 2) for x in os.getloadavg()]

    async def build_gin() -> None:  # GIN builds are serial in PostgreSQL 16: beside the HNSW build, on its own
        gc = await connect()
        try:
            await gc.execute("SELECT set_config('maintenance_work_mem', %s, false)", ("1GB",))
            start = time.perf_counter()
            await gc.execute(if_not_exists(indexdefs[GIN_INDEX]))
            t["create_gin_s"] = round(time.perf_counter() - start, 2)
            log(f"  GIN built in {t['create_gin_s']} s")
        finally:
            await gc.close()

    async def build_hnsw() -> None:
        start = time.perf_counter()
        await conn.execute(if_not_exists(indexdefs[hnsw_name(space)]))
        t["create_hnsw_s"] = round(time.perf_counter() - start, 2)
        log(f"  HNSW built in {t['create_hnsw_s']} s")

    start = time.perf_counter()
    await asyncio.gather(build_gin(), build_hnsw())
    t["create_indexes_wall_s"] = round(time.perf_counter() - start, 2)
    t["gin_and_hnsw_built"] = "concurrently (two connections)"
    t["loadavg_after_indexes"] = [round(x, 2) for x in os.getloadavg()]
    await conn.execute("RESET maintenance_work_mem")
    await conn.execute("RESET max_parallel_maintenance_workers")
    start = time.perf_counter()
    for table in BENCH_TABLES:
        await conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))
    t["vacuum_analyze_s"] = round(time.perf_counter() - start, 2)
    t.update(await db_sizes(conn, space, owner))
    await meta_set(conn, "built", {"key": key, "build": t})
    return t


async def db_sizes(conn: Conn, space: Space, owner: uuid.UUID) -> dict[str, Any]:
    """Bytes (and pretty) of the database, the two tables with their indexes, and the two search indexes."""
    rows = await fetch(
        conn,
        """SELECT pg_database_size(current_database()) AS database,
                  pg_total_relation_size('document_chunks') AS table_total,
                  pg_relation_size('document_chunks') AS table_heap,
                  pg_total_relation_size('chunk_embeddings') AS vectors_total,
                  pg_relation_size('chunk_embeddings') AS vectors_heap,
                  pg_relation_size(%s::regclass) AS hnsw,
                  pg_relation_size(%s::regclass) AS gin,
                  (SELECT count(*) FROM document_chunks WHERE owner_id = %s) AS n,
                  (SELECT count(*) FROM chunk_embeddings WHERE space_id = %s AND owner_id = %s) AS vectors""",
        (hnsw_name(space), GIN_INDEX, owner, space.id, owner),
    )
    r = rows[0]
    out: dict[str, Any] = {"n": r["n"], "vectors": r["vectors"]}
    for k in ("database", "table_total", "table_heap", "vectors_total", "vectors_heap", "hnsw", "gin"):
        out[f"{k}_bytes"] = int(r[k])
        out[k] = pretty(int(r[k]))
    return out


def pretty(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit in ("B", "kB") else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def memory(postmaster_pid: int | None) -> dict[str, Any]:
    """RSS and PSS of the Postgres processes (the postmaster and its children; PSS splits shared buffers
    fairly) and of this Python process (RSS now and peak)."""
    import psutil

    me = psutil.Process()
    out: dict[str, Any] = {
        "python_rss_mb": round(me.memory_info().rss / 2**20, 1),
        "python_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if postmaster_pid is None:
        return out
    try:
        root = psutil.Process(postmaster_pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return out
    rss = pss = 0
    n = 0
    for p in procs:
        try:
            full = p.memory_full_info()
        except psutil.Error:
            continue
        rss += full.rss
        pss += getattr(full, "pss", 0)
        n += 1
    out.update(
        {"postgres_processes": n, "postgres_rss_mb": round(rss / 2**20, 1), "postgres_pss_mb": round(pss / 2**20, 1)}
    )
    return out


class Shape:
    """Noise with the real vectors' covariance (their principal axes and variances), scaled per row so that the
    row's cosine similarity to its parent is a draw from `parent_sims` (the real corpus' top-1 neighbour
    similarities): synthetic rows are as close to their nearest real neighbour as real chunks are to theirs,
    and they spread along the directions real embeddings vary in."""

    def __init__(self, vectors: np.ndarray, parent_sims: np.ndarray) -> None:
        centred = vectors - vectors.mean(axis=0, keepdims=True)
        cov = centred.T @ centred / max(1, len(vectors) - 1)
        eigval, eigvec = np.linalg.eigh(cov.astype(np.float64))
        eigval = np.clip(eigval, 0.0, None)
        self.root = (eigvec * np.sqrt(eigval)).T.astype(np.float32)  # g @ root ~ N(0, cov)
        self.trace = float(eigval.sum())
        self.parent_sims = np.clip(parent_sims.astype(np.float64), 0.05, 0.995)

    def neighbours(self, parents: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n, d = parents.shape
        z = rng.standard_normal((n, d), dtype=np.float32) @ self.root
        target = rng.choice(self.parent_sims, size=n)
        # |parent| = 1 and E|z|^2 = trace: cos(parent + s z, parent) ~ 1 / sqrt(1 + s^2 trace)
        scale = np.sqrt((1.0 / target**2 - 1.0) / self.trace).astype(np.float32)
        return parents + scale[:, None] * z


def synthetic_batches(
    vectors: np.ndarray,
    titles: list[str],
    lengths: list[int],
    sentences: list[str],
    noise: float,
    seed: int,
    owner: uuid.UUID,
    namespace: uuid.UUID,
    count: int,
    batch: int,
    content_hash: Any,
    skip: set[int] | None = None,
    shape: Shape | None = None,
    tree: bool = False,
) -> Iterator[tuple[int, list[ChunkRow]]]:
    """`count` synthetic rows in batches of `batch`, as (batch number, rows): batch k is drawn from its own
    generator (seed, k), so the rows do not depend on the batches before them (`skip` leaves some out).

    Each vector is a random real vector plus noise, renormalised. Without `shape` the noise is isotropic
    gaussian with sigma `noise` per dimension: every copy sits at the same distance from its parent, a near-tie
    worst case for an HNSW graph. With `shape` the noise has the real vectors' covariance and each row's
    similarity to its parent is drawn from the real corpus' nearest-neighbour similarities (`Shape`).

    `tree` (with `shape`): the parent is any row made before the batch, real or synthetic, not only a real one.
    Every real vector then roots a random recursive tree instead of a star of ~86 children at one distance:
    the rows spread out step by step, as a growing corpus does, instead of crowding each real vector. Batches
    then depend on the ones before them: every batch is generated (in order, kept in memory), and `skip` only
    leaves rows out of the output."""
    import random

    real_n = len(vectors)
    pool = np.empty((real_n + count, vectors.shape[1]), dtype=np.float32) if tree else vectors
    if tree:
        pool[:real_n] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for k, start in enumerate(range(0, count, batch)):
        if skip and k in skip and not tree:
            continue
        n = min(batch, count - start)
        rng = np.random.default_rng([seed, k])
        pick = random.Random(f"{seed}-{k}")
        sources = rng.integers(0, len(titles), size=n)
        if shape is None:
            vecs = vectors[sources] + rng.normal(0.0, noise, size=(n, vectors.shape[1])).astype(np.float32)
        elif tree:
            parents = rng.integers(0, real_n + start, size=n)
            sources = np.where(parents < real_n, parents, sources)  # a synthetic parent: the title stays random
            vecs = shape.neighbours(pool[parents], rng)
        else:
            vecs = shape.neighbours(vectors[sources], rng)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        if tree:
            pool[real_n + start : real_n + start + n] = vecs
            if skip and k in skip:
                continue
        out: list[ChunkRow] = []
        for i in range(n):
            j = start + i
            src = int(sources[i])
            target = lengths[pick.randrange(len(lengths))]
            parts: list[str] = []
            size = 0
            while size < target:
                s = sentences[pick.randrange(len(sentences))]
                parts.append(s)
                size += len(s) + 1
            content = " ".join(parts)
            title = titles[src]
            doc = uuid.uuid5(namespace, f"doc-{j // 2}")
            tokens = int(len(content.split()) * 1.3)
            out.append((doc, owner, j % 2, title, content, None, None, tokens, content_hash(title, content), vecs[i]))
        yield k, out


async def exact_top_ids(
    conn: Conn, space: Space, owner: uuid.UUID, qvecs: list[np.ndarray], k: int = 10
) -> list[list[int]]:
    """Exact cosine top-k chunk ids per query in one streamed pass over the space's vectors (numpy), instead of
    one sequential scan per query in SQL: at a million rows a scan costs seconds, the pass costs one scan."""
    q = np.stack([v / np.linalg.norm(v) for v in qvecs]).astype(np.float32)
    best_s = np.full((len(q), k), -np.inf, dtype=np.float32)
    best_i = np.full((len(q), k), -1, dtype=np.int64)
    async with conn.transaction(), conn.cursor(name="bench_exact", binary=True) as cur:
        await cur.execute(
            "SELECT chunk_id, embedding FROM chunk_embeddings WHERE space_id = %s AND owner_id = %s",
            (space.id, owner),
        )
        while rows := await cur.fetchmany(20000):
            ids = np.fromiter((r["chunk_id"] for r in rows), dtype=np.int64, count=len(rows))
            vecs = np.stack([as_array(r["embedding"]) for r in rows])
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            sims = q @ vecs.T
            all_s = np.concatenate([best_s, sims], axis=1)
            all_i = np.concatenate([best_i, np.broadcast_to(ids, sims.shape)], axis=1)
            top = np.argpartition(-all_s, k - 1, axis=1)[:, :k]
            best_s = np.take_along_axis(all_s, top, axis=1)
            best_i = np.take_along_axis(all_i, top, axis=1)
    return [[int(i) for i in row if i >= 0] for row in best_i]


async def load_real(
    conn: Conn, space: Space, owner: uuid.UUID, real: list[dict[str, Any]], shared: bool = False
) -> None:
    docs = sorted({r["document_id"] for r in real})
    await copy_documents(conn, owner, [(d, f"scifact/{d}") for d in docs], shared)
    rows = [
        (
            r["document_id"],
            owner,
            r["chunk_index"],
            r["title"],
            r["content"],
            r["page"],
            r["section"],
            r["token_count"],
            r["content_hash"],
            as_array(r["embedding"]),
        )
        for r in real
    ]
    await copy_chunks(conn, space, rows)


async def load_synthetic(
    conn: Conn,
    connect: Callable[[], Awaitable[Conn]],
    space: Space,
    owner: uuid.UUID,
    synth: RowSource,
    count: int,
    batch: int,
    done: set[int],
    loaders: int,
) -> dict[str, Any]:
    """COPY the synthetic batches not in `done` over `loaders` connections (the server's COPY work — tsvector,
    BM25 trigger — runs in parallel; the BM25 counters serialise only at commit). A batch's documents and chunks
    commit together, then its vectors with its mark in bench_meta; a batch left half-done by a killed run is
    deleted first (its documents, cascading to chunks and vectors)."""
    batch += batch % 2
    todo = [k for k in range((count + batch - 1) // batch) if k not in done]
    for k in todo:
        ids = list(
            {uuid.uuid5(synth.namespace, f"doc-{j // 2}") for j in range(k * batch, min(count, (k + 1) * batch))}
        )
        await conn.execute("DELETE FROM documents WHERE id = ANY(%s)", (ids,))
    gen_s = copy_s = 0.0
    rows_done = 0
    started = tick = time.perf_counter()
    source = synth.batches(count, batch, skip=set(done))

    async def loader() -> None:
        nonlocal gen_s, copy_s, rows_done, tick
        lc = await connect()
        try:
            while True:
                a = time.perf_counter()
                item = next(source, None)
                if item is None:
                    return
                k, chunk = item
                b = time.perf_counter()
                new_docs = sorted({r[0] for r in chunk})
                async with lc.transaction():
                    await copy_documents(lc, owner, [(d, f"synthetic/{d}") for d in new_docs], synth.reader is not None)
                    first = await copy_chunk_rows(lc, chunk)
                async with lc.transaction():
                    await copy_vector_rows(lc, space, chunk, first)
                    await lc.execute(
                        """UPDATE bench_meta SET value = jsonb_set(value, '{batches}', (value->'batches') || to_jsonb(%s::int))
                           WHERE key = 'loading'""",  # noqa: E501
                        (k,),
                    )
                c = time.perf_counter()
                gen_s += b - a
                copy_s += c - b
                rows_done += len(chunk)
                if c - tick > 30:
                    tick = c
                    log(
                        f"  {rows_done}/{count - len(done) * batch} synthetic rows this run, "
                        f"{rows_done / (c - started):.0f}/s"
                    )
        finally:
            await lc.close()

    await asyncio.gather(*(loader() for _ in range(max(1, loaders))))
    return {
        "generate_synthetic_s": round(gen_s, 2),
        "copy_synthetic_s_summed_over_loaders": round(copy_s, 2),
        "synthetic_rows_this_run": rows_done,
        "copy_synthetic_ms_per_row": round(1000 * (time.perf_counter() - started) / max(rows_done, 1), 3),
    }


def synth_namespace(synth: RowSource) -> uuid.UUID:
    return synth.namespace
