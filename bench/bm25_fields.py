"""BM25 field models x analysers (issue 34, items 1 and 5), offline on both dev corpora.

    .venv/bin/python bench/bm25_fields.py [--cache /tmp/fusion-bench] [--work /tmp/bm25f-study]

Needs the fusion bench's cache (`bench/fusion.py`: both corpora ingested and every query's vector and keyword
lists at depth 100). Its database is copied to `--work` and analysed there (`bench/bm25_fields_data.py`);
BM25 is then scored here in numpy over every chunk of a corpus for every query (exhaustive, no candidate
cap), the top 100 chunks become corpus ids (first chunk of a document counts) and are scored with
`ragchat.evaluation.metrics`, alone and fused with the cached vector list through the production
`ragchat.retrieval.fusion.fuse` (the default `relative`, depth 100, as `bench/fusion.py` calls it).

Field models (k1 0.9 everywhere; idf is Lucene's, df counted in chunks as production does):
- `one`: one field, title || ' ' || body (production: b 0.4, df and average length of that field);
- `sum`: w * BM25(title; b_title, title df) + BM25(body; b 0.4, body df) (Lucene / Elasticsearch's
  per-field scores added);
- `bm25f`: one saturation over w * tf_title / B_title + tf_body / B_body (B = 1 - b + b * len / avglen,
  per field), with the idf of the combined field (Robertson & Zaragoza's BM25F);
- `best_fields`: max + 0.5 * min of the two per-field scores (BEIR's Elasticsearch baseline's multi_match).
The title is every chunk's own copy of its document's title (as stored): it counts once per chunk in tf,
df and length, in every model, as it does in production today.

The reproduction check first: `one` / `english` scored exhaustively, and again with production's candidate
rule (`keyword.candidate_terms`, the cap, the all-of-the-rarest path), against the cached production lists.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bm25_fields_data import ANALYZERS, Analysed, load
from bench.bm25_fields_report import print_tables, report_markdown
from bench.common import DATA, RESULTS, cpu_context, write_json
from bench.fusion import CORPORA, production
from bench.fusion_collect import cache_path
from ragchat.evaluation.beir import BeirDataset, load_beir
from ragchat.evaluation.metrics import dedup_keep_first, evaluate, ndcg_at_k
from ragchat.retrieval.keyword import MAX_QUERY_TERMS, TermStat, bm25_idf, candidate_terms

K1 = 0.9
B = 0.4
DEPTH = 100
CANDIDATES = 1000
Ranked = dict[str, list[tuple[int, float]]]  # qid -> (chunk id, score), best first


def idf(n: int, df: np.ndarray) -> np.ndarray:
    return np.log(1.0 + (n - df + 0.5) / (df + 0.5))


def norms(a: Analysed, fld: str, b: float) -> np.ndarray:
    lens = a.lengths(fld)
    avg = max(lens.mean(), 1.0)
    return 1.0 - b + b * lens / avg


def scale_rows(m: sparse.csr_matrix, factor: np.ndarray) -> sparse.csr_matrix:
    out = m.copy()
    out.data = out.data * np.repeat(factor, np.diff(m.indptr))
    return out


def saturated(a: Analysed, fld: str, b: float, k1: float = K1) -> sparse.csr_matrix:
    """tf (k1 + 1) / (tf + k1 B) per (chunk, term) of one field."""
    m = a.tf[fld].copy()
    nrm = np.repeat(norms(a, fld, b), np.diff(m.indptr))
    m.data = m.data * (k1 + 1) / (m.data + k1 * nrm)
    return m


def query_terms(a: Analysed) -> dict[str, list[int]]:
    """Each query's terms as production keeps them: present in the corpus, the 32 rarest (df, then lexeme)."""
    df = a.df("all")
    return {q: sorted(t, key=lambda i: (df[i], a.vocab[i]))[:MAX_QUERY_TERMS] for q, t in a.queries.items()}


