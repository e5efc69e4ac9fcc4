"""Chunking bench: nDCG@10 and recall@k per strategy × chunk size on long documents built from BEIR corpora.

For each set (../shared/data/scifact-dev, ../shared/data/nfcorpus-dev), a seeded subsample of queries is
drawn; their relevant abstracts plus random distractors (up to --abstracts) are shuffled and concatenated,
`--per-doc` at a time, into long documents, in two layouts:

- `headed`: Markdown, each abstract under a `## title` heading (the parser makes one section per abstract);
- `flat`:   plain text, each abstract as a title line and a paragraph (one section per document: only the
            chunker decides where an abstract ends).

Each document is parsed by the product's parser and chunked by `line`, `sentence`, `semantic` (and `auto`'s
choice is recorded) at each chunk size, with the pipeline's embedder (the configured EMBED_PROVIDER; token
counts in its word pieces) and the pipeline's embedding text (document title + chunk). A chunk belongs to
the abstract that contributes most of its words. Retrieval is dense (cosine, the product's vector search
without the HNSW approximation) over every chunk of the set; the ranked chunks become ranked abstracts with
a repeated abstract kept as a wasted slot (a RAG prompt gets k chunks, not k abstracts): nDCG@10 and
recall@5/10/20 over those slots. Sizes over the model's 256 word pieces are chunked as asked but the model
only reads the first 256 (the table says so).

    .venv/bin/python bench/chunking.py [--queries 100] [--abstracts 300] [--sizes 100 200 300 400]

The defaults ran in 47 minutes on 2 cores shared with 7 other jobs (load average 10-16); 300 queries and
1,500 abstracts would take about five times as long.

Writes bench/results/chunking.json and bench/results/chunking.md.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from bench.common import RESULTS, bench_settings, cpu_context, load_embedder, table, write_json
from ragchat.documents.chunking.sentences import Chunk, embedding_text
from ragchat.documents.chunking.strategy import Strategy, blocking_embed, chunk_document, route
from ragchat.documents.parsing.parsers import parse
from ragchat.evaluation.beir import iter_corpus, load_beir
from ragchat.evaluation.metrics import ndcg_at_k, recall_at_k

SETS = {"scifact": ("scifact-dev", "train"), "nfcorpus": ("nfcorpus-dev", "dev")}
DATA_ROOT = Path(__file__).resolve().parents[2] / "shared" / "data"
STRATEGIES: tuple[Strategy, ...] = ("line", "sentence", "semantic")
KS = (5, 10, 20)


def sample(
    name: str, queries: int, abstracts: int, seed: int
) -> tuple[dict[str, str], dict[str, dict[str, int]], dict[str, tuple[str, str]]]:
    """Queries (with their judged abstracts inside the sample), qrels restricted to it, and the abstracts."""
    folder, split = SETS[name]
    data = load_beir(DATA_ROOT / folder, split)
    corpus = {doc_id: (title, text) for doc_id, title, text in iter_corpus(data.corpus_path)}
    rnd = random.Random(seed)
    order = list(data.queries)
    rnd.shuffle(order)
    chosen: dict[str, str] = {}
    keep: set[str] = set()
    budget = int(abstracts * 0.7)  # the rest are distractors
    for qid in order:
        rel = {d for d, s in data.qrels[qid].items() if s > 0 and d in corpus}
        if not rel or len(keep | rel) > budget:
            continue
        chosen[qid] = data.queries[qid]
        keep |= rel
        if len(chosen) >= queries:
            break
    others = sorted(set(corpus) - keep)
    rnd.shuffle(others)
    keep |= set(others[: max(0, abstracts - len(keep))])
    qrels = {q: {d: s for d, s in data.qrels[q].items() if d in keep and s > 0} for q in chosen}
    return chosen, qrels, {d: corpus[d] for d in keep}


def documents(
    abstracts: dict[str, tuple[str, str]], per_doc: int, layout: str, seed: int
) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(filename, text, [(abstract id, its words as text)]) per long document."""
    ids = sorted(abstracts)
    random.Random(seed + 1).shuffle(ids)
    out = []
    for n, start in enumerate(range(0, len(ids), per_doc)):
        group = ids[start : start + per_doc]
        parts, spans = [], []
        for doc_id in group:
            title, text = abstracts[doc_id]
            title = " ".join(title.split()) or doc_id
            text = " ".join(text.split())
            parts.append(f"## {title}\n\n{text}" if layout == "headed" else f"{title}\n{text}")
            spans.append((doc_id, (f"{text}" if layout == "headed" else f"{title} {text}")))
        head = f"# Report {n + 1}\n\n" if layout == "headed" else f"Report {n + 1}\n\n"
        ext = ".md" if layout == "headed" else ".txt"
        out.append((f"report{n + 1}{ext}", head + "\n\n".join(parts) + "\n", spans))
    return out


