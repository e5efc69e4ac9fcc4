"""The real model's rerank and query-expansion gains on both dev sets, and its answer quality (issue 34, items 2-3).

The model is `make test-real`'s (Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama.cpp via xllamacpp, `RealLLM`,
2 threads, one slot; `RERANK_CONCURRENCY=1`). Both dev sets (`../shared/data/scifact-dev`, qrels `train`;
`../shared/data/nfcorpus-dev`, qrels `dev`) are ingested whole through the product's path
(`ragchat.evaluation.runner.ensure_corpus`, as bench/fusion_collect.py does) into a persistent embedded
database under bench/.data/real_llm_arms/ (reused on rerun).

Arms, all through `Searcher.search` with hybrid search and limit 10 (ARMS): `hybrid`; `rerank` (the LLM scores the
fused top 20, `RERANK_CANDIDATES_FACTOR=2`, the top 10 by score are kept; `RERANK_METHOD=json`); `graded` (the same
with `RERANK_METHOD=logprobs`: P("Yes") from the token probabilities, issue 42); `listwise` (`RERANK_METHOD=listwise`,
one call over the fused top `--listwise-size`, the rest in fused order); `keywords` and `hyde` (query expansion,
server/ragchat/retrieval/expansion.py); `keywords+rerank`, `hyde+rerank` (the hyde arms only with `--arms`:
DEFAULT_ARMS says why). 60 queries with qrels per set, seeded, the same for every arm. Per arm: nDCG@10 and
recall@10 over the corpus ids (chunks deduplicated, first kept), seconds per query (median, p95), and the outcome
of every LLM call (valid, invalid, error, timeout).

Caching across arms: identical LLM calls (same model, messages and schema, temperature 0) are answered once
and replayed (`ReplayLLM`), so `keywords+rerank` does not pay again for the passages `rerank` scored, nor for
the expansion `keywords` asked. Each arm's `seconds` is reported as if uncached: the measured wall time plus
the measured duration of every replayed call (calls run one at a time, so they add up).

Answer quality (bench/real_answers.py) runs first: 20 questions per set and 10 unanswerable ones.
`--part answers --documents-only` asks them again with "answer only from documents" on (`--questions 0`: only
the unanswerable ones), into their own checkpoint file.

Checkpoints: one JSON line per (set, query, arm) in bench/results/real_llm_arms.jsonl and per question in
bench/results/real_answers.jsonl, appended as each completes; a rerun skips what is there. Before each query
or question, while /tmp/quiet.lock or /tmp/real_llm.pause exists, it waits (polls every 10 s, logs it). Each
line records `os.getloadavg()`.

    PYTHONPATH=server .venv/bin/python bench/real_llm_arms.py [--queries 60] [--questions 20] [--sets scifact,nfcorpus]
        [--arms hybrid,rerank,keywords,keywords+rerank,hyde,hyde+rerank] [--part all|answers|arms] [--seed 34]
    PYTHONPATH=server .venv/bin/python bench/real_llm_arms.py --report   # tables from what is done so far
    PYTHONPATH=server .venv/bin/python bench/real_llm_arms.py --reverify # the answers' citation checks redone
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import json
import logging
import os
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import AsyncGenerator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import real_answers
from bench.common import RESULTS, ROOT, bench_settings, write_json
from ragchat.core.options import options_of
from ragchat.core.principal import Principal
from ragchat.evaluation.beir import BeirDataset, iter_corpus, load_beir
from ragchat.evaluation.metrics import dedup_keep_first, ndcg_at_k, percentiles, recall_at_k
from ragchat.evaluation.runner import ensure_corpus, eval_owner, source_document
from ragchat.providers.llm import build_llm
from ragchat.providers.llm.base import (
    ChatChunk,
    LLMProvider,
    LLMStatus,
    LogprobsReply,
    Message,
    ModelInfo,
    SupportsLogprobs,
)
from ragchat.providers.llm.replies import parse_reply
from ragchat.retrieval.expansion import ExpansionTerms, HydePassage, LLMExpander
from ragchat.retrieval.rerank import LLMReranker, RerankScore
from ragchat.retrieval.rerank_graded import LABELS, LISTWISE_SYSTEM, label_probabilities, yes_probability
from ragchat.runtime import Overrides, open_runtime
from tests.real.model import MODEL_ALIAS, RealLLM, ensure_model, ensure_runtime, free_port

log = logging.getLogger("bench.real_llm_arms")
K = 10
SETS = {"scifact": ("scifact-dev", "train"), "nfcorpus": ("nfcorpus-dev", "dev")}
ARMS = ["hybrid", "rerank", "keywords", "keywords+rerank", "hyde", "hyde+rerank", "graded", "listwise"]
#: the RERANK_METHOD of each arm that reranks
ARM_METHOD = {"rerank": "json", "keywords+rerank": "json", "hyde+rerank": "json", "graded": "logprobs"}
ARM_METHOD["listwise"] = "listwise"
# hyde is not in the default run: one expansion arm is what the four-arm table needs, and on 2 cores the CPU goes
# to the 60 queries per set. Its reply is bounded in tokens now (it once wrote for 120 s); --arms adds it back
DEFAULT_ARMS = ARMS[:4]
DATA_DIR = ROOT / "bench" / ".data" / "real_llm_arms"
ARMS_LOG = RESULTS / "real_llm_arms.jsonl"
ANSWERS_LOG = RESULTS / "real_answers.jsonl"
DOCS_ONLY_LOG = RESULTS / "real_answers_documents_only.jsonl"  # the same questions, "answer only from documents"
LOCKS = (Path("/tmp/quiet.lock"), Path("/tmp/real_llm.pause"))


# ---- checkpoints and the pause ------------------------------------------------------------------------------
def read_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of `path` (gzip-compressed when it ends in .gz); none when it does not exist."""
    if not path.exists():
        return []
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    rows = []
    for line in data.decode("utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:  # a line cut by a kill: ignored (and redone)
            continue
    return rows


def append_line(path: Path, row: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {**row, "loadavg": [round(x, 2) for x in os.getloadavg()], "at": datetime.now(UTC).isoformat()}
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")


async def wait_quiet() -> None:
    """While the lead's quiet or pause file exists: wait, polling every 10 s (logged once a minute)."""
    waited = 0
    while any(lock.exists() for lock in LOCKS):
        if waited % 60 == 0:
            print(f"paused: {[str(p) for p in LOCKS if p.exists()]} exists ({waited} s so far)", flush=True)
        await asyncio.sleep(10)
        waited += 10


# ---- the LLM calls: replayed when identical, every outcome recorded ------------------------------------------
def _outcome(schema: dict[str, Any], content: str) -> tuple[str, str]:
    """(what the call was for, valid/invalid) from the schema it was asked with and its reply."""
    props = schema.get("properties", {})
    model = RerankScore if "score" in props else ExpansionTerms if "terms" in props else HydePassage
    kind = "rerank" if model is RerankScore else "expansion"
    return kind, "valid" if parse_reply(content, model) is not None else "invalid"


class ReplayLLM:
    """Delegates to `inner`; replays identical `complete_json` calls and records each call's outcome/duration."""

    def __init__(self, inner: LLMProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[dict[str, Any]] = []
        self._done: dict[str, dict[str, Any]] = {}

    def stream_chat(
        self,
        *,
        model: str,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        require_tool: bool = False,
        temperature: float | None = None,
    ) -> AsyncGenerator[ChatChunk, None]:
        return self.inner.stream_chat(
            model=model, messages=messages, tools=tools, require_tool=require_tool, temperature=temperature
        )

    async def status(self, model: str) -> LLMStatus:
        return await self.inner.status(model)

    async def context_window(self, model: str) -> int | None:
        return await self.inner.context_window(model)

    async def list_models(self) -> list[ModelInfo]:
        return await self.inner.list_models()

    async def complete_json(
        self,
        *,
        model: str,
        messages: list[Message],
        schema: dict[str, Any],
        timeout_s: float,
        max_tokens: int | None = None,
    ) -> str:
        key = hashlib.sha256(json.dumps([model, messages, schema, max_tokens], sort_keys=True).encode()).hexdigest()
        if (seen := self._done.get(key)) is not None:
            self.calls.append({**seen, "replayed": True})
            return seen["content"]
        kind = "rerank" if "score" in schema.get("properties", {}) else "expansion"
        record: dict[str, Any] = {"kind": kind, "outcome": "error", "replayed": False}
        self.calls.append(record)
        start = time.perf_counter()
        try:
            content = await self.inner.complete_json(
                model=model, messages=messages, schema=schema, timeout_s=timeout_s, max_tokens=max_tokens
            )
        except asyncio.CancelledError:  # the caller's timeout (or the rerank deadline) cancelled it
            record["outcome"] = "timeout"
            raise
        except TimeoutError:
            record["outcome"] = "timeout"
            raise
        finally:
            record["seconds"] = round(time.perf_counter() - start, 3)
        record["kind"], record["outcome"] = _outcome(schema, content)
        self._done[key] = {**record, "content": content}
        return content

    async def complete_logprobs(
        self,
        *,
        model: str,
        messages: list[Message],
        timeout_s: float,
        top_logprobs: int = 20,
        max_tokens: int = 1,
    ) -> LogprobsReply:
        """Replayed like `complete_json`; outcome valid (a Yes/No or label probability), invalid (neither among the
        top tokens) or no-logprobs."""
        key = hashlib.sha256(json.dumps(["lp", model, messages, top_logprobs, max_tokens]).encode()).hexdigest()
        if (seen := self._done.get(key)) is not None:
            self.calls.append({**seen, "replayed": True})
            return seen["reply"]
        record: dict[str, Any] = {"kind": "rerank", "outcome": "error", "replayed": False}
        self.calls.append(record)
        start = time.perf_counter()
        assert isinstance(self.inner, SupportsLogprobs)
        try:
            reply = await self.inner.complete_logprobs(
                model=model, messages=messages, timeout_s=timeout_s, top_logprobs=top_logprobs, max_tokens=max_tokens
            )
        except (asyncio.CancelledError, TimeoutError):
            record["outcome"] = "timeout"
            raise
        finally:
            record["seconds"] = round(time.perf_counter() - start, 3)
        if reply.tokens is None:
            record["outcome"] = "no-logprobs"
        else:
            # the product's own readings: the labels' shares for a listwise call, P(yes) for a pointwise one
            listwise = any(m.get("content") == LISTWISE_SYSTEM for m in messages)
            read = label_probabilities(reply.tokens, LABELS) if listwise else yes_probability(reply.tokens)
            ok = read is not None
            record["outcome"] = "valid" if ok else "invalid"
        self._done[key] = {**record, "reply": reply}
        return reply

    async def close(self) -> None:  # the real provider is closed by its owner
        return None


# ---- the arms ----------------------------------------------------------------------------------------------
def sample(dataset: BeirDataset, name: str, n: int, seed: int) -> list[str]:
    return random.Random(f"{seed}:{name}").sample(sorted(dataset.queries), min(n, len(dataset.queries)))


async def one_arm(
    rt: Any, llm: ReplayLLM, principal: Principal, text: str, rels: dict[str, int], arm: str, rerankers: dict
) -> dict:
    expansion = "keywords" if arm.startswith("keywords") else "hyde" if arm.startswith("hyde") else "off"
    method = ARM_METHOD.get(arm)
    if method is not None:
        rt.searcher.reranker = rerankers[method]
    options = options_of(rt.settings.retrieval, mode="hybrid", limit=K, rerank=method is not None, expansion=expansion)
    mark = len(llm.calls)
    start = time.perf_counter()
    result = await rt.searcher.search(text, principal=principal, options=options)
    wall = time.perf_counter() - start
    calls = llm.calls[mark:]
    replayed = sum(c["seconds"] for c in calls if c["replayed"])
    ranked = dedup_keep_first(source_document(h) for h in result.chunks)
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    for c in calls:
        outcomes[c["kind"]][c["outcome"]] += 1
    return {
        "ndcg10": round(ndcg_at_k(ranked, rels, K), 6),
        "recall10": round(recall_at_k(ranked, rels, K), 6),
        "seconds": round(wall + replayed, 3),
        "wall_s": round(wall, 3),
        "replayed_s": round(replayed, 3),
        "calls": len(calls),
        "replayed_calls": sum(1 for c in calls if c["replayed"]),
        "outcomes": {k: dict(v) for k, v in outcomes.items()},
        "rerank": result.rerank.model_dump(exclude={"warning"}),
        "expansion": result.expansion.model_dump(exclude={"warning"}),
        "timings": result.timings.model_dump(),
        "ranked": ranked,
        "rerank_scores": [h.trace.rerank_score for h in result.chunks if h.trace.rerank_score is not None],
    }


async def run_arms(
    rt: Any, llm: ReplayLLM, sets: dict[str, BeirDataset], args: argparse.Namespace, rerankers: dict
) -> None:
    done = {(r["set"], r["qid"], r["arm"]) for r in read_lines(ARMS_LOG)}
    plan = {name: sample(ds, name, args.queries, args.seed) for name, ds in sets.items()}
    for i in range(args.queries):  # interleaved: scifact q1, nfcorpus q1, scifact q2, ...
        for name, ds in sets.items():
            if i >= len(plan[name]):
                continue
            qid = plan[name][i]
            todo = [a for a in args.arms if (name, qid, a) not in done]
            if not todo:
                continue
            await wait_quiet()
            principal = Principal(eval_owner(ds), "eval", False)
            for arm in todo:
                row = await one_arm(rt, llm, principal, ds.queries[qid], ds.qrels[qid], arm, rerankers)
                append_line(ARMS_LOG, {"set": name, "qid": qid, "index": i, "arm": arm, **row})
                print(
                    f"[{name} {i + 1}/{args.queries} {qid}] {arm:16} nDCG@10 {row['ndcg10']:.3f} "
                    f"R@10 {row['recall10']:.3f} {row['seconds']:.1f} s ({row['replayed_s']:.1f} replayed) "
                    f"rerank {row['rerank']['status']} expansion {row['expansion']['status']}",
                    flush=True,
                )


# ---- answer quality ----------------------------------------------------------------------------------------
async def run_answers(rt: Any, sets: dict[str, BeirDataset], args: argparse.Namespace) -> None:
    log_path = DOCS_ONLY_LOG if args.documents_only else ANSWERS_LOG
    done = {(r["set"], r["qid"]) for r in read_lines(log_path)}
    plan: list[tuple[str, str, str]] = []  # (set, qid, question)
    per_set = {n: real_answers.questions_for(n, ds.queries, args.questions, args.seed) for n, ds in sets.items()}
    for i in range(args.questions):
        plan += [(n, *per_set[n][i]) for n in sets if i < len(per_set[n])]
    names = list(sets)
    unanswerable = real_answers.UNANSWERABLE[: args.unanswerable]
    plan += [(names[i % len(names)], f"none-{i + 1}", q) for i, q in enumerate(unanswerable)]
    texts: dict[str, dict[str, str]] = {}
    sources: dict[str, dict[str, str]] = {}
    for n, qid, question in plan:
        if (n, qid) in done:
            continue
        ds = sets[n]
        if n not in texts:
            texts[n] = corpus_texts(ds)
            sources[n] = await source_ids(rt, eval_owner(ds))
        await wait_quiet()
        principal = Principal(eval_owner(ds), "eval", False)
        turn = await real_answers.chat_turn(rt, principal, question, documents_only=args.documents_only)
        unanswerable = qid.startswith("none-")
        rels = None if unanswerable else ds.qrels[qid]
        checks = real_answers.judge(turn, question, rels, sources[n], texts[n])
        row = {"set": n, "qid": qid, "kind": "unanswerable" if unanswerable else "answerable", "question": question}
        row |= {k: turn[k] for k in ("answer", "searches", "finish_reason", "error", "seconds")}
        row |= {"passages": len(turn["passages"]), "checks": checks, "verifier": turn["verifier"]}
        append_line(log_path, row | {"documents_only": args.documents_only})
        flag = checks.get("has_fact", checks.get("says_not_found"))
        print(f"[answer {n} {qid}] {turn['seconds']:.0f} s ok={flag} | {turn['answer'][:120]!r}", flush=True)


def corpus_texts(ds: BeirDataset) -> dict[str, str]:
    """corpus id → title and text, what the answers are judged against."""
    return {i: f"{t}\n{x}" for i, t, x in iter_corpus(ds.corpus_path)}


async def source_ids(rt: Any, owner: Any) -> dict[str, str]:
    """document id → corpus id, for the passages a chat turn shows (they carry no metadata)."""
    async with rt.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id::text AS id, metadata->>'source_id' AS source FROM documents WHERE owner_id = %s", (owner,)
        )
        return {r["id"]: r["source"] for r in await cur.fetchall()}


async def reverify_answers(sets: dict[str, BeirDataset]) -> None:
    """Every answer line's citation checks redone by today's verifier (`real_answers.reverify`), rewritten in
    place; run it while nothing appends answers. Lines whose message is gone are kept as they were."""
    rows = read_lines(ANSWERS_LOG)
    out, changed = [], 0
    async with open_runtime(bench_settings(DATA_DIR / "data", log_level="warning")) as rt:
        context = {n: (await source_ids(rt, eval_owner(ds)), corpus_texts(ds)) for n, ds in sets.items()}
        for row in rows:
            ds, (source_of, texts) = sets[row["set"]], context[row["set"]]
            rels = None if row["kind"] == "unanswerable" else ds.qrels[row["qid"]]
            new = await real_answers.reverify(rt, row, rels, source_of, texts) or row
            changed += new["checks"] != row["checks"]
            out.append(new)
    if len(read_lines(ANSWERS_LOG)) != len(rows):
        raise SystemExit("answers were appended while re-verifying: run --reverify again when they are done")
    tmp = ANSWERS_LOG.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out), encoding="utf-8")
    tmp.replace(ANSWERS_LOG)
    print(f"re-verified {len(rows)} answers: {changed} changed their checks", flush=True)