def query_matrix(a: Analysed, terms: dict[str, list[int]], weights: np.ndarray) -> sparse.csc_matrix:
    """vocab x queries, the term's weight (its idf) where the query has it."""
    rows, cols = [], []
    for j, q in enumerate(terms):
        rows += terms[q]
        cols += [j] * len(terms[q])
    r = np.array(rows, np.int64)
    return sparse.csc_matrix((weights[r], (r, np.array(cols, np.int64))), shape=(len(a.vocab), len(terms)))


def top(a: Analysed, scores: np.ndarray, qids: list[str], depth: int = DEPTH) -> Ranked:
    """Best `depth` chunks of each column (score > 0), ties by chunk id as production orders them."""
    out: Ranked = {}
    for j, q in enumerate(qids):
        col = scores[:, j]
        idx = np.flatnonzero(col > 0)
        if len(idx) > depth:  # keep every tie of the depth-th score: the chunk id breaks them below
            idx = idx[col[idx] >= -np.partition(-col[idx], depth - 1)[depth - 1]]
        idx = idx[np.lexsort((a.ids[idx], -col[idx]))][:depth]
        out[q] = [(int(a.ids[i]), float(col[i])) for i in idx]
    return out


def dense(m: Any) -> np.ndarray:
    return m.toarray() if sparse.issparse(m) else np.asarray(m)


def score_one(a: Analysed, b: float = B, k1: float = K1) -> np.ndarray:
    terms = query_terms(a)
    n = len(a.ids)
    return dense(saturated(a, "all", b, k1) @ query_matrix(a, terms, idf(n, a.df("all"))))


def field_scores(a: Analysed, b_title: float, b_body: float) -> tuple[np.ndarray, np.ndarray]:
    terms = query_terms(a)
    n = len(a.ids)
    st = dense(saturated(a, "title", b_title) @ query_matrix(a, terms, idf(n, a.df("title"))))
    sb = dense(saturated(a, "body", b_body) @ query_matrix(a, terms, idf(n, a.df("body"))))
    return st, sb


def score_bm25f(a: Analysed, w: float, b_title: float, b_body: float, k1: float = K1) -> np.ndarray:
    terms = query_terms(a)
    n = len(a.ids)
    pseudo = scale_rows(a.tf["title"], w / norms(a, "title", b_title)) + scale_rows(
        a.tf["body"], 1.0 / norms(a, "body", b_body)
    )
    pseudo = pseudo.tocsr()
    pseudo.data = pseudo.data * (k1 + 1) / (pseudo.data + k1)
    return dense(pseudo @ query_matrix(a, terms, idf(n, a.df("all"))))


def production_rule(a: Analysed, scores: np.ndarray, qids: list[str]) -> Ranked:
    """`keyword_search`'s candidates: the rarest terms' postings within the budget (the first `cap` in id order
    when one term alone exceeds it), or, for only-common-word queries, chunks holding all of the 4 rarest."""
    terms = query_terms(a)
    df = a.df("all")
    present = sparse.csc_matrix(a.tf["all"])
    out: Ranked = {}
    for j, q in enumerate(qids):
        stats = [TermStat(a.vocab[t], int(df[t]), bm25_idf(len(a.ids), int(df[t]))) for t in terms[q]]
        if not stats:
            out[q] = []
            continue
        col = {a.vocab[t]: t for t in terms[q]}
        chosen = candidate_terms(stats, CANDIDATES)
        ranked: list[tuple[int, float]] = []
        if len(chosen) == 1 and chosen[0].df > CANDIDATES and len(stats) > 1:
            ranked = _rank(a, scores[:, j], _rows_with(present, [col[t.term] for t in stats[:4]], every=True))
        if len(ranked) < DEPTH:
            ranked = _rank(a, scores[:, j], _rows_with(present, [col[t.term] for t in chosen], every=False))
        out[q] = ranked
    return out


def _rows_with(present: sparse.csc_matrix, cols: list[int], every: bool) -> np.ndarray:
    """Rows holding all (or any) of the columns, the first CANDIDATES in id order (the GIN scan's LIMIT)."""
    sets = [set(present[:, c].indices.tolist()) for c in cols]
    rows = set.intersection(*sets) if every else set.union(*sets)
    return np.array(sorted(rows), np.int64)[:CANDIDATES]