def label_chunks(chunks: Sequence[Chunk], spans: list[tuple[str, str]]) -> list[str]:
    """The abstract contributing most words to each chunk (chunks in order; overlap allowed)."""
    words: list[str] = []
    owner: list[str] = []
    for doc_id, text in spans:
        w = text.split()
        words += w
        owner += [doc_id] * len(w)
    labels, cursor = [], 0
    for chunk in chunks:
        cw = chunk.content.split()
        pos = _find(words, cw, cursor)
        if pos is None:  # the document's heading line ("Report n") or a cut word: match from its first word
            pos = _find(words, cw[1:], cursor) if len(cw) > 1 else None
        if pos is None:
            labels.append("-")
            continue
        cursor = pos
        span = owner[pos : pos + len(cw)]
        labels.append(max(set(span), key=span.count) if span else "-")
    return labels


def _find(words: list[str], needle: list[str], start: int) -> int | None:
    if not needle:
        return None
    n = len(needle)
    for p in range(start, len(words) - n + 1):
        if words[p] == needle[0] and words[p : p + n] == needle:
            return p
    return None


class Embeddings:
    """Chunk vectors cached by text across configurations (300 and 400 tokens often give the same chunks)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder, self.cache, self.embedded, self.seconds = embedder, {}, 0, 0.0

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            started = time.perf_counter()
            for t, v in zip(todo, self.embedder.embed_sync(todo), strict=True):
                self.cache[t] = v
            self.seconds += time.perf_counter() - started
            self.embedded += len(todo)
        return np.vstack([self.cache[t] for t in texts])


def score(
    labels: list[str], matrix: np.ndarray, qvecs: np.ndarray, qids: list[str], qrels: dict[str, dict[str, int]]
) -> dict[str, float]:
    sims = qvecs @ matrix.T
    top = np.argsort(-sims, axis=1)[:, : max(KS) * 3]
    out = {"ndcg@10": 0.0, **{f"recall@{k}": 0.0 for k in KS}}
    for row, qid in zip(top, qids, strict=True):
        seen: set[str] = set()
        ranked = []
        for i in row[: max(KS)]:
            label = labels[i]
            ranked.append(label if label not in seen else f"dup{i}")  # a repeat takes a slot, gains nothing
            seen.add(label)
        out["ndcg@10"] += ndcg_at_k(ranked, qrels[qid], 10)
        for k in KS:
            out[f"recall@{k}"] += recall_at_k(ranked, qrels[qid], k)
    return {k: round(v / len(qids), 4) for k, v in out.items()}


def run_set(name: str, args: argparse.Namespace, embedder: Any, embed: Embeddings) -> list[dict[str, Any]]:
    queries, qrels, abstracts = sample(name, args.queries, args.abstracts, args.seed)
    qids = list(queries)
    qvecs = embedder.embed_queries_sync([queries[q] for q in qids])
    print(
        f"{name}: {len(qids)} queries, {len(abstracts)} abstracts, {sum(len(r) for r in qrels.values())} judgments",
        flush=True,
    )
    rows = []
    for layout in args.layouts:
        docs = documents(abstracts, args.per_doc, layout, args.seed)
        parsed = [(fn, parse(text.encode(), fn), spans) for fn, text, spans in docs]
        auto = {route(p.sections, fn).strategy for fn, p, _ in parsed}
        for size in args.sizes:
            for strategy in STRATEGIES:
                started, before, embed_s = time.perf_counter(), embed.embedded, embed.seconds
                labels: list[str] = []
                texts: list[str] = []
                tokens: list[int] = []
                for fn, p, spans in parsed:
                    result = chunk_document(
                        p.sections,
                        fn,
                        embedder.count_tokens,
                        embed,
                        strategy=strategy,
                        max_tokens=size,
                        overlap=size // 5,
                        max_chars=args.max_chars,
                    )
                    labels += label_chunks(result.chunks, spans)
                    texts += [embedding_text(p.title, c.content) for c in result.chunks]
                    tokens += [c.token_count for c in result.chunks]
                chunk_s = time.perf_counter() - started - (embed.seconds - embed_s)
                metrics = score(labels, embed(texts), qvecs, qids, qrels)
                row = {
                    "set": name,
                    "layout": layout,
                    "strategy": strategy,
                    "tokens": size,
                    "chunks": len(texts),
                    "mean_tokens": round(float(np.mean(tokens)), 1),
                    "unlabelled": labels.count("-"),
                    "truncated": sum(t > embedder.max_tokens for t in tokens),
                    "auto_routes_here": strategy in auto,
                    **metrics,
                    "chunk_s": round(chunk_s, 1),
                    "embedded": embed.embedded - before,
                    "wall_s": round(time.perf_counter() - started, 1),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# Chunking strategies × chunk size (bench/chunking.py)",
        "",
        f"{meta['queries']} queries and {meta['abstracts']} abstracts per set, {meta['per_doc']} abstracts per "
        f"document; dense retrieval ({meta['embedder']}); a repeated abstract in the top k is a wasted slot. "
        f"Load average at start {meta['cpu']['loadavg']}, run took {meta['wall_s']:.0f} s. "
        "`auto` = the strategy auto routes these documents to (marked *). "
        f"Sizes over {meta['max_tokens']} word pieces: the model reads only the first {meta['max_tokens']}.",
        "",
        "| set | layout | strategy | tokens | chunks | nDCG@10 | R@5 | R@10 | R@20 |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        star = "*" if r["auto_routes_here"] else ""
        lines.append(
            f"| {r['set']} | {r['layout']} | {r['strategy']}{star} | {r['tokens']} | {r['chunks']} "
            f"| {r['ndcg@10']:.4f} | {r['recall@5']:.4f} | {r['recall@10']:.4f} | {r['recall@20']:.4f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--abstracts", type=int, default=300)
    parser.add_argument("--per-doc", type=int, default=20)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 300, 400])
    parser.add_argument("--layouts", nargs="+", default=["headed", "flat"], choices=["headed", "flat"])
    parser.add_argument("--max-chars", type=int, default=4000, help="CHUNK_MAX_CHARS (4000: 400 tokens fit)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", default="chunking")
    args = parser.parse_args()
    cpu = cpu_context()
    started = time.perf_counter()
    settings = bench_settings(Path("/tmp/ragchat-bench-chunking"))
    embedder = load_embedder(settings)
    assert blocking_embed(embedder, None) is not None, "the bench needs a local embedder (embed_sync)"
    rows: list[dict[str, Any]] = []
    for name in args.sets:
        rows += run_set(name, args, embedder, Embeddings(embedder))
    meta = {
        "queries": args.queries,
        "abstracts": args.abstracts,
        "per_doc": args.per_doc,
        "sizes": args.sizes,
        "layouts": args.layouts,
        "seed": args.seed,
        "embedder": f"{embedder.provider} {embedder.model_name}",
        "max_tokens": embedder.max_tokens,
        "cpu": cpu,
        "loadavg_end": [round(x, 2) for x in __import__("os").getloadavg()],
        "wall_s": round(time.perf_counter() - started, 1),
    }
    headers = ["set", "layout", "strategy", "tokens", "chunks", "nDCG@10", "R@5", "R@10", "R@20", "s"]
    print(
        table(
            headers,
            [
                [
                    r["set"],
                    r["layout"],
                    r["strategy"] + ("*" if r["auto_routes_here"] else ""),
                    r["tokens"],
                    r["chunks"],
                    r["ndcg@10"],
                    r["recall@5"],
                    r["recall@10"],
                    r["recall@20"],
                    r["wall_s"],
                ]
                for r in rows
            ],
        )
    )
    write_json(RESULTS / f"{args.out}.json", {"meta": meta, "rows": rows})
    (RESULTS / f"{args.out}.md").write_text(markdown(rows, meta), encoding="utf-8")
    print(f"wrote {RESULTS / (args.out + '.json')} and .md in {meta['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