# ---- run ---------------------------------------------------------------------------------------------------
async def run(args: argparse.Namespace) -> None:
    """Ingest first (the model server not yet running, so it holds no memory and blocks nobody), then start
    the model on a port chosen up front, once no other real-model server runs."""
    data = ROOT.parent / "shared" / "data"
    sets = {n: load_beir(data / folder, split) for n, (folder, split) in SETS.items() if n in args.sets}
    ensure_runtime()
    model_path = ensure_model()
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    real = RealLLM(model_path, n_ctx=4096, threads=2, log_path=DATA_DIR / "llm.log", port=free_port())
    settings = bench_settings(
        DATA_DIR / "data",
        llm_provider="openai",
        openai_base_url=real.base_url,
        chat_model=MODEL_ALIAS,
        llm_timeout_s=300.0,
        rerank_timeout_s=args.call_timeout,
        rerank_deadline_s=args.call_timeout * 25,
        rerank_concurrency=1,
        rerank_candidates_factor=2,
        rerank_listwise_size=args.listwise_size,
        rerank_early_stop=not args.no_early_stop,
        expansion_timeout_s=args.call_timeout,
        log_level="warning",
    )
    llm = build_llm(settings.llm)
    replay = ReplayLLM(llm)
    try:
        async with open_runtime(settings, Overrides(llm=llm, rerank_llm=replay)) as rt:
            rerankers = {
                m: LLMReranker(
                    replay,
                    settings.retrieval.model_copy(update={"rerank_method": m}),
                    settings.llm.effective_rerank_model,
                    cache_size=0,
                )
                for m in ("json", "logprobs", "listwise")
            }
            rt.searcher.reranker = rerankers["json"]
            rt.searcher.expander = LLMExpander(
                replay, settings.retrieval, settings.llm.effective_rerank_model, cache_size=0
            )
            for name, ds in sets.items():
                start = time.perf_counter()
                n = await ensure_corpus(rt.accounts, rt.documents.ingestion, ds, eval_owner(ds))
                print(f"{name}: {n} documents ingested now, {time.perf_counter() - start:.0f} s", flush=True)
            await wait_model_free()
            real.start()
            print(f"model {real.model} up in {real.startup_seconds:.1f} s", flush=True)
            if args.part in ("all", "answers"):
                await run_answers(rt, sets, args)
            if args.part in ("all", "arms"):
                await run_arms(rt, replay, sets, args, rerankers)
    finally:
        real.stop()
        await llm.close()


