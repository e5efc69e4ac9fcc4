"""Graded vs JSON vs no LLM rerank with the real model, on saved first-stage rankings (issue 42, item 1).

bench/real_llm_arms.py measures every arm through `Searcher.search` over both dev sets ingested whole; ingesting
them (8,816 documents) needs about 20 minutes of both cores, which a shared machine at load 10-18 does not give.
This bench measures the rerank itself on what session 12's run saved: for the same seeded queries (`--seed 34`),
the hybrid arm's ranked corpus ids (docs/benchmarks/results/real_llm_arms_s12.jsonl.gz, kept in the tree; top 10
chunks deduplicated to documents: 3-10 per query) are the candidates, each passage the document's title and text
from corpus.jsonl, in that order.
Each arm reranks them with the product's `LLMReranker` (RERANK_METHOD json / logprobs / listwise; the product's
prompts, trimming, prompt cache and early stop) against the real model (`RealLLM`, llama.cpp, 2 threads, one
slot, RERANK_CONCURRENCY=1), and nDCG@10 / recall@10 are computed on the new order. So this is "rerank the top
10" (RERANK_CANDIDATES_FACTOR=1), which can only reorder: recall@10 stays.

Rows go to `--results`/real_llm_arms.jsonl in real_llm_arms.py's format (its `--report --results DIR` makes the
table); a rerun skips what is there. Those rows are not in the tree: copy them to docs/benchmarks/results/ (gzip)
when a run ends, or a fresh clone starts over (session 16's 30 queries per set were lost that way).

    PYTHONPATH=server .venv/bin/python bench/real_rerank_graded.py [--queries 10] [--arms hybrid,graded,rerank,listwise]
        [--results bench/results/graded] [--saved docs/benchmarks/results/real_llm_arms_s12.jsonl.gz]

`--blend 0,0.1,...` makes no call: for each RERANK_RETRIEVAL_WEIGHT it orders every recorded query of `--arm`
(default graded) by the product's `blend` of the recorded scores with the hybrid position, as the reranker
would (the scores are the model's, deterministic at temperature 0, so this is the order a live run at that
weight gives), and prints nDCG@10 Δ vs hybrid ± s.e. and W/T/L per set, JSON to `--results`/blend.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import real_llm_arms as arms
from bench.common import RESULTS, ROOT, bench_settings
from ragchat.core.search import ChunkHit, Trace
from ragchat.evaluation.beir import iter_corpus, load_beir
from ragchat.evaluation.metrics import ndcg_at_k, recall_at_k
from ragchat.providers.llm import build_llm
from ragchat.retrieval.rerank import LLMReranker, blend
from tests.real.model import MODEL_ALIAS, RealLLM, ensure_model, ensure_runtime, free_port

METHOD = {"rerank": "json", "graded": "logprobs", "listwise": "listwise"}
K = 10
#: Session 12's rows of bench/real_llm_arms.py (60 seeded queries per set; the hybrid arm's rankings are the
#: candidates, its `rerank` arm the JSON method on the top 20), kept in the tree so that a fresh clone can run this
SAVED = ROOT / "docs" / "benchmarks" / "results" / "real_llm_arms_s12.jsonl.gz"


def hits_for(ids: list[str], texts: dict[str, str]) -> list[ChunkHit]:
    n = len(ids)
    return [
        ChunkHit(
            id=i,
            document_id=uuid.uuid5(uuid.NAMESPACE_OID, doc),
            filename=doc,
            title=doc,
            chunk_index=0,
            content=texts[doc],
            score=round(1 - i / (n + 1), 4),
            score_kind="fused",
            trace=Trace(),
            metadata={"source_id": doc},
        )
        for i, doc in enumerate(ids)
    ]


async def run(args: argparse.Namespace) -> None:
    data = ROOT.parent / "shared" / "data"
    saved = [r for r in arms.read_lines(args.saved) if r["arm"] == "hybrid" and r["index"] < args.queries]
    done = {(r["set"], r["qid"], r["arm"]) for r in arms.read_lines(arms.ARMS_LOG)}
    sets = {n: load_beir(data / folder, split) for n, (folder, split) in arms.SETS.items()}
    texts = {n: {i: f"{t}\n\n{x}".strip() for i, t, x in iter_corpus(ds.corpus_path)} for n, ds in sets.items()}
    ensure_runtime()
    real = RealLLM(ensure_model(), n_ctx=4096, threads=2, log_path=RESULTS / "graded_llm.log", port=free_port())
    settings = bench_settings(
        ROOT / "bench" / ".data" / "unused",
        llm_provider="openai",
        openai_base_url=real.base_url,
        chat_model=MODEL_ALIAS,
        llm_timeout_s=300.0,
        rerank_timeout_s=args.call_timeout,
        rerank_deadline_s=args.call_timeout * 25,
        rerank_concurrency=1,
        rerank_listwise_size=args.listwise_size,
        rerank_early_stop=not args.no_early_stop,
        rerank_retrieval_weight=0.0,  # the scorer's own order is recorded; --blend reorders it offline
        **({} if args.passage_chars is None else {"rerank_passage_chars": args.passage_chars}),
    )
    llm = build_llm(settings.llm)
    replay = arms.ReplayLLM(llm)
    rerankers = {
        m: LLMReranker(
            replay,
            settings.retrieval.model_copy(update={"rerank_method": m}),
            settings.llm.effective_rerank_model,
            cache_size=0,
        )
        for m in ("json", "logprobs", "listwise")
    }
    await arms.wait_model_free()
    real.start()
    print(f"model {real.model} up in {real.startup_seconds:.1f} s", flush=True)
    try:
        saved.sort(key=lambda r: (r["index"], r["set"]))  # interleaved: scifact q1, nfcorpus q1, ...
        for row in saved:
            name, qid = row["set"], row["qid"]
            todo = [a for a in args.arms if (name, qid, a) not in done]
            if not todo:
                continue
            await arms.wait_quiet()
            ds = sets[name]
            rels, query = ds.qrels[qid], ds.queries[qid]
            candidates = hits_for(row["ranked"], texts[name])
            for arm in todo:
                out = await one(arm, query, candidates, rels, replay, rerankers)
                arms.append_line(arms.ARMS_LOG, {"set": name, "qid": qid, "index": row["index"], "arm": arm, **out})
                print(
                    f"[{name} {row['index'] + 1} {qid}] {arm:9} nDCG@10 {out['ndcg10']:.3f} {out['seconds']:.1f} s "
                    f"calls {out['calls']} rerank {out['rerank']} scores {out['rerank_scores'][:5]}",
                    flush=True,
                )
    finally:
        real.stop()
        await llm.close()


async def one(
    arm: str, query: str, candidates: list[ChunkHit], rels: dict[str, int], llm: Any, rerankers: dict
) -> dict[str, Any]:
    mark = len(llm.calls)
    start = time.perf_counter()
    status: dict[str, Any] = {"status": "off"}
    hits = candidates
    if arm in METHOD:
        result = await rerankers[METHOD[arm]].rerank_with_status(query, candidates, len(candidates))
        hits = result.hits
        status = {"status": "ok" if result.scored + result.skipped >= result.candidates else "partial"}
        status |= {"scored": result.scored, "skipped": result.skipped, "method": result.method, "note": result.note}
    wall = time.perf_counter() - start
    calls = llm.calls[mark:]
    replayed = sum(c["seconds"] for c in calls if c["replayed"])
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    for c in calls:
        outcomes[c["kind"]][c["outcome"]] += 1
    ranked = [h.filename for h in hits]
    return {
        "ndcg10": round(ndcg_at_k(ranked, rels, K), 6),
        "recall10": round(recall_at_k(ranked, rels, K), 6),
        "seconds": round(wall + replayed, 3),
        "wall_s": round(wall, 3),
        "replayed_s": round(replayed, 3),
        "calls": len(calls),
        "replayed_calls": sum(1 for c in calls if c["replayed"]),
        "outcomes": {k: dict(v) for k, v in outcomes.items()},
        "rerank": status,
        "expansion": {"status": "off"},
        "ranked": ranked,
        "rerank_scores": [h.trace.rerank_score for h in hits if h.trace.rerank_score is not None],
    }


def blend_table(weights: list[float], arm: str, results: Path) -> str:
    """nDCG@10 of `arm`'s recorded scores blended with the hybrid order at each weight (see the docstring)."""
    data = ROOT.parent / "shared" / "data"
    qrels = {n: load_beir(data / folder, split).qrels for n, (folder, split) in arms.SETS.items()}
    by: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in arms.read_lines(arms.ARMS_LOG):
        by[(r["set"], r["qid"])][r["arm"]] = r
    lines = [
        f"| RERANK_RETRIEVAL_WEIGHT | {' | '.join(f'{n}: Δ nDCG@10 ± s.e. (W/T/L)' for n in arms.SETS)} |",
        "|---|" + "---|" * len(arms.SETS),
    ]
    out: dict[str, Any] = {"arm": arm, "weights": {}}
    for w in weights:
        cells = []
        for name in arms.SETS:
            deltas = []
            for (s, qid), got in by.items():
                if s != name or "hybrid" not in got or arm not in got:
                    continue
                order, rec = got["hybrid"]["ranked"], got[arm]
                score = dict(zip(rec["ranked"], rec["rerank_scores"], strict=False))
                if any(d not in score for d in order):
                    continue  # a partial rerank: not comparable
                keyed = sorted(enumerate(order), key=lambda p: -blend(score[p[1]], p[0], len(order), w))
                new = [d for _, d in keyed]
                rels = qrels[name][qid]
                deltas.append(ndcg_at_k(new, rels, K) - ndcg_at_k(order, rels, K))
            n = len(deltas)
            mean = sum(deltas) / n if n else 0.0
            se = (sum((d - mean) ** 2 for d in deltas) / (n - 1)) ** 0.5 / n**0.5 if n > 1 else 0.0
            wtl = (sum(d > 1e-9 for d in deltas), sum(abs(d) <= 1e-9 for d in deltas), sum(d < -1e-9 for d in deltas))
            out["weights"][str(w)] = out["weights"].get(str(w), {}) | {
                name: {"n": n, "delta": round(mean, 4), "se": round(se, 4), "wtl": wtl}
            }
            cells.append(f"{mean:+.3f} ± {se:.3f} ({wtl[0]}/{wtl[1]}/{wtl[2]}, n {n})")
        lines.append(f"| {w:g} | {' | '.join(cells)} |")
    (results / "blend.json").write_text(json.dumps(out, indent=2) + "\n")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--queries", type=int, default=10, help="queries per set (the saved run's first N)")
    p.add_argument("--arms", type=lambda s: s.split(","), default=["hybrid", "graded", "rerank", "listwise"])
    p.add_argument("--results", type=Path, default=RESULTS / "graded")
    p.add_argument("--saved", type=Path, default=SAVED, help="session 12's rows (its hybrid arm's rankings)")
    p.add_argument("--call-timeout", type=float, default=120.0)
    p.add_argument("--listwise-size", type=int, default=10)
    p.add_argument("--no-early-stop", action="store_true")
    p.add_argument("--passage-chars", type=int, default=None, help="RERANK_PASSAGE_CHARS (default: the setting's)")
    p.add_argument("--blend", type=lambda s: [float(x) for x in s.split(",")], default=None)
    p.add_argument("--arm", default="graded", help="the arm whose recorded scores --blend reorders")
    args = p.parse_args(argv)
    arms.ARMS_LOG = args.results / arms.ARMS_LOG.name
    if args.blend is not None:
        print(blend_table(args.blend, args.arm, args.results))
        return 0
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
