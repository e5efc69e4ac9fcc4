"""What access control costs a search: the owner-only fast path vs documents shared through a collection.

SciFact is ingested once into bench/search.py's cached database (`bench/.data/`, `bench_real_chunks`). Per
ownership state the chunks and vectors are rebuilt from it (same chunk ids; the BM25 triggers fill the per-owner
stats; GIN + HNSW rebuilt). State `all-A`: A owns every document and shares all of them (a collection, `read`)
with B — scenario 1 *owner-only* (A searches, `ReadScope.shared` False) and 2 *shared* (B searches: OR clause,
BM25 stats of the shared part on the fly). State `half`: B owns a seeded half, A shares the other half with B —
scenario 3 *half-shared* (B searches). "+hnsw" rows use a second searcher with EXACT_SCAN_MAX_ROWS=0: before
578df0b a shared scope made the vector arm count the readable rows and scan them exactly when ≤ 20,000
(SciFact: ~11.6k chunks); since then (and always for owner-only) it is the same path: an A/A noise check.
Query embeddings are cached first; the scenarios of a state run interleaved query by query; the states
alternate for `--rounds` rounds. The git commit is recorded (the code is imported at start).

    HF_HUB_OFFLINE=1 .venv/bin/python bench/access.py [--queries 100] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from bench.common import DATA, RESULTS, bench_runtime, bench_settings, cpu_context, load_embedder, table, write_json
from bench.search import BENCH_OWNER, GIN_INDEX, admin, ensure_corpus, fetch, log
from bench.search_build import hnsw_name, index_defs
from ragchat.core.options import options_of
from ragchat.core.principal import Principal
from ragchat.evaluation.beir import load_beir
from ragchat.evaluation.metrics import dedup_keep_first, ndcg_at_k
from ragchat.readscope.sql import read_chunk_scope, read_scope
from ragchat.retrieval.keyword import query_terms
from ragchat.runtime import Overrides, open_runtime
from ragchat.vectors.store import as_array

A = Principal(BENCH_OWNER, "bench", False)
B = Principal(uuid.UUID("00000000-0000-0000-0000-0000000acce5"), "bench-reader", False)
MODES = ("vector", "keyword", "hybrid")
COLLECTION = "bench-access"
STAGES = ("vector", "keyword", "hydrate")
SHARING_TABLES = ("collections", "collection_members", "document_collections")
STATES = {"all-A": ("owner-only", "shared"), "half": ("half-shared",)}


async def build_state(
    conn: Any, space: Any, defs: dict[str, str], docs: list[uuid.UUID], state: str, copies: int = 1
) -> None:
    """Chunks + vectors rebuilt from `bench_real_chunks` for the state's owners (same chunk ids; the triggers
    maintain the per-share-group BM25 tables), no collection yet. `copies` > 1 (state all-A only) adds
    copies - 1 copies of every document (A's, same text and metadata, each vector plus its own gaussian noise
    of norm ~NOISE): a larger corpus with SciFact's vocabulary and neighbour structure."""
    await conn.execute("DELETE FROM collections WHERE owner_id = ANY(%s)", ([A.user_id, B.user_id],))
    await conn.execute(
        "TRUNCATE document_chunks, chunk_embeddings, "
        "bm25_groups, bm25_document_groups, bm25_group_terms, bm25_group_stats CASCADE"
    )
    await conn.execute(
        "DELETE FROM documents WHERE owner_id = ANY(%s) AND id <> ALL(%s)", ([A.user_id, B.user_id], docs)
    )
    b_docs = docs[: len(docs) // 2] if state == "half" else []
    await conn.execute("UPDATE documents SET owner_id = %s WHERE id = ANY(%s)", (A.user_id, docs))
    await conn.execute("UPDATE documents SET owner_id = %s WHERE id = ANY(%s)", (B.user_id, b_docs))
    hnsw = hnsw_name(space)
    await conn.execute(f"DROP INDEX IF EXISTS {hnsw}")
    await conn.execute(f"DROP INDEX IF EXISTS {GIN_INDEX}")
    await conn.execute(
        """INSERT INTO document_chunks (id, document_id, owner_id, chunk_index, title, content, page, section,
                                        token_count, content_hash) OVERRIDING SYSTEM VALUE
           SELECT r.src_id, r.document_id, d.owner_id, r.chunk_index, r.title, r.content, r.page, r.section,
                  r.token_count, r.content_hash
           FROM bench_real_chunks r JOIN documents d ON d.id = r.document_id ORDER BY r.src_id"""
    )
    await conn.execute(
        """INSERT INTO chunk_embeddings (space_id, chunk_id, document_id, owner_id, content_hash, embedding)
           SELECT %s, c.id, c.document_id, c.owner_id, c.content_hash, r.embedding
           FROM document_chunks c JOIN bench_real_chunks r ON r.src_id = c.id""",
        (space.id,),
    )
    for k in range(1, copies):
        await add_copy(conn, space, k)
    await conn.execute(defs[GIN_INDEX])
    await conn.execute("SET maintenance_work_mem = '1GB'")
    await conn.execute(defs[hnsw])
    await conn.execute("RESET maintenance_work_mem")
    for t in ("document_chunks", "chunk_embeddings", "bm25_group_terms", "documents", *SHARING_TABLES):
        await conn.execute(f"VACUUM ANALYZE {t}")  # the sharing tables too: no dead rows of the last collection


NOISE = 0.35  # per-copy noise norm, unit vectors: copies stay near their source without being ties


async def add_copy(conn: Any, space: Any, k: int) -> None:
    """Copy k of every real document, chunk and vector (ids derived from the source's and k)."""
    await conn.execute(
        """INSERT INTO documents (id, owner_id, filename, title, content_type, byte_size, sha256, status, metadata)
           SELECT md5(d.id::text || %(k)s)::uuid, d.owner_id, d.filename, d.title, d.content_type, d.byte_size,
                  md5(d.sha256 || %(k)s), d.status, d.metadata
           FROM documents d WHERE d.id IN (SELECT document_id FROM bench_real_chunks)""",
        {"k": k},
    )
    await conn.execute(
        """INSERT INTO document_chunks (document_id, owner_id, chunk_index, title, content, page, section,
                                        token_count, content_hash)
           SELECT md5(r.document_id::text || %(k)s)::uuid, %(owner)s, r.chunk_index, r.title, r.content, r.page,
                  r.section, r.token_count, md5(r.content_hash || %(k)s)
           FROM bench_real_chunks r ORDER BY r.src_id""",
        {"k": k, "owner": A.user_id},
    )
    rows = await fetch(
        conn,
        """SELECT c.id, c.document_id, c.content_hash, r.embedding FROM document_chunks c
           JOIN bench_real_chunks r ON md5(r.document_id::text || %(k)s)::uuid = c.document_id
                                   AND r.chunk_index = c.chunk_index""",
        {"k": k},
    )
    rng = np.random.default_rng(1000 + k)
    async with conn.cursor().copy(
        "COPY chunk_embeddings (space_id, chunk_id, document_id, owner_id, content_hash, embedding) FROM STDIN"
    ) as copy:
        for r in rows:
            v = np.asarray(as_array(r["embedding"]), dtype=np.float32)
            v = v + rng.normal(scale=NOISE / np.sqrt(v.size), size=v.size).astype(np.float32)
            v /= np.linalg.norm(v)
            await copy.write_row((space.id, r["id"], r["document_id"], A.user_id, r["content_hash"], v))


async def share(conn: Any, rt: Any, docs: list[uuid.UUID]) -> None:
    """A's documents into a collection of A's (through the service), shared `read` with B."""
    coll = await rt.collections.create(A, COLLECTION)
    await rt.collections.set_member(A, coll["id"], B.user_id, "read")
    await conn.execute(
        """INSERT INTO document_collections (collection_id, document_id, added_by)
           SELECT %s, id, %s FROM documents WHERE owner_id = %s AND id = ANY(%s)""",
        (coll["id"], A.user_id, A.user_id, docs),
    )
    # sharing rewrote the chunk rows' share_group (0023): measure after the autovacuum that follows it
    for t in (*SHARING_TABLES, "document_chunks"):
        await conn.execute(f"VACUUM ANALYZE {t}")


async def check_state(conn: Any, state: str, probe: str) -> dict[str, Any]:
    """The per-group BM25 tables, summed per owner, match a recount; A's scope is owner-only, B's shared with
    exact statistics."""
    sql = """SELECT g.owner_id, sum(s.n_chunks) AS n, sum(s.total_len) AS len FROM bm25_group_stats s
             JOIN bm25_groups g ON g.id = s.group_id GROUP BY g.owner_id HAVING sum(s.n_chunks) > 0"""
    stats = {str(r["owner_id"]): [r["n"], r["len"]] for r in await fetch(conn, sql)}
    sql = "SELECT owner_id, count(*) AS n, sum(doc_len) AS len FROM document_chunks GROUP BY owner_id"
    recount = {str(r["owner_id"]): [r["n"], r["len"]] for r in await fetch(conn, sql)}
    sql = """SELECT t.lexeme, count(*) AS df FROM document_chunks c CROSS JOIN LATERAL unnest(c.search_vector) t
             WHERE t.lexeme IN (SELECT lexeme FROM unnest(to_tsvector('english', %s))) GROUP BY 1"""
    truth = {r["lexeme"]: r["df"] for r in await fetch(conn, sql, (probe,))}
    a, b = await read_scope(conn, A.user_id), await read_scope(conn, B.user_id)
    terms, n, _avgdl = await query_terms(conn, probe, b)
    exact = n == sum(v[0] for v in recount.values()) and {t.term: t.df for t in terms} == truth
    out = {
        "bm25_group_stats": stats,
        "stats_match_recount": stats == recount,
        "a_shared": a.shared,
        "b_shared": b.shared,
    }
    out["b_stats_exact"] = exact
    if stats != recount or a.shared or not b.shared or not exact:
        raise SystemExit(f"state {state}: unexpected set-up {out}")
    return out


async def time_scope(conn: Any, uid: uuid.UUID, reps: int) -> dict[str, float]:
    for _ in range(20):
        await read_chunk_scope(conn, uid)
    us = []
    for _ in range(reps):
        start = time.perf_counter()
        await read_chunk_scope(conn, uid)
        us.append((time.perf_counter() - start) * 1e6)
    return {"p50_us": round(float(np.median(us)), 1), "p90_us": round(float(np.percentile(us, 90)), 1)}


async def run_state(variants: list[tuple[str, Principal, Any]], queries: list[tuple[str, str]], warmup: list[str]):
    """Every (variant, mode) on the same queries, variants interleaved query by query (rotating order)."""
    samples: list[dict[str, Any]] = []
    for mode in MODES:
        for q in warmup:
            for _label, p, s in variants:
                await s.search(q, principal=p, options=options_of(s.settings, limit=10, mode=mode))
        for i, (qid, q) in enumerate(queries):
            for label, p, s in variants[i % len(variants) :] + variants[: i % len(variants)]:
                start = time.perf_counter()
                res = await s.search(q, principal=p, options=options_of(s.settings, limit=10, mode=mode))
                ms = (time.perf_counter() - start) * 1000
                docs = dedup_keep_first(str(h.metadata.get("source_id", h.document_id)) for h in res.chunks)
                t = res.timings
                samples.append(
                    {"label": label, "mode": mode, "qid": qid, "ms": ms, "vector": t.vector_ms, "keyword": t.keyword_ms}
                    | {"hydrate": t.fuse_ms, "ids": [h.id for h in res.chunks], "docs": docs}
                )
    return samples


async def one_state(conn: Any, rt: Any, ctx: dict[str, Any], state: str, rnd: int, copies: int = 1) -> dict[str, Any]:
    log(f"round {rnd}: building state {state} x{copies} ...")
    start = time.perf_counter()
    await build_state(conn, ctx["space"], ctx["defs"], ctx["docs"], state, copies)
    info: dict[str, Any] = {"round": rnd, "state": state, "build_s": round(time.perf_counter() - start, 1)}
    chunks = (await fetch(conn, "SELECT count(*) AS n FROM document_chunks"))[0]["n"]
    info |= {"copies": copies, "chunks": chunks}
    suffix = "" if copies == 1 else f" @{round(chunks / 1000)}k"
    info["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    reps, queries = ctx["args"].scope_reps, ctx["queries"]
    info["read_scope"] = {"A, no collection": await time_scope(conn, A.user_id, reps)}
    all_docs = [r["id"] for r in await fetch(conn, "SELECT id FROM documents WHERE owner_id = %s", (A.user_id,))]
    await share(conn, rt, all_docs)
    info["check"] = await check_state(conn, state, queries[0][1])
    info["read_scope"]["A, owns the collection"] = await time_scope(conn, A.user_id, reps)
    info["read_scope"]["B, reader"] = await time_scope(conn, B.user_id, reps)
    users = {"owner-only": A, "shared": B, "half-shared": B}
    searchers = (("", rt.searcher), (" +hnsw", ctx["hnsw_searcher"])) if copies == 1 else (("", rt.searcher),)
    variants = [
        (f"{name}{sfx}{suffix}", users[name], searcher) for name in STATES[state] for sfx, searcher in searchers
    ]
    log(f"  {len(queries)} queries x {len(MODES)} modes x {[v[0] for v in variants]}")
    info["samples"] = await run_state(variants, queries, ctx["warmup"])
    info["query_terms_ms"] = {}  # the keyword arm's statistics step alone (DB only), per reader
    for key, user in (("A", A), ("B", B)):
        scope, ms = await read_scope(conn, user.user_id), []
        for _, q in queries:
            start = time.perf_counter()
            await query_terms(conn, q, scope)
            ms.append((time.perf_counter() - start) * 1000)
        info["query_terms_ms"][key] = {"p50": round(float(np.median(ms)), 2), "shared": scope.shared}
    return info


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    settings = bench_settings(args.data_dir, db_pool_min=4)
    ds = load_beir(DATA, "train")
    qids = list(ds.queries)
    random.Random(args.seed).shuffle(qids)
    warmup = [ds.queries[q] for q in qids[: args.warmup]]
    queries = [(q, ds.queries[q]) for q in qids[args.warmup : args.warmup + args.queries]]
    out: dict[str, Any] = {"cpu_context_start": cpu_context(), "queries": len(queries), "warmup": len(warmup)}
    rounds: list[dict[str, Any]] = []
    embedder = await asyncio.to_thread(load_embedder, settings)
    try:
        async with bench_runtime(settings, embedder=embedder) as rt:
            assert rt.database is not None
            conn = await admin(rt.database.uri)
            hnsw_only = settings.model_copy(update={"exact_scan_max_rows": 0})
            ctx: dict[str, Any] = {"args": args, "queries": queries, "warmup": warmup}
            try:
                out["corpus"] = await ensure_corpus(conn, rt, args.corpus_limit)
                ctx["space"] = (await rt.spaces.for_ingest()).space
                ctx["defs"] = await index_defs(conn, ctx["space"])
                await conn.execute(
                    """INSERT INTO users (id, name, username, password_hash, is_admin)
                       VALUES (%s, %s, %s, NULL, false) ON CONFLICT (id) DO NOTHING""",
                    (B.user_id, B.name, B.name),
                )
                rows = await fetch(conn, "SELECT DISTINCT document_id FROM bench_real_chunks ORDER BY document_id")
                ctx["docs"] = [r["document_id"] for r in rows]
                random.Random(args.seed).shuffle(ctx["docs"])
                active = await rt.spaces.active()
                async with open_runtime(hnsw_only, Overrides(pool=rt.pool, embedder=rt.embedder, llm=rt.llm)) as h:
                    ctx["hnsw_searcher"] = h.searcher
                    for s in (rt.searcher, h.searcher):  # cached query embeddings: not part of what is measured
                        for q in [*warmup, *(t for _, t in queries)]:
                            await s.embed_query(active, q)
                    big = [int(c) for c in args.copies.split(",") if c.strip() and int(c) > 1]
                    for r in range(1, args.rounds + 1):  # ends in state all-A when rounds is even
                        for state in ("half", "all-A") if r % 2 == 0 else ("all-A", "half"):
                            rounds.append(await one_state(conn, rt, ctx, state, r))
                        for copies in big:  # the larger corpora: owner-only vs shared (all-A) only
                            rounds.append(await one_state(conn, rt, ctx, "all-A", r, copies))
                    if big:
                        await build_state(conn, ctx["space"], ctx["defs"], ctx["docs"], "all-A")
            finally:
                await restore(conn, ctx)
                await conn.close()
    finally:
        await embedder.close()
    out["cpu_context_end"] = cpu_context()
    return finish(out, rounds, ds.qrels)


async def restore(conn: Any, ctx: dict[str, Any]) -> None:
    """Leave bench/.data as bench/search.py expects it: every real document owned by the bench owner, no
    collection, no user B (a state with B's documents is rebuilt as all-A first)."""
    await conn.execute("DELETE FROM collections WHERE owner_id = ANY(%s)", ([A.user_id, B.user_id],))
    moved = await fetch(conn, "SELECT 1 FROM documents WHERE owner_id = %s LIMIT 1", (B.user_id,))
    if moved:
        await build_state(conn, ctx["space"], ctx["defs"], ctx["docs"], "all-A")
    await conn.execute("DELETE FROM users WHERE id = %s", (B.user_id,))


def finish(out: dict[str, Any], rounds: list[dict[str, Any]], qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Latency per scenario and mode (all rounds), nDCG@10 per round, and how far each scenario's top 10 is from
    owner-only's in the same round."""
    ref = {
        (r["round"], r["copies"], s["mode"], s["qid"]): s["ids"]
        for r in rounds
        for s in r["samples"]
        if s["label"].startswith("owner-only") and "+hnsw" not in s["label"]
    }
    out["scenarios"] = {}
    for r in rounds:
        for s in r.pop("samples"):
            m = out["scenarios"].setdefault(s["label"], {}).setdefault(s["mode"], {"_s": [], "_q": {}})
            m["_s"].append(s)
            q = m["_q"].setdefault(r["round"], {"ndcg": [], "same": [], "overlap": []})
            q["ndcg"].append(ndcg_at_k(s["docs"], qrels[s["qid"]], 10))
            other = ref[(r["round"], r["copies"], s["mode"], s["qid"])]
            q["same"].append(s["ids"] == other)
            q["overlap"].append(len(set(s["ids"]) & set(other)) / 10)
    for by_mode in out["scenarios"].values():
        for mode, m in by_mode.items():
            ss, qs = m.pop("_s"), m.pop("_q")
            ms = [s["ms"] for s in ss]
            by_mode[mode] = {
                "p50_ms": round(float(np.median(ms)), 2),
                "p90_ms": round(float(np.percentile(ms, 90)), 2),
                "p95_ms": round(float(np.percentile(ms, 95)), 2),
                "n": len(ms),
                "stages_p50_ms": {k: round(float(np.median([s[k] for s in ss])), 2) for k in STAGES},
                **{k: [round(float(np.mean(q[k])), 4) for q in qs.values()] for k in ("ndcg", "same", "overlap")},
            }
    out["rounds"] = rounds
    return out


def code_version() -> str:
    """HEAD, and whether server/ or migrations/ differ from it (what this process imported at its start)."""
    git = ["git", "-C", str(Path(__file__).resolve().parent.parent)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "server", "migrations"], capture_output=True, text=True)
    return head + (" + uncommitted changes in server/ or migrations/" if dirty.stdout.strip() else "")


def owner_label(label: str) -> str:
    """The owner-only scenario a scenario is compared with: the same corpus size."""
    return "owner-only" + (label[label.index(" @") :] if " @" in label else "")


def report(out: dict[str, Any]) -> str:
    sc = out["scenarios"]
    rows = []
    for label, by_mode in sc.items():
        for mode, m in by_mode.items():
            o, st = sc[owner_label(label)][mode], m["stages_p50_ms"]
            ratios = [round(m[k] / o[k], 2) for k in ("p50_ms", "p95_ms")]
            quality = [f"{np.mean(m['ndcg']):.4f}", f"{np.mean(m['same']):.3f}"]
            rows.append([label, mode, m["p50_ms"], m["p95_ms"], *ratios, *(st[k] for k in STAGES), *quality])
    head = ["scenario", "mode", "p50", "p95", "p50 ×1", "p95 ×1", "vector", "keyword", "hydrate", "nDCG@10", "=top10"]
    c = out["corpus"]
    title = (
        f"Access control cost — SciFact {c['documents']} documents / {c['chunks']} chunks; {out['queries']} queries "
        f"(+{out['warmup']} warm-up) per mode and scenario, {out['rounds_n']} rounds; Searcher.search(limit=10) ms, "
        "query embeddings cached"
    )
    s0, s1 = out["cpu_context_start"], out["cpu_context_end"]
    return "\n".join(
        [
            table(head, rows, title=title),
            "×1 = ratio to owner-only, same mode; vector/keyword/hydrate = p50 of result.timings (hydrate = fuse +",
            "hydrate); nDCG@10 over documents, mean of rounds; =top10 = share of queries whose top-10 chunk ids equal",
            "owner-only's in the same round; +hnsw = EXACT_SCAN_MAX_ROWS=0 (no exact scan under a filter).",
            "read_chunk_scope() alone (the search scope), on a held connection (p50 / p90 µs), query_terms() alone "
            "(BM25 stats, p50 ms):",
            *(
                f"  {r['state']} x{r['copies']} ({r['chunks']} chunks, round {r['round']}, load {r['loadavg'][0]}): "
                + ", ".join(f"{k} {v['p50_us']} / {v['p90_us']}" for k, v in r["read_scope"].items())
                + "; query_terms "
                + ", ".join(f"{k} {v['p50']} ms" for k, v in r["query_terms_ms"].items())
                for r in out["rounds"]
            ),
            f"code: {out['code_start']} at start, {out['code_end']} at end",
            f"machine: {s0['cpus']} CPUs; load average (1/5/15 min) at start {s0['loadavg']}, at end {s1['loadavg']}",
            f"busy other processes at start: {[b['cmd'][:70] for b in s0.get('busy_processes', [])]}",
            f"at end: {[b['cmd'][:70] for b in s1.get('busy_processes', [])]}; bench wall {out['bench_wall_s']} s",
        ]
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--queries", type=int, default=100, help="200 takes ~19 min on a busy 2-core box")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--rounds", type=int, default=2, help="each round builds both ownership states")
    p.add_argument("--scope-reps", type=int, default=500)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--copies", default="1", help="also measure all-A with N copies of the corpus, e.g. 1,9 (~105k chunks)"
    )
    p.add_argument("--corpus-limit", type=int, default=None, help="N records only (smoke tests; re-ingests)")
    p.add_argument(
        "--data-dir", type=Path, default=Path(__file__).resolve().parent / ".data", help="bench/search.py's cache"
    )
    p.add_argument("--json", type=Path, default=RESULTS / "access.json")
    args = p.parse_args()
    started, code = time.perf_counter(), code_version()
    out = asyncio.run(main_async(args))
    out["code_start"], out["code_end"] = code, code_version()
    out["rounds_n"] = args.rounds
    out["bench_wall_s"] = round(time.perf_counter() - started, 1)
    text = report(out)
    print(text)
    write_json(args.json, out)
    args.json.with_suffix(".txt").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