def _rank(a: Analysed, col: np.ndarray, rows: np.ndarray) -> list[tuple[int, float]]:
    rows = rows[np.lexsort((a.ids[rows], -col[rows]))][:DEPTH]
    return [(int(a.ids[i]), float(col[i])) for i in rows]


def arms(a: Analysed) -> dict[str, Callable[[], np.ndarray]]:
    """label -> scores (chunks x queries)."""
    out: dict[str, Callable[[], np.ndarray]] = {"one b=0.4": lambda: score_one(a)}
    out["one b=0.75"] = lambda: score_one(a, 0.75)
    cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    def fields(bt: float) -> tuple[np.ndarray, np.ndarray]:
        if bt not in cache:
            cache[bt] = field_scores(a, bt, B)
        return cache[bt]

    for bt in (0.3, 0.6, 0.9):
        for w in (0.5, 1.0, 2.0, 3.0):
            out[f"sum w={w:g} bt={bt:g}"] = lambda w=w, bt=bt: w * fields(bt)[0] + fields(bt)[1]
            out[f"bm25f w={w:g} bt={bt:g}"] = lambda w=w, bt=bt: score_bm25f(a, w, bt, B)
    out["best_fields bt=0.4"] = lambda: _best(*fields(0.4))
    # around the best of the grid: the body's b, k1, a weight between
    out["one k1=1.2 b=0.75"] = lambda: score_one(a, 0.75, 1.2)
    out["one k1=1.2 b=0.4"] = lambda: score_one(a, 0.4, 1.2)
    out["bm25f w=1.5 bt=0.6"] = lambda: score_bm25f(a, 1.5, 0.6, B)
    for bb in (0.3, 0.75):
        out[f"bm25f w=2 bt=0.6 bb={bb:g}"] = lambda bb=bb: score_bm25f(a, 2.0, 0.6, bb)
    out["bm25f w=2 bt=0.6 k1=1.2"] = lambda: score_bm25f(a, 2.0, 0.6, B, 1.2)
    return out


def _best(st: np.ndarray, sb: np.ndarray) -> np.ndarray:
    return np.maximum(st, sb) + 0.5 * np.minimum(st, sb)


def metrics(ranked: Ranked, lists: dict[str, Any], dataset: BeirDataset) -> dict[str, Any]:
    """Keyword alone and fused with the cached vector list (production `fuse`, relative, depth 100)."""
    source: dict[str, str] = lists["source"]
    fused = production("relative", depth=DEPTH)
    kw_run: dict[str, list[str]] = {}
    hy_run: dict[str, list[str]] = {}
    for qid, cached in lists["queries"].items():
        vec = [(int(i), float(s)) for i, s in cached["vector"]]
        kwd = ranked.get(qid, [])
        kw_run[qid] = dedup_keep_first(source[str(i)] for i, _ in kwd[:DEPTH])
        hy_run[qid] = dedup_keep_first(source[str(i)] for i in fused(vec, kwd, {})[:DEPTH])
    out: dict[str, Any] = {}
    for arm, run in (("keyword", kw_run), ("hybrid", hy_run)):
        m = evaluate(run, dataset.qrels, (10, 100))
        out[arm] = {k: round(m[k], 4) for k in ("ndcg@10", "recall@10", "recall@100")}
        out[arm]["per_query"] = {q: ndcg_at_k(run.get(q, []), r, 10) for q, r in dataset.qrels.items()}
    return out


def cached_ranked(lists: dict[str, Any]) -> Ranked:
    return {q: [(int(i), float(s)) for i, s in v["keyword"]] for q, v in lists["queries"].items()}


