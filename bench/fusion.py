"""Fusion bench (issue 19): every fusion option, evaluated offline on both dev corpora.

    .venv/bin/python bench/fusion.py [--cache /tmp/fusion-bench] [--depth 100] [--json bench/results/fusion.json]

1. `bench/fusion_collect.py` ingests SciFact (train qrels) and NFCorpus (dev qrels) once into a persistent
   embedded database under `--cache` and records, per query, both arms' top-`depth` lists with raw scores
   (cosine similarity, BM25), as `Searcher` runs them, into JSON next to it. A rerun reuses both.
2. Every option below fuses those lists in pure Python; the fused chunks are cut to `depth` (what
   `ragchat eval` asks for), turned into corpus ids (first chunk of a document counts) and scored with
   `ragchat.evaluation.metrics`. The production options (`relative`, `score`, `rrf`, `weighted_rrf`) are
   called through `ragchat.retrieval.fusion.fuse` itself, with `depth` as the searcher passes it; the others
   are written here. "bounds": a chunk missing from a full list scores that list's last score there.

Prints a table (nDCG@10, recall@10, recall@100 per option per corpus) and writes the JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import DATA, RESULTS, cpu_context, table, write_json
from bench.fusion_collect import collect
from ragchat.evaluation.beir import BeirDataset, load_beir
from ragchat.evaluation.metrics import dedup_keep_first, evaluate
from ragchat.retrieval.fusion import fuse, rrf

CORPORA = {"scifact-dev": "train", "nfcorpus-dev": "dev"}
CHAT_DEPTH = 50  # ragchat.retrieval.search.HYBRID_ARM_DEPTH: each arm's depth for a 10-passage search
Hits = Sequence[tuple[int, float]]
# (vector list, keyword list, cosine of keyword-only candidates) -> chunk ids, best first
Fuser = Callable[[Hits, Hits, dict[int, float]], list[int]]


def production(method: str, **kw: Any) -> Fuser:
    return lambda vec, kwd, _sims: [f.id for f in fuse(vec, kwd, method=method, **kw)]


def _combine(
    vec: Hits,
    kwd: Hits,
    norm_v: Callable[[Hits], dict[int, float]],
    norm_k: Callable[[Hits], dict[int, float]],
    w: float,
    missing_v: float | Callable[[Hits], float] = 0.0,
    missing_k: float | Callable[[Hits], float] = 0.0,
) -> list[int]:
    nv, nk = norm_v(vec), norm_k(kwd)
    mv = missing_v(vec) if callable(missing_v) else missing_v
    mk = missing_k(kwd) if callable(missing_k) else missing_k
    ids = list(dict.fromkeys([i for i, _ in vec] + [i for i, _ in kwd]))
    score = {i: w * nv.get(i, mv) + (1 - w) * nk.get(i, mk) for i in ids}
    return sorted(ids, key=lambda i: -score[i])


def _first(items: Hits) -> dict[int, float]:
    out: dict[int, float] = {}
    for i, s in items:
        out.setdefault(i, s)
    return out


def identity(items: Hits) -> dict[int, float]:
    return _first(items)


def by_max(items: Hits) -> dict[int, float]:
    """s / max: a short list keeps its magnitude (BM25 is non-negative)."""
    top = max((s for _, s in items), default=0.0)
    return {i: (s / top if top > 0 else 0.0) for i, s in _first(items).items()}


def zscore(items: Hits) -> dict[int, float]:
    scores = [s for _, s in items]
    if len(scores) < 2:
        return {i: 1.0 for i, _ in items}
    mu, sd = statistics.fmean(scores), statistics.pstdev(scores) or 1.0
    return {i: (s - mu) / sd for i, s in _first(items).items()}


def dbsf(items: Hits) -> dict[int, float]:
    """Distribution-based score fusion (Qdrant): (s - (μ - 3σ)) / 6σ, clipped to 0..1."""
    scores = [s for _, s in items]
    if len(scores) < 2:
        return {i: 1.0 for i, _ in items}
    mu, sd = statistics.fmean(scores), statistics.pstdev(scores) or 1.0
    return {i: min(1.0, max(0.0, (s - mu + 3 * sd) / (6 * sd))) for i, s in _first(items).items()}


def percentile(depth: int) -> Callable[[Hits], dict[int, float]]:
    """1 - (rank - 1) / depth: rank against the list depth asked for, so a short list is not stretched."""
    return lambda items: {i: 1 - (r - 1) / depth for r, i in enumerate(_first(items), 1)}


def last_score(scale: Callable[[Hits], dict[int, float]], depth: int) -> Callable[[Hits], float]:
    """A missing chunk scores at most the list's last (when the list is full), else 0."""

    def missing(items: Hits) -> float:
        if len(items) < depth or not items:
            return 0.0
        return scale(items)[items[-1][0]]

    return missing


