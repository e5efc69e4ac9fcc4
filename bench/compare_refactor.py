"""Old tree vs new tree, in one run: bench/search.py and bench/ingest.py of each, back to back, alternating.

The "old" tree is a git worktree of the commit before the runtime / embedding-spaces refactor (`0fa9ef7`),
the "new" tree is this checkout (its working tree, uncommitted edits included: the JSON records
`git status`). Each tree runs its *own* bench scripts against its *own* server code (`PYTHONPATH=<tree>`,
the same venv, the same interpreter), with the same flags and the same data:

* search: one SciFact corpus is ingested once, by the old tree's bench (`--prepare-only --corpus-limit N`),
  into `<work>/base`; each tree then gets its own copy of that data directory (the new tree's runtime
  migrates its copy on first open: vectors move to `chunk_embeddings`), so both measure the very same real
  chunks and the same synthetic ones (same seed). Rounds alternate the order (old, new | new, old | …).
* ingest: `bench/ingest.py --limit L` of each tree (fresh temporary database each), alternating likewise.

The table gives, per size and mode, the median over rounds of each run's p50 / p95 and the ratio new/old, the
per-round ratios (their spread is the noise), per-stage p50s (embed / vector / keyword / hydrate) and the
DB-only arms; for ingest chunks/s of run A (real model), of the raw encode, their ratio (load-normalised),
of runs B / C (replayed vectors: the pipeline and database alone) and CPU per chunk. The load average is
sampled before and after every run.

    .venv/bin/python bench/compare_refactor.py [--sizes 10000,30000] [--rounds 2] [--ingest-limit 1000]
        [--ingest-rounds 1] [--corpus-limit 2000] [--old-tree /tmp/pre-refactor] [--old-ref 0fa9ef7]
        [--work /tmp/ragchat-compare] [--remove-worktree]

Writes bench/results/refactor_compare.json and bench/results/refactor_compare.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import RESULTS, ROOT, cpu_context, table, write_json

MODES = ("vector", "keyword", "hybrid", "keyword_common")
STAGES = ("embed_ms", "vector_ms", "keyword_ms", "fuse_ms")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def ensure_worktree(tree: Path, ref: str) -> bool:
    """The old tree as a detached worktree; True when this run created it. The benches find the data at
    `<tree>/../shared/data`: a `shared` symlink is placed next to the worktree when missing."""
    created = False
    if not (tree / "server").is_dir():
        git("worktree", "add", "--detach", str(tree), ref)
        created = True
    shared = tree.parent / "shared"
    if not shared.exists():
        shared.symlink_to(ROOT.parent / "shared")
    return created


def run_bench(tree: Path, script: str, args: list[str], log_path: Path) -> dict[str, Any]:
    """One bench script of `tree`, with that tree's server code first on the path; wall time and load around it."""
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    before = load()
    start = time.perf_counter()
    with log_path.open("w") as out:
        proc = subprocess.run(
            [sys.executable, f"bench/{script}", *args], cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{tree}/bench/{script} failed ({proc.returncode}); see {log_path}")
    return {"wall_s": round(wall, 1), "load_before": before, "load_after": load(), "log": str(log_path)}


def med(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def ratio(new: float, old: float) -> float:
    return round(new / old, 3) if old else float("nan")


def search_summary(runs: dict[str, list[dict[str, Any]]], sizes: list[int]) -> dict[str, Any]:
    """Per size: per mode p50/p95 medians over rounds, ratio of the medians, per-round ratios; stage p50s;
    DB-only arms."""
    out: dict[str, Any] = {}
    for size in sizes:
        key = str(size)
        per: dict[str, Any] = {}
        for mode in MODES:
            row: dict[str, Any] = {}
            for stat in ("p50_ms", "p95_ms"):
                old = [r[key][mode][stat] for r in runs["old"]]
                new = [r[key][mode][stat] for r in runs["new"]]
                row[stat] = {
                    "old": med(old),
                    "new": med(new),
                    "ratio": ratio(med(new), med(old)),
                    "old_runs": old,
                    "new_runs": new,
                    "ratio_by_round": [ratio(n, o) for o, n in zip(old, new, strict=True)],
                }
            stages: dict[str, Any] = {}
            for stage in STAGES:
                old = [r["details"][key].get(f"{mode}_timings", {}).get(stage, {}).get("p50_ms") for r in runs["old"]]
                new = [r["details"][key].get(f"{mode}_timings", {}).get(stage, {}).get("p50_ms") for r in runs["new"]]
                if all(v is not None for v in old + new):
                    stages[stage] = {"old": med(old), "new": med(new), "ratio": ratio(med(new), med(old))}
            row["stages_p50"] = stages
            per[mode] = row
        db: dict[str, Any] = {}
        for label, path in (
            ("vector_db_n10_p50", ("vector_db", "100", "db_n10", "p50_ms")),
            ("vector_db_n50_p50", ("vector_db", "100", "db_n50", "p50_ms")),
            ("exact_scan_p50", ("vector_db", "exact_scan_db", "p50_ms")),
            ("keyword_db_n50_p50", ("keyword_db", "1000", "queries_db_n50", "p50_ms")),
            ("embed_only_p50", ("embed_only", "p50_ms")),
            ("recall_at_10", ("recall_at_10",)),
        ):

            def dig(r: dict[str, Any], path: tuple[str, ...] = path, key: str = key) -> Any:
                v: Any = r["details"][key]
                for p in path:
                    v = v.get(p) if isinstance(v, dict) else None
                return v

            old = [dig(r) for r in runs["old"]]
            new = [dig(r) for r in runs["new"]]
            if all(isinstance(v, int | float) for v in old + new):
                db[label] = {"old": med(old), "new": med(new), "ratio": ratio(med(new), med(old))}
        per["db_only"] = db
        per["build"] = {
            tree: {k: runs[tree][-1]["build"][key].get(k) for k in ("copy_synthetic_s", "create_hnsw_s", "hnsw")}
            for tree in ("old", "new")
        }
        out[key] = per
    return out


def ingest_summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    def pick(r: dict[str, Any]) -> dict[str, float]:
        a = r["run_a"]
        return {
            "run_a_chunks_per_s": a["chunks_per_s"],
            "raw_encode_chunks_per_s": r["raw_encode"]["chunks_per_s"],
            "ratio_pipeline_to_raw": r["ratio_pipeline_to_raw"],
            "run_b_replay_hnsw_live_chunks_per_s": r["run_b_replay_hnsw_live"]["chunks_per_s"],
            "run_c_replay_no_hnsw_chunks_per_s": r["run_c_replay_hnsw_after"]["chunks_per_s"],
            "cpu_ms_per_chunk_pipeline": r["cpu_ms_per_chunk"]["pipeline_total"],
            "cpu_ms_per_chunk_postgres": r["cpu_ms_per_chunk"]["pipeline_postgres"],
            "run_b_postgres_cpu_ms_per_chunk": round(
                1000 * r["run_b_replay_hnsw_live"]["cpu_s"]["postgres"] / max(r["run_b_replay_hnsw_live"]["chunks"], 1),
                2,
            ),
            "run_b_store_busy_s": r["run_b_replay_hnsw_live"]["busy_s"].get("store (total per doc)", float("nan")),
            "chunks": a["chunks"],
            "documents_failed": a["documents_failed"],
        }

    picked = {tree: [pick(r) for r in runs[tree]] for tree in ("old", "new")}
    out: dict[str, Any] = {}
    for metric in picked["old"][0]:
        old = [p[metric] for p in picked["old"]]
        new = [p[metric] for p in picked["new"]]
        out[metric] = {"old": med(old), "new": med(new), "ratio": ratio(med(new), med(old)), "old_runs": old,
                       "new_runs": new}  # fmt: skip
    return out


def render(result: dict[str, Any]) -> str:
    lines: list[str] = []
    meta = result["meta"]
    lines.append(
        f"Refactor comparison, one run: old = {meta['old_ref']} (worktree), new = {meta['new_head']} "
        f"(working tree{', with uncommitted changes' if meta['new_dirty'] else ''})"
    )
    lines.append(
        f"load average (1/5/15 min) at start {meta['load_start']}, at end {meta['load_end']}; "
        f"{meta['cpus']} CPUs; wall {meta['wall_s']} s"
    )
    if result["search"]:
        lines.append(
            f"search: {meta['search_rounds']} round(s) per tree, order alternating; corpus {meta['corpus_limit']} "
            f"SciFact records (real chunks) + synthetic chunks up to each size; {meta['queries']} queries per mode "
            f"(medians over rounds of each run's p50 / p95; ratio = new / old)"
        )
    for size, per in result["search"].items():
        rows = []
        for mode in MODES:
            r = per[mode]
            rows.append(
                [
                    mode,
                    r["p50_ms"]["old"],
                    r["p50_ms"]["new"],
                    f"{r['p50_ms']['ratio']:.3f}",
                    r["p95_ms"]["old"],
                    r["p95_ms"]["new"],
                    f"{r['p95_ms']['ratio']:.3f}",
                    " ".join(f"{x:.2f}" for x in r["p50_ms"]["ratio_by_round"]),
                ]
            )
        lines.append("")
        lines.append(
            table(
                ["mode", "p50 old", "p50 new", "p50 ×", "p95 old", "p95 new", "p95 ×", "p50 × by round"],
                rows,
                title=f"{int(size):,} chunks — Searcher.search() ms, query embedding included",
            )
        )
        srows = []
        for mode in ("vector", "keyword", "hybrid"):
            for stage, v in per[mode]["stages_p50"].items():
                srows.append([f"{mode} {stage.removesuffix('_ms')}", v["old"], v["new"], f"{v['ratio']:.3f}"])
        for label, v in per["db_only"].items():
            srows.append([label, v["old"], v["new"], f"{v['ratio']:.3f}"])
        lines.append(table(["stage p50 / DB-only (ms)", "old", "new", "×"], srows))
        b = per["build"]
        lines.append(
            f"build (last round): COPY synthetic {b['old']['copy_synthetic_s']} → {b['new']['copy_synthetic_s']} s, "
            f"CREATE HNSW {b['old']['create_hnsw_s']} → {b['new']['create_hnsw_s']} s, "
            f"HNSW size {b['old']['hnsw']} → {b['new']['hnsw']}"
        )
    ing = result.get("ingest")
    if ing:
        lines.append("")
        rows = [
            [
                k,
                v["old"],
                v["new"],
                v["ratio"],
                " / ".join(f"{o}→{n}" for o, n in zip(v["old_runs"], v["new_runs"], strict=True)),
            ]
            for k, v in ing.items()
        ]
        lines.append(
            table(
                ["ingest (bench/ingest.py)", "old", "new", "×", "runs old→new"],
                rows,
                title=f"ingest: first {meta['ingest_limit']} SciFact records, {meta['ingest_rounds']} round(s) per "
                f"tree, order alternating (chunks/s: higher is better; CPU ms/chunk: lower is better)",
            )
        )
    lines.append("")
    lines.append("runs (tree, bench, wall s, load before → after):")
    for r in result["runs"]:
        lines.append(f"  {r['tree']:<4} {r['bench']:<7} round {r['round']}  {r['wall_s']:>6} s  "
                     f"{r['load_before']} → {r['load_after']}")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old-ref", default="0fa9ef7", help="the pre-refactor commit (default 0fa9ef7)")
    p.add_argument("--old-tree", type=Path, default=Path("/tmp/pre-refactor"), help="its worktree (created if absent)")
    p.add_argument("--work", type=Path, default=Path("/tmp/ragchat-compare"), help="data dirs, logs, raw JSON")
    p.add_argument("--sizes", default="10000,30000")
    p.add_argument("--rounds", type=int, default=2, help="search runs per tree (alternating order)")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--recall-queries", type=int, default=50)
    p.add_argument("--corpus-limit", type=int, default=2000, help="SciFact records ingested for the search corpus")
    p.add_argument("--ingest-limit", type=int, default=1000, help="SciFact records for bench/ingest.py (0 = skip)")
    p.add_argument("--ingest-rounds", type=int, default=1)
    p.add_argument("--json", type=Path, default=RESULTS / "refactor_compare.json")
    p.add_argument("--text", type=Path, default=RESULTS / "refactor_compare.txt")
    p.add_argument("--skip-search", action="store_true", help="only the ingest comparison (e.g. a repeat)")
    p.add_argument("--remove-worktree", action="store_true", help="remove the old worktree at the end")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    started = time.perf_counter()
    trees = {"old": args.old_tree.resolve(), "new": ROOT}
    meta_created = ensure_worktree(trees["old"], args.old_ref)
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {
        "old_ref": git("rev-parse", "--short", "HEAD", cwd=trees["old"]),
        "new_head": git("rev-parse", "--short", "HEAD"),
        "new_dirty": bool(git("status", "--short", "--", "server", "migrations")),
        "new_status": git("status", "--short", "--", "server", "migrations").splitlines(),
        "cpus": os.cpu_count(),
        "load_start": load(),
        "cpu_context_start": cpu_context(),
        "sizes": sizes,
        "search_rounds": args.rounds,
        "queries": args.queries,
        "corpus_limit": args.corpus_limit,
        "ingest_limit": args.ingest_limit,
        "ingest_rounds": args.ingest_rounds,
        "worktree_created": meta_created,
    }
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    meta["uptime_start"] = uptime
    log(f"start: {uptime}")
    runs: list[dict[str, Any]] = []
    try:
        base = work / "base"
        if args.skip_search:
            pass
        elif not (base / "pgdata").is_dir():
            log(f"preparing the search corpus ({args.corpus_limit} records) with the old tree's bench ...")
            info = run_bench(
                trees["old"],
                "search.py",
                ["--prepare-only", "--corpus-limit", str(args.corpus_limit), "--data-dir", str(base)],
                work / "prepare.log",
            )
            runs.append({"tree": "old", "bench": "prepare", "round": 0, **info})
        for tree in ("old", "new") if not args.skip_search else ():
            shutil.rmtree(work / tree, ignore_errors=True)
            # cp -a keeps the owner: the embedded server runs as its own system user (pgserver)
            subprocess.run(["cp", "-a", str(base), str(work / tree)], check=True)

        search_args = [
            "--sizes", args.sizes, "--queries", str(args.queries), "--recall-queries", str(args.recall_queries),
            "--corpus-limit", str(args.corpus_limit), "--live-sample", "0", "--explore-ef", "",
            "--explore-candidates", "", "--explore-searcher-candidates", "",
        ]  # fmt: skip
        search: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
        for rnd in range(0 if args.skip_search else args.rounds):
            for tree in ("old", "new") if rnd % 2 == 0 else ("new", "old"):
                out = work / f"search_{tree}_{rnd}.json"
                log(f"search round {rnd}: {tree} ...")
                info = run_bench(
                    trees[tree],
                    "search.py",
                    [*search_args, "--data-dir", str(work / tree), "--json", str(out)],
                    work / f"search_{tree}_{rnd}.log",
                )
                runs.append({"tree": tree, "bench": "search", "round": rnd, **info})
                search[tree].append(json.loads(out.read_text()))
                log(f"  {info['wall_s']} s, load {info['load_before']} → {info['load_after']}")
        ingest: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
        if args.ingest_limit:
            for rnd in range(args.ingest_rounds):
                for tree in ("old", "new") if rnd % 2 == 0 else ("new", "old"):
                    out = work / f"ingest{'_repeat' if args.skip_search else ''}_{tree}_{rnd}.json"
                    log(f"ingest round {rnd}: {tree} ...")
                    info = run_bench(
                        trees[tree],
                        "ingest.py",
                        ["--limit", str(args.ingest_limit), "--quiet", "--json", str(out)],
                        out.with_suffix(".log"),
                    )
                    runs.append({"tree": tree, "bench": "ingest", "round": rnd, **info})
                    ingest[tree].append(json.loads(out.read_text()))
                    log(f"  {info['wall_s']} s, load {info['load_before']} → {info['load_after']}")
    finally:
        if args.remove_worktree:
            git("worktree", "remove", "--force", str(trees["old"]))
            meta["worktree_removed"] = True
    meta["load_end"] = load()
    meta["cpu_context_end"] = cpu_context()
    meta["uptime_end"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    meta["wall_s"] = round(time.perf_counter() - started, 1)
    result: dict[str, Any] = {
        "meta": meta,
        "search": search_summary(search, sizes) if search["old"] else {},
        "runs": runs,
    }
    if ingest["old"]:
        result["ingest"] = ingest_summary(ingest)
    largest = str(max(sizes))
    result["explain_largest_size_last_round"] = (
        {}
        if not search["old"]
        else {tree: search[tree][-1]["details"][largest].get("explain", {}) for tree in ("old", "new") if search[tree]}
    )
    # every run's own summary (the full per-run JSON, details included, stays in --work)
    result["raw"] = {
        "search": {tree: [{k: v for k, v in r.items() if k != "details"} for r in rs] for tree, rs in search.items()},
        "ingest": {
            tree: [{k: v for k, v in r.items() if k != "replace_by_source_delete_plan"} for r in rs]
            for tree, rs in ingest.items()
        },
    }
    text = render(result)
    print(text)
    write_json(args.json, result)
    args.text.parent.mkdir(parents=True, exist_ok=True)
    args.text.write_text(text + "\n", encoding="utf-8")
    log(f"wrote {args.json} and {args.text}; {meta['uptime_end']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