def paired(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """Mean per-query difference (a - b) and its standard error."""
    d = [a[q] - b[q] for q in a]
    se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else 0.0
    return {"mean": round(statistics.fmean(d), 4), "se": round(se, 4)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import json

    datasets = {name: load_beir(DATA.parent / name, split) for name, split in CORPORA.items()}
    context_start = cpu_context()
    lists = {
        name: json.loads(cache_path(args.cache, d, DEPTH).read_text(encoding="utf-8")) for name, d in datasets.items()
    }
    analysed = load(args.cache, args.work, datasets)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    check: dict[str, dict[str, Any]] = {}
    for name, dataset in datasets.items():
        qids = list(dataset.queries)
        base = analysed[name]["english"]
        prod = metrics(cached_ranked(lists[name]), lists[name], dataset)
        exhaustive_scores = score_one(base)
        exhaustive = metrics(top(base, exhaustive_scores, qids), lists[name], dataset)
        rule = metrics(production_rule(base, exhaustive_scores, qids), lists[name], dataset)
        check[name] = {"production (cached lists)": prod, "one/english exhaustive": exhaustive}
        check[name]["one/english, production's candidate rule"] = rule
        results[name] = {}
        for analyser in ANALYZERS:
            a = analysed[name][analyser]
            for label, scorer in arms(a).items():
                results[name][f"{analyser}: {label}"] = metrics(top(a, scorer(), qids), lists[name], dataset)
            print(f"{name} / {analyser}: {len(results[name])} arms", file=sys.stderr)
    return summarise(results, check, datasets, context_start)


BASELINE = "english: one b=0.4"


def summarise(
    results: dict[str, dict[str, dict[str, Any]]],
    check: dict[str, dict[str, Any]],
    datasets: dict[str, BeirDataset],
    context_start: dict[str, Any],
) -> dict[str, Any]:
    names = list(datasets)
    rows = []
    for label in results[names[0]]:
        row: dict[str, Any] = {"arm": label}
        ok = True
        gain = False
        for name in names:
            r, base = results[name][label], results[name][BASELINE]
            row[name] = {arm: {k: v for k, v in r[arm].items() if k != "per_query"} for arm in ("keyword", "hybrid")}
            row[name]["delta_vs_baseline"] = {
                arm: paired(r[arm]["per_query"], base[arm]["per_query"]) for arm in ("keyword", "hybrid")
            }
            for arm in ("keyword", "hybrid"):
                d = r[arm]["ndcg@10"] - base[arm]["ndcg@10"]
                ok = ok and d >= -0.001
                gain = gain or d >= 0.005
        row["keyword_mean_ndcg@10"] = round(statistics.fmean(results[n][label]["keyword"]["ndcg@10"] for n in names), 4)
        row["hybrid_mean_ndcg@10"] = round(statistics.fmean(results[n][label]["hybrid"]["ndcg@10"] for n in names), 4)
        row["no_loss_on_either"] = ok
        row["wins"] = ok and gain and label != BASELINE
        rows.append(row)
    winners = sorted(
        (r for r in rows if r["wins"]), key=lambda r: -(r["keyword_mean_ndcg@10"] + r["hybrid_mean_ndcg@10"])
    )
    strip = {
        n: {k: {arm: {m: v for m, v in r[arm].items() if m != "per_query"} for arm in r} for k, r in c.items()}
        for n, c in check.items()
    }
    return {
        "bench": "bm25_fields",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "depth": DEPTH,
        "k1": K1,
        "queries": {n: len(d.queries) for n, d in datasets.items()},
        "splits": CORPORA,
        "baseline": BASELINE,
        "reproduction": strip,
        "rows": rows,
        "chosen": winners[0]["arm"] if winners else None,
        "rule": "keyword and hybrid nDCG@10 each >= baseline - 0.001 on both sets, +0.005 on at least one; "
        "best mean (keyword + hybrid) over both sets",
        "cpu_context_start": context_start,
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/fusion-bench"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/bm25f-study"))
    parser.add_argument("--json", type=Path, default=RESULTS / "bm25_fields.json")
    parser.add_argument("--markdown", type=Path, default=RESULTS / "bm25_fields.md")
    args = parser.parse_args()
    report = run(args)
    print_tables(report)
    write_json(args.json, report)
    args.markdown.write_text(report_markdown(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
