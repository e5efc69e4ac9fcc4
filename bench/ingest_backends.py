"""Embedding backends side by side (issue 18 item 4): torch fp32 against ONNX Runtime int8, in one run.

    python bench/ingest.py --backends [--rounds 5] [--e2e-limit 300] [--cache /tmp/ragchat-bench-backends]

1. raw chunks/s: chunks of exactly 256 word pieces (SciFact abstracts run together and cut), `embed_sync`
   in batches of EMBED_BATCH_SIZE; the backends alternate round by round (torch, onnx, torch, …) so the
   load of a shared machine hits both; ratio = median of each round pair's onnx/torch.
2. query latency: one query at a time through `embed_queries_sync` (the query thread), p50/p95, alternating.
3. end-to-end: the first `--e2e-limit` SciFact records through the real pipeline (`bench/ingest.py`'s
   `one_run`, a private embedded Postgres), once per backend.
4. nDCG@10 on both dev sets: every corpus document chunked with the production chunker (CHUNK_TOKENS /
   CHUNK_OVERLAP, the same chunks for every backend), each backend's vectors, exact cosine search (no HNSW,
   so only the embedding differs), a document scored by its best chunk. "cross" = int8 queries against
   float32 document vectors: whether the two backends' vectors are interchangeable in one embedding space.
   Vectors are cached under --cache (keyed by backend and chunk texts).

The load average is recorded before and after every step: other work on the machine slows both backends.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import DATA, Stopwatch, bench_runtime, bench_settings, cpu_context, table, write_json
from ragchat.documents.chunking.sentences import chunk_sections, embedding_text
from ragchat.documents.parsing.parsers import Section
from ragchat.evaluation.beir import iter_corpus, load_beir
from ragchat.evaluation.metrics import evaluate
from ragchat.providers.embeddings.base import bundled_model_path
from ragchat.settings import Settings

DEV_SETS = {"scifact-dev": "train", "nfcorpus-dev": "dev"}
CHUNK_WORDS = 254  # + [CLS] and [SEP] = 256 word pieces


def load(settings: Settings) -> tuple[dict[str, Any], dict[str, float]]:
    from ragchat.providers.embeddings.onnx import OnnxEmbedder
    from ragchat.providers.embeddings.sentence_transformers import SentenceTransformerEmbedder

    loaded, seconds = {}, {}
    for name, build in (
        ("torch", lambda: SentenceTransformerEmbedder(batch_size=settings.embeddings.embed_batch_size)),
        (
            "onnx-int8",
            lambda: OnnxEmbedder(
                batch_size=settings.embeddings.embed_batch_size, cache_dir=settings.embeddings.embed_cache_dir
            ),
        ),
    ):
        start = time.perf_counter()
        loaded[name] = build()
        loaded[name].embed_sync(["warm up"])
        seconds[name] = round(time.perf_counter() - start, 2)
    return loaded, seconds


def chunks_256(n: int) -> list[str]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(bundled_model_path()) / "tokenizer.json"))
    ids: list[int] = []
    for _, title, text in iter_corpus(DATA / "corpus.jsonl"):
        ids.extend(tok.encode(f"{title}. {text}", add_special_tokens=False).ids)
        if len(ids) > n * CHUNK_WORDS * 1.2:
            break
    return [tok.decode(ids[i * CHUNK_WORDS : (i + 1) * CHUNK_WORDS]) for i in range(n)]


def throughput(embedders: dict[str, Any], texts: list[str], rounds: int, batch: int) -> dict[str, Any]:
    rates: dict[str, list[float]] = {name: [] for name in embedders}
    loads = []
    for _ in range(rounds):
        for name, e in embedders.items():
            start = time.perf_counter()
            for i in range(0, len(texts), batch):
                e.embed_sync(texts[i : i + batch])
            rates[name].append(len(texts) / (time.perf_counter() - start))
        loads.append(round(__import__("os").getloadavg()[0], 2))
    base = rates["torch"]
    out: dict[str, Any] = {"chunks": len(texts), "rounds": rounds, "loadavg_1m_per_round": loads}
    for name, r in rates.items():
        out[name] = {
            "chunks_per_s_median": round(statistics.median(r), 2),
            "chunks_per_s_rounds": [round(x, 2) for x in r],
            "ratio_to_torch": round(statistics.median(x / b for x, b in zip(r, base, strict=True)), 2),
        }
    return out


def query_latency(embedders: dict[str, Any], queries: list[str]) -> dict[str, Any]:
    times: dict[str, list[float]] = {name: [] for name in embedders}
    for q in queries:
        for name, e in embedders.items():
            start = time.perf_counter()
            e.embed_queries_sync([q])
            times[name].append((time.perf_counter() - start) * 1000)
    return {
        name: {"p50_ms": round(statistics.median(t), 2), "p95_ms": round(float(np.percentile(t, 95)), 2)}
        for name, t in times.items()
    }


def _vectors(e: Any, name: str, texts: list[str], cache: Path, tag: str, query: bool) -> np.ndarray:
    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    path = cache / f"{tag}-{name}-{key}.npy"
    if path.exists():
        return np.load(path)
    encode = e.embed_queries_sync if query else e.embed_sync
    out = np.concatenate([encode(texts[i : i + 256]) for i in range(0, len(texts), 256)])
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    return out


def stored_corpus(db_dir: Path, dataset: Any) -> tuple[list[str], list[str], np.ndarray]:
    """(corpus id, embedding text, float32 vector) of every chunk `ragchat eval` / `bench/fusion.py` ingested
    for `dataset` into the embedded database in `db_dir` (read only; the torch backend made those vectors)."""
    import psycopg

    from ragchat.db.embedded import start_embedded
    from ragchat.evaluation.runner import eval_owner

    with psycopg.connect(start_embedded(db_dir).uri) as conn:
        space = conn.execute("SELECT id FROM embedding_spaces WHERE state = 'active'").fetchone()
        assert space is not None, f"no active embedding space in {db_dir}"
        rows = conn.execute(
            """SELECT d.metadata->>'source_id', c.title, c.content, e.embedding::text
               FROM document_chunks c JOIN documents d ON d.id = c.document_id
               JOIN chunk_embeddings e ON e.chunk_id = c.id AND e.space_id = %s
               WHERE c.owner_id = %s ORDER BY c.id""",
            (space[0], eval_owner(dataset)),
        ).fetchall()
    assert rows, f"{dataset.path.name} is not ingested in {db_dir}: run bench/fusion.py (or ragchat eval) first"
    vectors = np.array([json.loads(r[3]) for r in rows], dtype=np.float32)
    return [r[0] for r in rows], [embedding_text(r[1], r[2]) for r in rows], vectors


def chunked_corpus(dataset: Any, settings: Settings, count: Any) -> tuple[list[str], list[str]]:
    """Every corpus document cut by the production chunker (CHUNK_TOKENS / CHUNK_OVERLAP)."""
    doc_ids, texts = [], []
    for doc_id, title, text in iter_corpus(dataset.corpus_path):
        for chunk in chunk_sections(
            [Section(text)], count, max_tokens=settings.ingestion.chunk_tokens, overlap=settings.ingestion.chunk_overlap
        ):
            doc_ids.append(doc_id)
            texts.append(embedding_text(title, chunk.content))
    return doc_ids, texts


def ndcg(embedders: dict[str, Any], settings: Settings, args: Any, log: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dev, split in DEV_SETS.items():
        if args.ndcg_sets and dev not in args.ndcg_sets:
            continue
        dataset = load_beir(DATA.parent / dev, split)
        stored = None
        if args.ndcg_db:
            doc_ids, texts, fp32 = stored_corpus(args.ndcg_db, dataset)
            stored = fp32
        else:
            doc_ids, texts = chunked_corpus(dataset, settings, embedders["torch"].count_tokens)
        qids = list(dataset.queries)
        if args.ndcg_queries:  # an evenly spread sample, the same for every backend
            qids = qids[:: max(1, len(qids) // args.ndcg_queries)][: args.ndcg_queries]
        qtexts = [dataset.queries[q] for q in qids]
        qrels = {q: dataset.qrels[q] for q in qids}
        queries = {
            name: _vectors(e, name, qtexts, args.cache, f"{dev}-queries", query=True) for name, e in embedders.items()
        }
        row: dict[str, Any] = {
            "corpus_chunks": len(texts),
            "queries": len(qids),
            "chunks_from": str(args.ndcg_db or ""),
        }
        if stored is not None:  # float32 documents, both backends' queries, over the whole corpus: cheap
            full = np.array(doc_ids)
            for name in embedders:
                run = _search(queries[name], stored, full, qids)
                row[f"whole corpus, {name} queries, torch documents"] = round(
                    evaluate(run, qrels, ks=(10,))["ndcg@10"], 4
                )
        if stored is not None and args.ndcg_candidates:
            # only the chunks float32 ranks in any sampled query's top N are embedded again (a loaded machine
            # cannot embed whole corpora twice in time); every backend ranks that same candidate set
            top = np.argsort(-(queries["torch"] @ stored.T), axis=1)[:, : args.ndcg_candidates]
            keep = np.unique(top)
            doc_ids, texts, stored = [doc_ids[i] for i in keep], [texts[i] for i in keep], stored[keep]
            row["candidate_chunks"] = {"per_query_top": args.ndcg_candidates, "union": len(keep)}
        docs = {}
        for name, e in embedders.items():
            start = time.perf_counter()
            if name == "torch" and stored is not None:
                docs[name] = stored
            else:
                docs[name] = _vectors(e, name, texts, args.cache, f"{dev}-docs", query=False)
            log(f"{dev}: {name} vectors for {len(texts)} chunks in {time.perf_counter() - start:.0f} s")
        owners = np.array(doc_ids)
        pairs = [(name, name) for name in embedders] + [("onnx-int8", "torch")]
        for qname, dname in pairs:
            run = _search(queries[qname], docs[dname], owners, qids)
            label = qname if qname == dname else f"cross ({qname} queries, {dname} documents)"
            row[label] = round(evaluate(run, qrels, ks=(10,))["ndcg@10"], 4)
        cosine = (docs["onnx-int8"] * docs["torch"]).sum(axis=1)
        row["doc_cosine_int8_vs_fp32"] = {
            "min": round(float(cosine.min()), 4),
            "p1": round(float(np.percentile(cosine, 1)), 4),
            "mean": round(float(cosine.mean()), 4),
        }
        out[dev] = row
    return out


def _search(q: np.ndarray, d: np.ndarray, owners: np.ndarray, qids: list[str], depth: int = 100) -> dict[str, Any]:
    """Exact cosine search: per query, corpus ids ranked by their best chunk."""
    run: dict[str, list[str]] = {}
    for start in range(0, len(qids), 64):
        scores = q[start : start + 64] @ d.T
        for row, qid in zip(scores, qids[start : start + 64], strict=False):
            ranked = dict.fromkeys(str(owners[i]) for i in np.argsort(-row)[: depth * 3])
            run[qid] = list(ranked)[:depth]
    return run


async def end_to_end(embedders: dict[str, Any], limit: int, quiet: bool) -> dict[str, Any]:
    from bench.common import postmaster_pid
    from bench.ingest_run import TimedEmbedder, one_run, reset_tables

    lines = [ln for ln in (DATA / "corpus.jsonl").read_bytes().splitlines(keepends=True) if ln.strip()][:limit]
    out: dict[str, Any] = {"records": len(lines)}
    for name, e in embedders.items():  # each backend is its own embedding space: a fresh database each
        tmp = Path(tempfile.mkdtemp(prefix="ragchat-bench-backends-"))
        async with bench_runtime(bench_settings(tmp), embedder=e) as rt:
            await reset_tables(rt)
            result = await one_run(
                name, rt, TimedEmbedder(e, Stopwatch()), b"".join(lines), postmaster_pid(rt), Stopwatch(), quiet=quiet
            )
            out[name] = {k: result[k] for k in ("chunks", "chunks_embedded", "pipeline_wall_s", "chunks_per_s")}
    return out


async def run(args: Any) -> dict[str, Any]:
    def log(msg: str) -> None:
        if not args.quiet:
            print(f"[backends] {msg}", file=sys.stderr, flush=True)

    settings = bench_settings(Path(tempfile.mkdtemp(prefix="ragchat-bench-settings-")))
    out: dict[str, Any] = {"note": "2 shared cores: other helpers' work ran at the same time (see loadavg)"}
    out["cpu_context_start"] = cpu_context()
    embedders, out["load_s"] = load(settings)
    log(f"loaded {out['load_s']}")
    if not args.only_ndcg:
        texts = chunks_256(args.chunks)
        out["raw_256_token_chunks"] = throughput(embedders, texts, args.rounds, settings.embeddings.embed_batch_size)
        log(f"raw {out['raw_256_token_chunks']}")
        queries = [q for _, q in zip(range(args.queries), load_beir(DATA, "train").queries.values(), strict=False)]
        out["query_latency_ms"] = query_latency(embedders, queries)
        log(f"queries {out['query_latency_ms']}")
        if args.e2e_limit:
            out["end_to_end"] = await end_to_end(embedders, args.e2e_limit, args.quiet)
            log(f"end to end {out['end_to_end']}")
    out["ndcg@10"] = {} if args.skip_ndcg else ndcg(embedders, settings, args, log)
    out["cpu_context_end"] = cpu_context()
    for e in embedders.values():
        await e.close()
    write_json(args.json, out)
    args.json.with_suffix(".md").write_text(markdown(out), encoding="utf-8")
    print(markdown(out))
    return out


def markdown(out: dict[str, Any]) -> str:
    raw, lat = out.get("raw_256_token_chunks", {}), out.get("query_latency_ms", {})
    e2e, nd = out.get("end_to_end", {}), out["ndcg@10"]

    def score(dev: str, key: str) -> str:
        value = nd.get(dev, {}).get(key)
        return "-" if value is None else f"{value:.4f}"

    rows = []
    for name in ("torch", "onnx-int8"):
        rows.append(
            [
                name,
                raw.get(name, {}).get("chunks_per_s_median", "-"),
                raw.get(name, {}).get("ratio_to_torch", "-"),
                e2e.get(name, {}).get("chunks_per_s", "-"),
                lat.get(name, {}).get("p50_ms", "-"),
                *(score(dev, name) for dev in DEV_SETS),
            ]
        )
    cross = "cross (onnx-int8 queries, torch documents)"
    rows.append(["cross (int8 q, fp32 docs)", "", "", "", "", *(score(dev, cross) for dev in DEV_SETS)])
    for name in ("torch", "onnx-int8"):
        key = f"whole corpus, {name} queries, torch documents"
        rows.append([f"whole corpus, {name} q, fp32 docs", "", "", "", "", *(score(dev, key) for dev in DEV_SETS)])
    headers = ["backend", "raw chunks/s (256 tok)", "ratio", "pipeline chunks/s", "query p50 ms"]
    headers += [f"nDCG@10 {d}" for d in DEV_SETS]
    loads = raw.get("loadavg_1m_per_round", [])
    text = table(headers, rows, title="Embedding backends (one run, interleaved)")
    sizes = "; ".join(
        f"{dev}: {row.get('queries')} queries, {row.get('candidate_chunks', {}).get('union', row.get('corpus_chunks'))}"
        f" of {row.get('corpus_chunks')} chunks"
        for dev, row in nd.items()
    )
    return (
        f"{text}\n\nnDCG rows without 'whole corpus' rank the candidate chunks only ({sizes}).\n"
        f"loadavg (1 min) start {out['cpu_context_start']['loadavg']}, per raw round {loads}, "
        f"end {out['cpu_context_end']['loadavg']} on {out['cpu_context_start']['cpus']} shared cores.\n"
    )