def zmin(items: Hits) -> float:
    return min(zscore(items).values(), default=0.0) - 1.0 if items else 0.0


def true_cosine(w: float) -> Fuser:
    """Cosine of every candidate (keyword-only ones read from the index) + BM25 / max."""

    def run(vec: Hits, kwd: Hits, sims: dict[int, float]) -> list[int]:
        cos = {**sims, **_first(vec)}
        nk = by_max(kwd)
        ids = list(dict.fromkeys([i for i, _ in vec] + [i for i, _ in kwd]))
        return sorted(ids, key=lambda i: -(w * cos.get(i, 0.0) + (1 - w) * nk.get(i, 0.0)))

    return run


def options(depth: int) -> dict[str, Fuser]:
    opts: dict[str, Fuser] = {}
    for k in (10, 30, 60):
        opts[f"rrf k={k}"] = production("rrf", k=k)
    opts["rrf k=60, ties by chunk id (old)"] = lambda v, k, _s: [
        f.id for f in sorted(rrf(v, k), key=lambda f: (-f.score, f.id))
    ]
    for w in (0.4, 0.6):
        opts[f"weighted_rrf k=60 w={w}"] = production("weighted_rrf", k=60, vector_weight=w)
    for w in (0.3, 0.5, 0.7):
        opts[f"score (min-max) w={w}"] = production("score", vector_weight=w)
    for w in (0.5, 0.6, 0.65, 0.7, 0.75, 0.8):
        opts[f"relative w={w}"] = production("relative", vector_weight=w, depth=depth)
    opts["relative, the default (FUSION=relative)"] = production("relative", depth=depth)
    for w in (0.5, 0.7):
        opts[f"relative, missing = 0, w={w}"] = lambda v, k, _s, w=w: _combine(v, k, identity, by_max, w)
        opts[f"true cosine + bm25/max w={w}"] = true_cosine(w)
    for w in (0.5, 0.6, 0.7):
        opts[f"cosine/max + bm25/max, bounds w={w}"] = lambda v, k, _s, w=w: _combine(
            v, k, by_max, by_max, w, last_score(by_max, depth), last_score(by_max, depth)
        )
    for w in (0.3, 0.5, 0.7):
        opts[f"z-score w={w}"] = lambda v, k, _s, w=w: _combine(v, k, zscore, zscore, w, zmin, zmin)
        opts[f"dbsf w={w}"] = lambda v, k, _s, w=w: _combine(v, k, dbsf, dbsf, w)
    opts["rank percentile w=0.5"] = lambda v, k, _s: _combine(v, k, percentile(depth), percentile(depth), 0.5)
    return opts


def evaluate_option(fuser: Fuser, data: dict[str, Any], dataset: BeirDataset, depth: int) -> dict[str, float]:
    source: dict[str, str] = data["source"]
    run: dict[str, list[str]] = {}
    for qid, lists in data["queries"].items():
        vec = [(int(i), float(s)) for i, s in lists["vector"]]
        kwd = [(int(i), float(s)) for i, s in lists["keyword"]]
        sims = {int(i): float(s) for i, s in lists["sim"].items()}
        ranked = fuser(vec, kwd, sims)[:depth]
        run[qid] = dedup_keep_first(source[str(i)] for i in ranked)
    m = evaluate(run, dataset.qrels, (10, 100))
    return {"ndcg@10": m["ndcg@10"], "recall@10": m["recall@10"], "recall@100": m["recall@100"]}


