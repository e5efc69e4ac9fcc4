"""`ragchat eval`: a BEIR dataset (`--dataset`), or questions generated from your own documents (`--generate N`);
`--compare RUN_ID RUN_ID ...` (stored runs side by side) or `--compare modes` (the configurations of this run)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragchat.cli.common import acting_as, add_user_option, open_runtime, run_async, where
from ragchat.settings import Settings

MODES = "vector,keyword,hybrid"


async def evaluate(settings: Settings, args: argparse.Namespace) -> int:
    from ragchat.evaluation import store
    from ragchat.evaluation.report import compare_table, config_columns, flat_metrics

    compare: list[str] = args.compare or []
    if compare and compare != ["modes"]:
        if len(compare) < 2 or not all(c.isdigit() for c in compare):
            print("ragchat: --compare takes two or more run ids (or `modes`)", file=sys.stderr)
            return 2
        async with open_runtime(settings) as rt:
            runs = [await store.get_run(rt.pool, None, int(c)) for c in compare]
        print(" · ".join(f"run {r['id']}: {r['dataset']} {r['created_at']:%Y-%m-%d %H:%M}" for r in runs))
        print(compare_table([(f"run {r['id']}", flat_metrics(r["results"])) for r in runs]))
        return 0
    if bool(args.dataset) == bool(args.generate):
        print("ragchat: give --dataset DIR (a BEIR folder) or --generate N (questions from your documents)")
        return 2
    print(f"ragchat: using {where(settings)}", file=sys.stderr)
    async with open_runtime(settings) as rt:
        if args.generate:
            code, run_id, results = await _generated(rt, args)
        else:
            code, run_id, results = await _beir(rt, args)
    if code:
        return code
    if compare == ["modes"]:
        print(compare_table(config_columns(results)))
    if args.json:
        _write_json(Path(args.json), results)
    print(f"stored as run {run_id} (compare: ragchat eval --compare {run_id} OTHER_ID)")
    return 0


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def _configs(rt: Any, args: argparse.Namespace) -> list[Any]:
    """Every mode × rerank off/on (`--rerank`), and per `--fusions` method a searcher with that fusion."""
    from ragchat.evaluation.runner import configs_for

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    rerank = (False, True) if args.rerank else (False,)
    fusions = [f.strip() for f in (args.fusions or "").split(",") if f.strip()]
    if not fusions:
        return configs_for(rt.searcher, rt.settings.retrieval, modes, rerank)
    configs: list[Any] = []
    for fusion in fusions:
        configs += configs_for(rt.searcher, rt.settings.retrieval, ["hybrid"], rerank, fusion)
    return configs


async def _generated(rt: Any, args: argparse.Namespace) -> tuple[int, int, dict[str, Any]]:
    from ragchat.evaluation import store
    from ragchat.evaluation.report import format_categories, format_results
    from ragchat.evaluation.service import GeneratedEval, run_generated

    principal = await acting_as(rt, args.user)
    spec = GeneratedEval(n=args.generate, rerank=(False, True) if args.rerank else (False,),
                         category_key=args.category_key)  # fmt: skip
    stage = {"name": ""}

    def progress(p: dict[str, Any]) -> None:
        if args.quiet:
            return
        end = "\n" if p["done"] >= p["total"] else ""
        if stage["name"] != p["stage"]:
            stage["name"] = p["stage"]
        print(f"\r{p['stage']}: {p['done']}/{p['total']}", end=end, file=sys.stderr, flush=True)

    results, notes = await run_generated(rt, principal, spec, configs=_configs(rt, args), on_progress=progress)
    run_id = await store.create_run(rt.pool, principal.user_id, "library", {**spec.config(), "fusions": args.fusions},
                                    results=results, notes=notes)  # fmt: skip
    print(f"your library · {results['questions']} generated questions · {notes}")
    print(format_results(results))
    if cats := format_categories(results):
        print(cats)
    return 0, run_id, results


async def _beir(rt: Any, args: argparse.Namespace) -> tuple[int, int, dict[str, Any]]:
    from tqdm import tqdm

    from ragchat.core.principal import Principal
    from ragchat.evaluation import store
    from ragchat.evaluation.beir import load_beir, query_categories
    from ragchat.evaluation.report import format_categories, format_results
    from ragchat.evaluation.runner import (
        beir_queries,
        check_ingest,
        ensure_corpus,
        eval_owner,
        measure,
        source_document,
    )

    dataset = load_beir(args.dataset, args.split)
    owner = eval_owner(dataset)
    bar = tqdm(desc="ingesting corpus", unit="doc", disable=args.quiet)

    def report(p: Any) -> None:
        bar.n = p.documents_done + p.documents_failed
        bar.refresh()

    ingested = await ensure_corpus(rt.accounts, rt.documents.ingestion, dataset, owner, report)
    bar.close()
    check = await check_ingest(rt.corpus, owner)
    print(f"ingested {ingested} corpus documents now; {check.ready} ready in all", file=sys.stderr)
    notes = ""
    if not check.complete:
        if not args.allow_partial:
            print(f"ragchat: {check.describe()}", file=sys.stderr)
            print("ragchat: not scoring a partial corpus; fix the failures or pass --allow-partial", file=sys.stderr)
            return 1, 0, {}
        notes = f"PARTIAL: scored with {check.failed} failed and {check.pending} unfinished corpus documents"
        print(f"ragchat: {notes}\n{check.describe()}")
    queries = beir_queries(dataset, query_categories(dataset, args.category_key or "category"))
    measured = await measure(_configs(rt, args), queries, Principal(owner, "eval", False), doc_key=source_document)
    results = {
        "dataset": dataset.path.name,
        "split": args.split,
        "questions": len(queries),
        "configs": {name: m.to_json() for name, m in measured.items()},
    }
    config = {"kind": "beir", "path": str(dataset.path), "split": args.split, "modes": args.modes,
              "rerank": args.rerank, "fusions": args.fusions}  # fmt: skip
    run_id = await store.create_run(rt.pool, owner, dataset.path.name, config, results=results,
                                    partial=not check.complete, notes=notes)  # fmt: skip
    print(f"{dataset.path.name} · split {args.split} · {len(queries)} queries" + (f" · {notes}" if notes else ""))
    print(format_results(results))
    if cats := format_categories(results):
        print(cats)
    return 0, run_id, results


def add_commands(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("eval", help="measure retrieval: a BEIR dataset, or questions generated from your documents")
    ev.add_argument("--dataset", help="BEIR folder with corpus.jsonl, queries.jsonl, qrels/")
    ev.add_argument("--generate", type=int, metavar="N", help="generate N questions from your documents with the LLM")
    ev.add_argument("--split", default="test", help="qrels split (default test)")
    ev.add_argument("--modes", default=MODES, help=f"comma-separated modes (default {MODES})")
    ev.add_argument("--fusions", help="hybrid fusion methods side by side, e.g. relative,rrf,weighted_rrf")
    ev.add_argument("--rerank", action="store_true", help="also measure every mode with the LLM reranker")
    ev.add_argument("--category-key", help="results per category: a document metadata key (--generate) or a "
                    "query field (--dataset; default `category` when present)")  # fmt: skip
    ev.add_argument("--allow-partial", action="store_true", help="score even if some corpus documents failed")
    ev.add_argument("--compare", nargs="+", metavar="RUN_ID", help="stored runs side by side with deltas, or `modes`")
    ev.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ev.add_argument("--quiet", action="store_true", help="no progress output")
    add_user_option(ev)
    ev.set_defaults(func=run_async(evaluate))