async def wait_model_free() -> None:
    """While another process serves the real model (`tests.real.model serve`): wait (one model server at a time)."""
    waited = 0
    while True:
        pgrep = ["pgrep", "-f", "tests.real.model serve"]
        found = (await asyncio.to_thread(subprocess.run, pgrep, capture_output=True, text=True)).stdout.split()
        if not found:
            return
        if waited % 60 == 0:
            print(f"another real-model server runs (pids {found}): waiting ({waited} s so far)", flush=True)
        await asyncio.sleep(10)
        waited += 10


# ---- report ------------------------------------------------------------------------------------------------
def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = [r["seconds"] for r in rows]
    pct = percentiles(seconds, (50, 95)) if seconds else {}
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        for kind, counts in r["outcomes"].items():
            outcomes[kind].update(counts)
    return {
        "n": len(rows),
        "ndcg10": round(sum(r["ndcg10"] for r in rows) / len(rows), 4) if rows else None,
        "recall10": round(sum(r["recall10"] for r in rows) / len(rows), 4) if rows else None,
        "seconds_median": round(pct.get("p50", 0.0), 2) if rows else None,
        "seconds_p95": round(pct.get("p95", 0.0), 2) if rows else None,
        "calls": {k: dict(v) for k, v in outcomes.items()},
        "rerank_status": dict(Counter(r["rerank"]["status"] for r in rows)),
        "expansion_status": dict(Counter(r["expansion"]["status"] for r in rows)),
    }