def truncated(fuser: Fuser, n: int) -> Fuser:
    return lambda vec, kwd, sims: fuser(vec[:n], kwd[:n], sims)


def arms(data: dict[str, Any], dataset: BeirDataset, depth: int) -> dict[str, dict[str, float]]:
    only_vector: Fuser = lambda v, _k, _s: [i for i, _ in v]  # noqa: E731
    only_keyword: Fuser = lambda _v, k, _s: [i for i, _ in k]  # noqa: E731
    return {
        "vector only": evaluate_option(only_vector, data, dataset, depth),
        "keyword only": evaluate_option(only_keyword, data, dataset, depth),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    datasets = {name: load_beir(DATA.parent / name, split) for name, split in CORPORA.items()}
    context_start = cpu_context()
    lists = asyncio.run(collect(args.cache, list(datasets.values()), args.depth))
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name, dataset in datasets.items():
        results[name] = arms(lists[name], dataset, args.depth)
        for label, fuser in options(args.depth).items():
            results[name][label] = evaluate_option(fuser, lists[name], dataset, args.depth)
    # The chat asks for 10 passages: each arm then returns HYBRID_ARM_DEPTH (50), not 100.
    at_chat_depth: dict[str, dict[str, dict[str, float]]] = {}
    for name, dataset in datasets.items():
        chat = {"rrf k=60": production("rrf"), "score (min-max) w=0.5": production("score")}
        chat["relative, the default"] = production("relative", depth=CHAT_DEPTH)
        at_chat_depth[name] = {
            label: evaluate_option(truncated(f, CHAT_DEPTH), lists[name], dataset, CHAT_DEPTH)
            for label, f in chat.items()
        }
    rrf_ref = {name: results[name]["rrf k=60"]["ndcg@10"] for name in datasets}
    rows = []
    for label in results["scifact-dev"]:
        row: dict[str, Any] = {"option": label}
        for name in datasets:
            row[name] = {k: round(v, 4) for k, v in results[name][label].items()}
        row["no_worse_than_rrf_on_both"] = all(
            results[name][label]["ndcg@10"] >= rrf_ref[name] - 1e-9 for name in datasets
        )
        rows.append(row)
    return {
        "bench": "fusion",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "depth": args.depth,
        "queries": {name: len(d.queries) for name, d in datasets.items()},
        "splits": CORPORA,
        "rows": rows,
        "at_chat_depth": {"depth": CHAT_DEPTH, **at_chat_depth},
        "cpu_context_start": context_start,
    }


def print_table(report: dict[str, Any]) -> None:
    names = list(CORPORA)
    headers = ["option"]
    for name in names:
        short = name.split("-")[0]
        headers += [f"{short} nDCG@10", f"{short} R@10", f"{short} R@100"]
    headers.append(">= rrf k=60 on both")
    body = []
    for row in report["rows"]:
        cells: list[Any] = [row["option"]]
        for name in names:
            m = row[name]
            cells += [f"{m['ndcg@10']:.4f}", f"{m['recall@10']:.4f}", f"{m['recall@100']:.4f}"]
        cells.append("yes" if row["no_worse_than_rrf_on_both"] else "")
        body.append(cells)
    q = report["queries"]
    print(table(headers, body, f"fusion, depth {report['depth']} per arm, queries {q}"))
    chat = report["at_chat_depth"]
    print(f"\nat the chat's depth ({chat['depth']} per arm), nDCG@10:")
    for label in chat[names[0]]:
        print(f"  {label:<28} " + "  ".join(f"{n} {chat[n][label]['ndcg@10']:.4f}" for n in names))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/fusion-bench"))
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--json", type=Path, default=RESULTS / "fusion.json")
    args = parser.parse_args()
    report = run(args)
    print_table(report)
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
