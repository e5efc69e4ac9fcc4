"""Retrieval in other languages: XQuAD dev paragraphs (English, German, Spanish), each language on its own.

    .venv/bin/python bench/xquad.py --label before [--cache /tmp/xquad-bench] [--json bench/results/xquad_before.json]

Each paragraph of `../shared/data/xquad-dev/xquad.<lang>.json` is one document (no title: the article titles are
English in every file); each question's one relevant document is its own paragraph. A language's corpus is written
in the BEIR layout and ingested through `ragchat eval`'s own `ensure_corpus` (the product's registration, parsing,
chunking, embedding and BM25 triggers) under an owner of its own, into a private embedded database under
`--cache/data-<label>` (a fresh one per label, so an "after" run ingests with the code of that moment). Every
question is then searched through the product's `Searcher` in each mode (vector, keyword, hybrid) with the
environment's defaults, and scored by `ragchat.evaluation` (nDCG@10, recall@5) with a standard error over queries.

`--confidence`: "not in your documents" without a judge. Each question is searched (hybrid, the defaults) twice:
over every paragraph (answerable: its own is there) and restricted by a document filter to the other articles'
paragraphs (unanswerable: its article is out). Per language: the share of each flagged insufficient by the
product's confidence (false flags / recall), and the keyword coverage (`keyword_arm`, the product's) over
CONFIDENCE_KEYWORD_FLOOR values, which decides the flag where the embedding model does not cover the language.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import RESULTS, ROOT, bench_runtime, bench_settings, cpu_context, write_json
from ragchat.core.options import options_of
from ragchat.core.principal import Principal
from ragchat.core.search import SearchFilters
from ragchat.evaluation.beir import BeirDataset, load_beir
from ragchat.evaluation.metrics import dedup_keep_first
from ragchat.evaluation.runner import DEPTH, ensure_corpus, eval_owner, source_document
from ragchat.evaluation.scoring import per_query_scores
from ragchat.readscope.sql import read_chunk_scope
from ragchat.retrieval.fusion import other_languages
from ragchat.retrieval.keyword import keyword_arm

DATA = ROOT.parent / "shared" / "data" / "xquad-dev"
MODES = ("vector", "keyword", "hybrid")
METRICS = ("ndcg@10", "recall@5")


def write_beir(lang: str, out: Path) -> Path:
    """`xquad.<lang>.json` as a BEIR folder: corpus (one paragraph a document), queries, qrels/test.tsv."""
    raw = json.loads((DATA / f"xquad.{lang}.json").read_text(encoding="utf-8"))
    root = out / f"xquad-{lang}"
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    corpus, queries, qrels = [], [], ["query-id\tcorpus-id\tscore"]
    for a, article in enumerate(raw["data"]):
        for p, para in enumerate(article["paragraphs"]):
            doc_id = f"a{a}p{p}"
            corpus.append({"_id": doc_id, "title": "", "text": para["context"]})
            for qa in para["qas"]:
                queries.append({"_id": qa["id"], "text": qa["question"]})
                qrels.append(f"{qa['id']}\t{doc_id}\t1")
    lines = lambda rows: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)  # noqa: E731
    (root / "corpus.jsonl").write_text(lines(corpus), encoding="utf-8")
    (root / "queries.jsonl").write_text(lines(queries), encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return root


def _mean_se(values: list[float]) -> tuple[float, float]:
    n = len(values)
    if n == 0:
        return float("nan"), float("nan")
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return mean, math.sqrt(var / n)


async def measure_confidence(rt: Any, dataset: BeirDataset, limit: int | None, floors: list[float]) -> dict[str, Any]:
    """The `--confidence` figures for one ingested language (module docstring)."""
    owner = eval_owner(dataset)
    async with rt.pool.connection() as conn:
        rows = await (
            await conn.execute(
                "SELECT id, metadata->>'source_id' AS doc, text_search_config::text AS cfg FROM documents "
                "WHERE owner_id = %s",
                (owner,),
            )
        ).fetchall()
        scope = await read_chunk_scope(conn, owner)
    article = lambda doc: doc.split("p")[0]  # noqa: E731  a<article>p<paragraph>
    docs = [(r["id"], str(r["doc"])) for r in rows]
    principal = Principal(owner, "eval", False)
    options = options_of(rt.settings.retrieval, mode="hybrid", rerank=False, limit=DEPTH)
    s = rt.settings.retrieval
    got: dict[str, list[tuple[bool, float | None, bool]]] = {"answerable": [], "unanswerable": []}
    uses_coverage = other_languages(s, sorted({str(r["cfg"]) for r in rows}))
    for qid, text in list(dataset.queries.items())[:limit]:
        own = article(next(iter(dataset.qrels[qid])))
        others = SearchFilters(document_ids=[i for i, d in docs if article(d) != own])
        for kind, filters in (("answerable", None), ("unanswerable", others)):
            opts = options if filters is None else dataclasses.replace(options, filters=filters)
            result = await rt.searcher.search(text, principal=principal, options=opts)
            async with rt.pool.connection() as conn:
                found = await keyword_arm(
                    conn, text, scope=scope, n=DEPTH, filters=filters, k1=s.bm25_k1, b=s.bm25_b,
                    candidates=s.keyword_candidates,
                )  # fmt: skip
            best = result.confidence.best_similarity
            got[kind].append(
                (result.confidence.insufficient, found.coverage, best is None or best < s.confidence_floor)
            )
    share = lambda xs: round(sum(xs) / len(xs), 4) if xs else None  # noqa: E731
    out: dict[str, Any] = {
        "questions": len(got["answerable"]),
        "flagged_answerable": share([f for f, _, _ in got["answerable"]]),
        "flagged_unanswerable": share([f for f, _, _ in got["unanswerable"]]),
        "floor": s.confidence_keyword_floor,
        "uses_coverage": uses_coverage,
        "similarity_only": {kind: share([sim for _, _, sim in pairs]) for kind, pairs in got.items()},
        "coverage_floors": {},  # the product's flag at each floor: similarity below its floor, or coverage below
        "per_question": {kind: [[f, c] for f, c, _ in pairs] for kind, pairs in got.items()},
    }
    for floor in floors:
        out["coverage_floors"][str(floor)] = {
            kind: share([sim or (uses_coverage and c is not None and c < floor) for _, c, sim in pairs])
            for kind, pairs in got.items()
        }
    return out


async def measure_language(
    rt: Any, dataset: BeirDataset, limit: int | None, modes: tuple[str, ...] = MODES
) -> dict[str, Any]:
    owner = eval_owner(dataset)
    start = time.perf_counter()
    done = await ensure_corpus(rt.accounts, rt.documents.ingestion, dataset, owner)
    ingest_s = time.perf_counter() - start
    async with rt.pool.connection() as conn:
        configs = await (
            await conn.execute(
                "SELECT d.text_search_config::text AS cfg, count(*) AS n FROM documents d "
                "WHERE d.owner_id = %s GROUP BY 1 ORDER BY 2 DESC",
                (owner,),
            )
        ).fetchall()
    principal = Principal(owner, "eval", False)
    items = list(dataset.queries.items())[:limit]
    qrels = {qid: dataset.qrels[qid] for qid, _ in items}
    out: dict[str, Any] = {
        "documents_ingested_now": done,
        "ingest_s": round(ingest_s, 1),
        "queries": len(items),
        "document_configs": {str(r["cfg"]): int(r["n"]) for r in configs},
        "modes": {},
    }
    for mode in modes:
        options = options_of(rt.settings.retrieval, mode=mode, rerank=False, limit=DEPTH)
        run: dict[str, list[str]] = {}
        latencies: list[float] = []
        for qid, text in items:
            t0 = time.perf_counter()
            result = await rt.searcher.search(text, principal=principal, options=options)
            latencies.append((time.perf_counter() - t0) * 1000)
            run[qid] = dedup_keep_first(source_document(h) for h in result.chunks)
        per_query = per_query_scores(run, qrels, (5, 10))
        row: dict[str, Any] = {}
        for m in METRICS:
            mean, se = _mean_se([per_query[q][m] for q in qrels])
            row[m] = round(mean, 4)
            row[f"{m}_se"] = round(se, 4)
        latencies.sort()
        row["p50_ms"] = round(latencies[len(latencies) // 2], 1)
        out["modes"][mode] = row
    return out


def confidence_markdown(result: dict[str, Any]) -> str:
    """The `--confidence` table: flagged shares at the run's settings, then per coverage floor."""
    lines = [
        "| language | questions | flagged: answerable (false) / unanswerable (recall) | similarity alone "
        "| CONFIDENCE_KEYWORD_FLOOR → flagged |",
        "|---|---|---|---|---|",
    ]
    for lang, r in result["languages"].items():
        c = r.get("confidence")
        if not c:
            continue
        sweep = "; ".join(f"{f}: {v['answerable']} / {v['unanswerable']}" for f, v in c["coverage_floors"].items())
        flagged = f"{c['flagged_answerable']} / {c['flagged_unanswerable']}"
        alone = f"{c['similarity_only']['answerable']} / {c['similarity_only']['unanswerable']}"
        lines.append(f"| {lang} | {c['questions']} | {flagged} | {alone} | {sweep} |")
    return "\n".join(lines)


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| language | documents (config) | vector nDCG@10 | keyword nDCG@10 | hybrid nDCG@10 | vector R@5 "
        "| keyword R@5 | hybrid R@5 | hybrid p50 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for lang, r in result["languages"].items():
        m = r.get("modes", {})
        if set(m) != set(MODES):
            continue
        cfg = ", ".join(f"{k} {v}" for k, v in r["document_configs"].items())
        nd = " | ".join(f"{m[x]['ndcg@10']:.3f} ± {m[x]['ndcg@10_se']:.3f}" for x in MODES)
        rc = " | ".join(f"{m[x]['recall@5']:.3f}" for x in MODES)
        lines.append(f"| {lang} | {cfg} | {nd} | {rc} | {m['hybrid']['p50_ms']} |")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    extra = {} if args.other_weight is None else {"fusion_vector_weight_other_languages": args.other_weight}
    settings = bench_settings(args.cache / f"data-{args.data or args.label}", **extra)
    result: dict[str, Any] = {
        "label": args.label,
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "context_before": cpu_context(),
        "settings": {
            "search_mode": settings.retrieval.search_mode,
            "fusion": settings.retrieval.fusion,
            "embed_model": settings.embeddings.embed_model,
            "fusion_vector_weight_other_languages": settings.retrieval.fusion_vector_weight_other_languages,
        },
        "languages": {},
    }
    async with bench_runtime(settings) as rt:
        for lang in args.langs.split(","):
            dataset = load_beir(write_beir(lang, args.cache / "beir"))
            if args.sweep:  # hybrid at each FUSION_VECTOR_WEIGHT_OTHER_LANGUAGES (tuning on xquad-dev only)
                base = rt.searcher.settings
                sweep = {}
                for w in [float(x) for x in args.sweep.split(",")]:
                    rt.searcher.settings = base.model_copy(update={"fusion_vector_weight_other_languages": w})
                    r = await measure_language(rt, dataset, args.limit, ("hybrid",))
                    sweep[str(w)] = r["modes"]["hybrid"]
                    print(f"{lang} w={w}: {json.dumps(sweep[str(w)])}", file=sys.stderr)
                rt.searcher.settings = base
                result["languages"][lang] = {"sweep": sweep}
                continue
            r = await measure_language(rt, dataset, args.limit, tuple(args.modes.split(",")))
            result["languages"][lang] = r
            print(f"{lang}: {json.dumps(r['modes'])}", file=sys.stderr)
            if args.confidence:
                floors = [float(x) for x in args.confidence.split(",")]
                r["confidence"] = await measure_confidence(rt, dataset, args.limit, floors)
                brief = {k: v for k, v in r["confidence"].items() if k != "per_question"}
                print(f"{lang} confidence: {json.dumps(brief)}", file=sys.stderr)
    result["context_after"] = cpu_context()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/xquad-bench"))
    parser.add_argument("--label", default="now", help="names the data directory and the output")
    parser.add_argument("--langs", default="en,de,es")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--data", default=None, help="the data directory's label (default: --label's)")
    parser.add_argument("--other-weight", type=float, default=None, help="FUSION_VECTOR_WEIGHT_OTHER_LANGUAGES")
    parser.add_argument("--sweep", default=None, help="e.g. 0.2,0.3,0.5: hybrid only, at each other-language weight")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions of each language")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--confidence", default=None, help="e.g. 0.3,0.4,0.5: also 'not in your documents' (CONFIDENCE_KEYWORD_FLOOR)"
    )
    args = parser.parse_args()
    result = asyncio.run(run(args))
    path = args.json or RESULTS / f"xquad_{args.label}.json"
    write_json(path, result)
    print(markdown(result))
    if args.confidence:
        print(confidence_markdown(result))


if __name__ == "__main__":
    main()