def report(only: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    """The table over every arm with rows, or over `only` (pairing only the queries those arms finished)."""
    rows = read_lines(ARMS_LOG)
    by: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        by[(r["set"], r["qid"])][r["arm"]] = r
    arms = [a for a in ARMS if any(r["arm"] == a for r in rows) and (only is None or a in only)]
    out: dict[str, Any] = {"generated_at": datetime.now(UTC).isoformat(timespec="seconds"), "sets": {}}
    lines = [f"# Real LLM arms ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)", ""]
    loads = [r["loadavg"][0] for r in rows]
    if loads:
        lines += [
            f"Load average (1 min) per query line: median {sorted(loads)[len(loads) // 2]:.2f}, max {max(loads):.2f}."
        ]
    lines += [
        "Paired: only queries every listed arm has finished. Seconds as if uncached (wall + replayed calls).",
        "",
        "| set | arm | done | paired n | nDCG@10 | Δ vs hybrid ± s.e. | W/T/L vs hybrid | recall@10 | s/query median |"
        " p95 | LLM calls valid/invalid/error/timeout |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in SETS:
        queries = [q for (s, q) in by if s == name]
        complete = [q for q in queries if all(a in by[(name, q)] for a in arms)]
        base = _stats([by[(name, q)]["hybrid"] for q in complete]) if "hybrid" in arms else None
        out["sets"][name] = {"paired_queries": len(complete), "arms": {}}
        for arm in arms:
            every = [by[(name, q)][arm] for q in queries if arm in by[(name, q)]]
            paired = _stats([by[(name, q)][arm] for q in complete])
            paired["done"] = len(every)
            out["sets"][name]["arms"][arm] = paired
            if not every:
                continue
            delta = "-" if not base or paired["ndcg10"] is None else f"{paired['ndcg10'] - base['ndcg10']:+.4f}"
            diffs = [by[(name, q)][arm]["ndcg10"] - by[(name, q)]["hybrid"]["ndcg10"] for q in complete] if base else []
            if len(diffs) > 1 and delta != "-":  # the paired differences' standard error
                mean = sum(diffs) / len(diffs)
                se = (sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1) / len(diffs)) ** 0.5
                delta, paired["delta_se"] = f"{delta} ± {se:.4f}", round(se, 4)
            wtl = f"{sum(d > 1e-9 for d in diffs)}/{sum(abs(d) <= 1e-9 for d in diffs)}/{sum(d < -1e-9 for d in diffs)}"
            paired["wins_ties_losses"] = wtl
            calls: Counter[str] = Counter()
            for counts in paired["calls"].values():
                calls.update(counts)
            cells = "/".join(str(calls.get(k, 0)) for k in ("valid", "invalid", "error", "timeout"))
            lines.append(
                f"| {name} | {arm} | {len(every)} | {paired['n']} | {paired['ndcg10']} | {delta} | {wtl} | "
                f"{paired['recall10']} | {paired['seconds_median']} | {paired['seconds_p95']} | {cells} |"
            )
    answer_lines, out["answers"] = real_answers.report(read_lines(ANSWERS_LOG))
    lines += ["", "## Answer quality (one chat turn each)", "", *answer_lines]
    if only := read_lines(DOCS_ONLY_LOG):
        answer_lines, out["answers_documents_only"] = real_answers.report(only)
        lines += ["", '## The same, with "answer only from documents" on', "", *answer_lines]
    return "\n".join(lines) + "\n", out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--report", action="store_true", help="print the tables from the checkpoints and exit")
    p.add_argument("--reverify", action="store_true", help="redo the answers' citation checks, then report")
    p.add_argument("--part", choices=["all", "answers", "arms"], default="all")
    p.add_argument("--sets", type=lambda s: s.split(","), default=list(SETS))
    p.add_argument("--arms", type=lambda s: s.split(","), default=DEFAULT_ARMS, help=f"of {','.join(ARMS)}")
    p.add_argument("--queries", type=int, default=60, help="queries per set for the arms")
    p.add_argument("--questions", type=int, default=20, help="chat questions per set")
    p.add_argument("--unanswerable", type=int, default=len(real_answers.UNANSWERABLE), help="of the 10")
    p.add_argument("--documents-only", action="store_true", help='the answers with "answer only from documents"')
    p.add_argument("--seed", type=int, default=34)
    p.add_argument("--results", type=Path, default=RESULTS, help="where the checkpoints and tables go")
    p.add_argument("--call-timeout", type=float, default=120.0, help="RERANK_TIMEOUT_S and EXPANSION_TIMEOUT_S")
    p.add_argument("--listwise-size", type=int, default=10, help="RERANK_LISTWISE_SIZE for the listwise arm")
    p.add_argument("--no-early-stop", action="store_true", help="RERANK_EARLY_STOP=false")
    p.add_argument(
        "--report-arms", type=lambda s: s.split(","), default=None, help="the report's arms (default: all with rows)"
    )
    args = p.parse_args(argv)
    if unknown := [a for a in args.arms if a not in ARMS] + [s for s in args.sets if s not in SETS]:
        p.error(f"unknown arms or sets: {unknown}")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    global ARMS_LOG, ANSWERS_LOG, DOCS_ONLY_LOG
    ARMS_LOG, ANSWERS_LOG = args.results / ARMS_LOG.name, args.results / ANSWERS_LOG.name
    DOCS_ONLY_LOG = args.results / DOCS_ONLY_LOG.name
    if args.reverify:
        data = ROOT.parent / "shared" / "data"
        asyncio.run(reverify_answers({n: load_beir(data / f, split) for n, (f, split) in SETS.items()}))
    elif not args.report:
        asyncio.run(run(args))
    text, out = report(args.report_arms)
    print(text)
    print(json.dumps(out, indent=1))
    (args.results / "real_llm_arms.md").write_text(text, encoding="utf-8")
    write_json(args.results / "real_llm_arms.json", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
