"""Ingestion throughput: the real pipeline versus the raw embedding model on the same chunk texts.

Run A  ingests the first N SciFact records into a fresh embedded Postgres (its own temporary data dir)
       through the runtime's document service (`register_bulk` + `ingest`, i.e. `IngestionPipeline.run`),
       with the real model; busy time is recorded per stage (claim, parse+chunk, embed, embedding-cache
       lookup, store) and the CPU time of the Postgres backends is sampled. Then the exact chunk texts the
       pipeline embedded are read back from `document_chunks` (vectors from `chunk_embeddings`) and encoded
       again with `embedder.embed_sync` in batches of EMBED_BATCH_SIZE:
       ratio = end-to-end chunks/s ÷ raw encode chunks/s (target ≥ 0.85).
Run B  the same documents again (tables truncated) with a replay embedder that returns run A's vectors, so
       the model costs nothing: the pipeline's own ceiling, with the space's HNSW index maintained during
       inserts.
Run C  like B but with the space's HNSW index dropped before ingestion and re-created after (timed).

Every run takes its document service from the composition root (`open_runtime`); runs B and C open a
runtime over the same pool with the replay embedder as the embedding provider.

    python bench/ingest.py [--limit N] [--json bench/results/ingest.json]
    python bench/ingest.py --backends     # torch fp32 vs ONNX int8 side by side: bench/ingest_backends.py
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from psycopg import sql

from bench.common import (
    DATA,
    RESULTS,
    Stopwatch,
    bench_runtime,
    bench_settings,
    cpu_context,
    load_embedder,
    postmaster_pid,
    table,
    write_json,
)
from bench.ingest_run import ReplayEmbedder, TimedEmbedder, one_run, reset_tables, self_cpu
from bench.search_build import hnsw_name
from ragchat.core.principal import LOCAL_OWNER_ID
from ragchat.documents.chunking.sentences import content_hash, embedding_text
from ragchat.runtime import Runtime
from ragchat.vectors.store import Space, as_array


async def hnsw_index(rt: Runtime) -> tuple[Space, str, str]:
    """The active space, the name of its partial HNSW index and that index's definition."""
    space = (await rt.spaces.for_ingest()).space
    name = hnsw_name(space)
    async with rt.pool.connection() as conn:
        row = await (await conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", (name,))).fetchone()
    if row is None:
        raise SystemExit(f"{name} not found: did the embedding spaces change?")
    return space, name, row["indexdef"]


async def read_back(rt: Runtime, space: Space) -> tuple[list[str], dict[str, np.ndarray], int]:
    """The texts the pipeline embedded (title prefix + content, as `embedding_text` builds them) and vectors."""
    async with rt.pool.connection() as conn:
        rows = await (
            await conn.execute(
                """SELECT c.title, c.content, c.content_hash, e.embedding
                   FROM document_chunks c JOIN chunk_embeddings e ON e.chunk_id = c.id AND e.space_id = %s
                   ORDER BY c.id""",
                (space.id,),
            )
        ).fetchall()
    texts, vectors, mismatched = [], {}, 0
    for r in rows:
        text = embedding_text(r["title"], r["content"])
        if content_hash(text) != r["content_hash"]:
            mismatched += 1
        texts.append(text)
        vectors[text] = as_array(r["embedding"])
    return texts, vectors, mismatched


def raw_encode(embedder: Any, texts: list[str], batch: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed_sync(texts[i : i + batch])
    return time.perf_counter() - start


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    lines = (DATA / "corpus.jsonl").read_bytes().splitlines(keepends=True)
    lines = [ln for ln in lines if ln.strip()]
    if args.limit:
        lines = lines[: args.limit]
    data = b"".join(lines)
    tmp = Path(tempfile.mkdtemp(prefix="ragchat-bench-ingest-"))
    settings = bench_settings(tmp)
    print(f"bench data dir: {tmp}  ({len(lines)} records)", file=sys.stderr)
    context = cpu_context()
    real = await asyncio.to_thread(load_embedder, settings)  # build_embedder(settings), warmed up
    out: dict[str, Any] = {
        "records": len(lines),
        "embed_batch_size": settings.embeddings.embed_batch_size,
        "chunk_tokens": settings.ingestion.chunk_tokens,
        "chunk_overlap": settings.ingestion.chunk_overlap,
        "cpu_context_start": context,
    }
    try:
        async with bench_runtime(settings, embedder=real) as rt:
            pg_pid = postmaster_pid(rt)

            # --- run A: the real pipeline with the real model
            watch = Stopwatch()
            emb = TimedEmbedder(real, watch)
            run_a = await one_run("A real", rt, emb, data, pg_pid, watch, quiet=args.quiet)
            space, hnsw_name, hnsw_sql = await hnsw_index(rt)
            texts, vectors, mismatched = await read_back(rt, space)
            run_a["hash_mismatches_on_readback"] = mismatched
            run_a["distinct_texts_embedded"] = len(set(emb.texts))

            # --- raw model encode on the same texts, batches of EMBED_BATCH_SIZE, same process, warm model
            print(f"  raw encode of {len(texts)} texts ...", file=sys.stderr, flush=True)
            cpu0 = self_cpu()
            raw_s = raw_encode(real, texts, settings.embeddings.embed_batch_size)
            raw = {
                "texts": len(texts),
                "seconds": round(raw_s, 2),
                "chunks_per_s": round(len(texts) / raw_s, 2),
                "cpu_s": round(self_cpu() - cpu0, 1),
            }
            model_busy = run_a["busy_s"].get("embed (model)", 0.0)
            run_a["model_busy_share_of_wall"] = round(model_busy / run_a["pipeline_wall_s"], 3)
            run_a["model_chunks_per_s_inside_pipeline"] = round(run_a["chunks_embedded"] / max(model_busy, 1e-9), 2)
            ratio = run_a["chunks_per_s"] / raw["chunks_per_s"]
            # CPU view (less sensitive to other processes on the machine): CPU-seconds per chunk, all processes
            # of ours (bench process incl. model threads + postgres backends) vs the raw encode's own.
            pipeline_cpu = run_a["cpu_s"]["bench_process"] + run_a["cpu_s"]["postgres"]
            out.update(
                run_a=run_a,
                raw_encode=raw,
                ratio_pipeline_to_raw=round(ratio, 3),
                cpu_ms_per_chunk={
                    "pipeline_total": round(1000 * pipeline_cpu / max(run_a["chunks"], 1), 1),
                    "pipeline_postgres": round(1000 * run_a["cpu_s"]["postgres"] / max(run_a["chunks"], 1), 1),
                    "raw_encode": round(1000 * raw["cpu_s"] / max(raw["texts"], 1), 1),
                },
                embedding_space={"id": space.id, "label": space.label, "hnsw_index": hnsw_name},
            )

            # --- run B: replayed vectors, HNSW maintained during inserts
            await reset_tables(rt)
            watch_b = Stopwatch()
            replay_b = ReplayEmbedder(real, watch_b, vectors)
            run_b = await one_run("B replay+hnsw", rt, replay_b, data, pg_pid, watch_b, quiet=args.quiet)
            # --- run C: replayed vectors, HNSW dropped during ingestion and built after
            await reset_tables(rt)
            async with rt.pool.connection() as conn:
                await conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(hnsw_name)))
            watch_c = Stopwatch()
            replay_c = ReplayEmbedder(real, watch_c, vectors)
            run_c = await one_run("C replay, index after", rt, replay_c, data, pg_pid, watch_c, quiet=args.quiet)
            async with rt.pool.connection() as conn:
                await conn.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
                start = time.perf_counter()
                await conn.execute(hnsw_sql)
                run_c["create_index_s"] = round(time.perf_counter() - start, 2)
                run_c["maintenance_work_mem"] = args.maintenance_work_mem
                await conn.execute("RESET maintenance_work_mem")
            run_c["total_with_index_s"] = round(run_c["pipeline_wall_s"] + run_c["create_index_s"], 2)
            out.update(run_b_replay_hnsw_live=run_b, run_c_replay_hnsw_after=run_c)

            # --- the per-document replace-by-source DELETE: how it scales with the documents table
            async with rt.pool.connection() as conn:
                plan = await (
                    await conn.execute(
                        """EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT)
                           DELETE FROM documents WHERE owner_id = %s AND metadata->>'source_path' = %s
                           AND id <> '00000000-0000-0000-0000-000000000000'""",
                        (LOCAL_OWNER_ID, "no-such-source"),
                    )
                ).fetchall()
            out["replace_by_source_delete_plan"] = [r["QUERY PLAN"] for r in plan]
    finally:
        await real.close()
    out["cpu_context_end"] = cpu_context()
    if args.keep:
        out["data_dir"] = str(tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def report(out: dict[str, Any]) -> None:
    a, raw = out["run_a"], out["raw_encode"]
    b, c = out["run_b_replay_hnsw_live"], out["run_c_replay_hnsw_after"]
    print()
    print(
        table(
            ["measure", "value"],
            [
                [
                    "records → documents ingested",
                    f"{out['records']} → {a['documents']} ({a['documents_failed']} failed)",
                ],
                ["chunks", a["chunks"]],
                ["register_bytes (s)", a["register_s"]],
                ["pipeline wall (s)", a["pipeline_wall_s"]],
                ["documents/s", a["documents_per_s"]],
                ["chunks/s end-to-end", a["chunks_per_s"]],
                [f"raw encode chunks/s (batches of {out['embed_batch_size']})", raw["chunks_per_s"]],
                ["ratio end-to-end / raw (target ≥ 0.85)", out["ratio_pipeline_to_raw"]],
                ["model busy share of pipeline wall", a["model_busy_share_of_wall"]],
                ["model chunks/s while busy inside pipeline", a["model_chunks_per_s_inside_pipeline"]],
                ["CPU s: postgres / bench process", f"{a['cpu_s']['postgres']} / {a['cpu_s']['bench_process']}"],
                [
                    "CPU ms/chunk: pipeline (all) / of it postgres / raw encode",
                    "{pipeline_total} / {pipeline_postgres} / {raw_encode}".format(**out["cpu_ms_per_chunk"]),
                ],
                [
                    "load average at start / end",
                    f"{out['cpu_context_start']['loadavg']} / {out['cpu_context_end']['loadavg']}",
                ],
            ],
            title=f"Run A — real pipeline, {out['records']} SciFact records",
        )
    )
    print()
    stages = sorted(set(a["busy_s"]) | set(b["busy_s"]) | set(c["busy_s"]))
    print(
        table(
            ["stage (busy s; stages overlap)", "A real", "B replay+hnsw", "C replay, no hnsw"],
            [[s, a["busy_s"].get(s, 0.0), b["busy_s"].get(s, 0.0), c["busy_s"].get(s, 0.0)] for s in stages]
            + [
                ["pipeline wall", a["pipeline_wall_s"], b["pipeline_wall_s"], c["pipeline_wall_s"]],
                ["postgres CPU s", a["cpu_s"]["postgres"], b["cpu_s"]["postgres"], c["cpu_s"]["postgres"]],
                [
                    "bench process CPU s",
                    a["cpu_s"]["bench_process"],
                    b["cpu_s"]["bench_process"],
                    c["cpu_s"]["bench_process"],
                ],
            ],
            title="Time split per stage",
        )
    )
    print()
    print(
        table(
            ["HNSW strategy (model replayed)", "ingest s", "CREATE INDEX s", "total s", "chunks/s"],
            [
                ["maintained during inserts (B)", b["pipeline_wall_s"], 0.0, b["pipeline_wall_s"], b["chunks_per_s"]],
                [
                    f"built after bulk load (C, mwm={c['maintenance_work_mem']})",
                    c["pipeline_wall_s"],
                    c["create_index_s"],
                    c["total_with_index_s"],
                    round(c["chunks"] / c["total_with_index_s"], 2),
                ],
            ],
            title="HNSW index: live vs built after",
        )
    )
    print()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit", type=int, default=None, help="ingest only the first N corpus records (default: all)")
    p.add_argument("--json", type=Path, default=RESULTS / "ingest.json", help="where to write the results")
    p.add_argument("--maintenance-work-mem", default="1GB", help="for the CREATE INDEX of run C (default 1GB)")
    p.add_argument("--keep", action="store_true", help="keep the temporary data dir (server stopped)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    g = p.add_argument_group("--backends: torch fp32 and ONNX int8 side by side (bench/ingest_backends.py)")
    g.add_argument("--backends", action="store_true", help="compare the embedding backends instead")
    g.add_argument("--rounds", type=int, default=5, help="interleaved raw-throughput rounds (default 5)")
    g.add_argument("--chunks", type=int, default=128, help="256-token chunks per round (default 128)")
    g.add_argument("--queries", type=int, default=60, help="single queries timed per backend (default 60)")
    g.add_argument("--e2e-limit", type=int, default=300, help="records through the pipeline per backend (0: skip)")
    g.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ragchat-bench-backends")
    g.add_argument(
        "--ndcg-db",
        type=Path,
        default=None,
        help="nDCG on the chunks (and float32 vectors) an eval run "
        "stored in this data dir (e.g. /tmp/fusion-bench/data), instead of chunking the corpora here",
    )
    g.add_argument("--only-ndcg", action="store_true", help="skip the throughput, latency and pipeline steps")
    g.add_argument("--skip-ndcg", action="store_true", help="skip the nDCG step (a quick smoke run)")
    g.add_argument("--ndcg-sets", nargs="*", default=None, help="only these dev sets (default: both)")
    g.add_argument("--ndcg-queries", type=int, default=0, help="nDCG on this many queries per set (0: all)")
    g.add_argument(
        "--ndcg-candidates",
        type=int,
        default=0,
        help="with --ndcg-db: embed again only the chunks in float32's top N for some query (0: the whole corpus)",
    )
    args = p.parse_args(argv)
    if args.backends:
        from bench.ingest_backends import run as run_backends

        if args.json == RESULTS / "ingest.json":
            args.json = RESULTS / "ingest_backends.json"
        asyncio.run(run_backends(args))
        print(f"wrote {args.json} and {args.json.with_suffix('.md')}")
        return 0
    started = time.perf_counter()
    out = asyncio.run(main_async(args))
    out["bench_wall_s"] = round(time.perf_counter() - started, 1)
    report(out)
    write_json(args.json, out)
    print(f"wrote {args.json}  (bench wall {out['bench_wall_s']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
