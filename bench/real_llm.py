"""The real model end to end: LLM rerank gain on SciFact, and answer quality of the chat on a small hand-written corpus.

The model is the one `tests/real/model.py` provides (Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama.cpp via xllamacpp,
installed and cached on first use), served by `RealLLM` in a child process as an OpenAI-compatible server (one
slot). Everything else is the app as the server builds it: `ragchat.runtime.open_runtime` with its own embedded
Postgres in a temporary data directory, the real embedding model, `Searcher`, `DocumentService`, `ChatService`.
The bench only talks to `Searcher.search` and `ChatService.events` (the SSE event protocol), never to chat-loop
internals, so improvements to the loop show up here as they land.

1. Rerank gain. A seeded sample of N SciFact queries that have qrels (`qrels/train.tsv`); the corpus is bounded:
   the judged-relevant abstracts of those queries plus a seeded sample of other abstracts (`--others`, 1,000 by
   default), one document each, ingested through the real pipeline. Per query: the top 10 hybrid chunks
   (`rerank=False`), then the same search with `rerank=True`, `RERANK_CANDIDATES_FACTOR=1` and limit 10, i.e. the
   reranker reorders exactly those 10 chunks (checked per query), so the nDCG@10 difference is the reranker's
   alone. Chunks are mapped to their SciFact ids and deduplicated (first position kept) before scoring. Also: the
   best possible reordering of the same candidates ("oracle"), seconds per query spent reranking
   (`timings.rerank_ms`), and every scoring call's outcome as seen by a counting wrapper around the provider the
   reranker uses (valid score, invalid reply, error, timeout: the last three score 0). `RERANK_CONCURRENCY=1`
   (llama.cpp serves one slot).
2. Answer quality. 20 questions over 7 short hand-written documents (below), one chat turn each, new thread
   each, through `ChatService.events`. Per turn: whether the answer contains the expected fact, whether the
   search tool was called, whether the top returned passage and the first cited passage come from the expected
   document, and citation support (rule in CITATION_RULE).

    .venv/bin/python bench/real_llm.py [--queries 10] [--others 1000] [--questions 20] [--seed 13]
                                       [--rerank-timeout 60] [--chat-search-limit 6] [--temperature T]
                                       [--skip-rerank] [--skip-chat] [--json bench/results/real_llm.json]

Writes bench/results/real_llm.json and bench/results/real_llm.txt (the printed tables).

Run time on the 2-core box with a quiet machine: ~55 s per rerank query (10 scoring calls of ~5 s: the passage's
~250 prompt tokens at ~40 tokens/s), 15-30 s per chat answer, ~2 min of ingestion: ~20 min with the defaults.
Under load (load average 3) a rerank query took 80-160 s. `--queries 40` (the original target) needs ~45 min quiet.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import random
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncGenerator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DATA, RESULTS, bench_settings, cpu_context, table, write_json
from ragchat.chat.service import ChatRequest
from ragchat.core.options import options_of
from ragchat.core.principal import Principal
from ragchat.evaluation.beir import load_beir
from ragchat.evaluation.metrics import dedup_keep_first, mrr_at_k, ndcg_at_k
from ragchat.providers.llm import build_llm
from ragchat.providers.llm.base import LLMProvider
from ragchat.retrieval.rerank import parse_score
from ragchat.runtime import Overrides, open_runtime
from ragchat.settings.layout import WHERE
from tests.real.model import RealLLM, ensure_model, ensure_runtime

log = logging.getLogger("bench.real_llm")
K = 10
_NS = uuid.UUID("3f8e2c51-7a0b-4c1e-9a7e-2b6d4f0c9e11")

# ---------------------------------------------------------------------------------------------------------------------
# The hand-written corpus and questions
# ---------------------------------------------------------------------------------------------------------------------

CORPUS: dict[str, str] = {
    "dishwasher_manual.md": """\
# AquaClean X200 Dishwasher — User Manual

## Capacity and programs
The AquaClean X200 holds 14 place settings. The Eco program takes 3 hours 40 minutes and uses 9.5 litres of water.
The Quick program washes lightly soiled dishes in 30 minutes at 45 °C.

## Warranty
The AquaClean X200 comes with a warranty of 24 months from the date of purchase, covering parts and labour.
The inverter motor is covered for 10 years. The warranty does not cover damage from limescale or misuse.

## Error codes
- E15: water in the base tray; switch off the water supply and call service.
- E24: the drain is blocked; clean the filter and check that the drain hose is not kinked.
- E09: the heating element failed; call service.

## Maintenance
Refill the rinse aid when the indicator lights up. Clean the filter once a month.
""",
    "hr_handbook.md": """\
# Employee Handbook — Orbit Analytics

## Holidays
Every full-time employee gets 27 days of paid holiday per calendar year, in addition to public holidays.
Up to 5 unused days may be carried over into the next year; carried-over days must be taken by 31 March.

## Probation and notice
New employees serve a probation period of 6 months. During probation the notice period is 2 weeks;
afterwards it is 3 months.

## Parental leave
Parents receive 16 weeks of fully paid parental leave, which can be taken within the first two years.

## Sick leave
Employees who are ill must tell their manager before 10 am and send a doctor's note from the third day.
""",
    "focaccia_recipe.md": """\
# Rosemary Focaccia

Ingredients: 500 g bread flour, 400 ml lukewarm water, 10 g salt, 4 g dried yeast, 50 ml olive oil,
two sprigs of fresh rosemary and flaky sea salt.

1. Mix the flour, water, yeast and salt into a wet dough and rest it for 30 minutes.
2. Fold the dough four times, then cover it and let it proof in the fridge for 18 hours.
3. Spread the dough in an oiled tray, dimple it with your fingers, add rosemary and olive oil.
4. Bake at 220 °C for 25 minutes until golden. Let it cool for 10 minutes before cutting.
""",
    "travel_policy.md": """\
# Business Travel Policy

## Per diem
Employees receive a daily per-diem allowance of €42 for domestic business trips and €65 for international
trips. The per diem covers meals and small expenses; receipts are not required for it.

## Accommodation and transport
Hotel costs are reimbursed up to €150 per night. Flights shorter than 6 hours are booked in economy class.
Using a private car is reimbursed at €0.30 per kilometre.

## Expense claims
Expense claims must be submitted within 30 days of the end of the trip, with all receipts attached.
Trips abroad need the approval of a department head.
""",
    "nimbus_t7_spec.md": """\
# Nimbus T7 Tablet — Specification Sheet

| Item | Value |
| --- | --- |
| Display | 10.9-inch IPS, 2360 x 1640 pixels |
| Processor | Octa-core 2.4 GHz |
| Memory | 8 GB RAM, 256 GB storage |
| Battery | 7,500 mAh, up to 12 hours of video |
| Charging | 33 W USB-C fast charging |
| Weight | 482 g |
| Protection | IP54 dust and splash resistance |

The Nimbus T7 ships with a stylus and a USB-C cable; the charger is sold separately.
""",
    "it_security_policy.md": """\
# IT Security Policy

Passwords must be at least 14 characters long and must not be reused across services.
Multi-factor authentication is mandatory for email, VPN and the code repositories.
Laptops lock the screen automatically after 5 minutes without activity.
Security incidents, including lost devices and suspected phishing, must be reported to security@orbit.example
within 24 hours. Company data may only be stored on encrypted devices.
""",
    "office_guide.md": """\
# Office Guide — Orbit House

The building opens at 7:30 and closes at 19:00 on weekdays; it is closed on weekends.
Staff parking is in the underground garage on level -2; visitors park on level -1.
The guest Wi-Fi network is called Guest-Orbit; the password is printed at the reception desk.
The canteen serves lunch from 11:45 to 14:00. Meeting rooms are booked through the intranet calendar.
""",
}

# (question, accepted spellings of the expected fact, expected source filename)
QUESTIONS: list[tuple[str, list[str], str]] = [
    ("How long is the warranty on the AquaClean X200 dishwasher?", ["24 months", "2 years"], "dishwasher_manual.md"),
    ("What does error code E24 mean on the X200 dishwasher?", ["drain"], "dishwasher_manual.md"),
    ("How many place settings does the X200 dishwasher hold?", ["14"], "dishwasher_manual.md"),
    ("How many days of paid holiday do employees get per year?", ["27"], "hr_handbook.md"),
    ("By what date must carried-over holiday days be taken?", ["31 march", "march 31"], "hr_handbook.md"),
    ("How long is the probation period for new employees?", ["6 months"], "hr_handbook.md"),
    ("How long is the paid parental leave?", ["16 weeks"], "hr_handbook.md"),
    ("At what temperature should the focaccia be baked?", ["220"], "focaccia_recipe.md"),
    ("How much flour goes into the rosemary focaccia?", ["500 g", "500 grams"], "focaccia_recipe.md"),
    ("How long does the focaccia dough proof in the fridge?", ["18 hours"], "focaccia_recipe.md"),
    ("What is the per-diem allowance for domestic business trips?", ["42"], "travel_policy.md"),
    ("What is the per-diem allowance for international trips?", ["65"], "travel_policy.md"),
    ("Up to how much per night are hotel costs reimbursed?", ["150"], "travel_policy.md"),
    ("Within how many days must expense claims be submitted?", ["30 days"], "travel_policy.md"),
    ("What is the battery capacity of the Nimbus T7 tablet?", ["7500 mah", "7500"], "nimbus_t7_spec.md"),
    ("How much does the Nimbus T7 tablet weigh?", ["482 g", "482 grams"], "nimbus_t7_spec.md"),
    ("What is the minimum password length?", ["14 characters"], "it_security_policy.md"),
    ("Within how many hours must security incidents be reported?", ["24 hours"], "it_security_policy.md"),
    ("What time does the office building open in the morning?", ["7:30", "7.30"], "office_guide.md"),
    ("What is the guest Wi-Fi network called?", ["guest orbit"], "office_guide.md"),
]

# ---------------------------------------------------------------------------------------------------------------------
# Text normalisation, fact matching and the citation-support rule
# ---------------------------------------------------------------------------------------------------------------------

FACT_RULE = (
    "the answer and each accepted spelling are normalised (lower case; thousands separators and trailing .0 "
    "removed; number words zero..ninety-nine turned into digits; a space put between a number and a unit; every "
    "character other than a-z, 0-9 and '.'/':' inside numbers turned into a space); the fact is found when one "
    "spelling occurs as a whole-word sequence"
)
CITATION_RULE = (
    "the answer is split into sentences (at . ! ? followed by white space, and at line breaks; a piece holding "
    "only citation markers belongs to the sentence before it); for every [n] in a sentence, the pair (sentence, n) "
    "is SUPPORTED when passage n exists (passages numbered from 1 in tool_result order, across searches), every "
    "number in the sentence occurs in the passage, and either the expected fact occurs in both the sentence and "
    "the passage, or the passage contains at least min(3, ceil(half)) of the sentence's content words (words of "
    "3+ letters that are not stop words, and numbers)"
)

_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
_UNITS += "seventeen eighteen nineteen"
UNITS = {w: i for i, w in enumerate(_UNITS.split())}
TENS = {w: 10 * i for i, w in enumerate("- - twenty thirty forty fifty sixty seventy eighty ninety".split()) if i >= 2}
_NUMBER_WORDS = re.compile(
    r"\b(?:(" + "|".join(TENS) + r")(?:[\s-]+(" + "|".join(list(UNITS)[1:10]) + r"))?|(" + "|".join(UNITS) + r"))\b"
)
_CITE = re.compile(r"\[(\d{1,3})\]")
STOP = set(
    """the and for are was were that this with from have has had not but you your our their its into onto than then
    them they there these those what when where which while who whom why how can could should would will shall may
    might must does did doing done been being also only just very more most such each every any all some per out
    about above after again against before below between both during further here once other over same under until
    upon use used using within without yes one two answer according document documents passage passages says""".split()
)


def _number_words(match: re.Match[str]) -> str:
    tens, unit, single = match.groups()
    if single:
        return str(UNITS[single])
    return str(TENS[tens] + (UNITS[unit] if unit else 0))


def normalise(text: str) -> str:
    t = text.lower()
    t = re.sub(r"[\u2010-\u2015\u2212]", "-", t)
    t = re.sub(r"(?<=\d)[,\u202f\u00a0'](?=\d{3}(?!\d))", "", t)  # 7,500 / 7 500 → 7500
    t = _NUMBER_WORDS.sub(_number_words, t)
    t = re.sub(r"(?<=\d)\.0+\b", "", t)  # 45.00 → 45
    t = re.sub(r"(?<=\d)(?=[a-z])", " ", t)  # 500g → 500 g
    t = re.sub(r"(?<=[a-z])(?=\d)", " ", t)  # e24 → e 24, x200 → x 200
    t = re.sub(r"(?<!\d)[.:]|[.:](?!\d)", " ", t)  # keep . and : only inside numbers (7:30, 9.5)
    t = re.sub(r"[^a-z0-9.:]+", " ", t)
    return " ".join(t.split())


def contains_fact(text: str, spellings: Sequence[str]) -> bool:
    padded = f" {normalise(_CITE.sub(' ', text))} "
    return any(f" {normalise(s)} " in padded for s in spellings)


def numbers_in(text: str) -> set[str]:
    return set(re.findall(r"\d+(?:[.:]\d+)?", normalise(text)))


def content_words(text: str) -> set[str]:
    words = normalise(text).split()
    return {w for w in words if (w[0].isdigit()) or (len(w) >= 3 and w.isalpha() and w not in STOP)}


def split_sentences(text: str) -> list[str]:
    pieces = [p.strip() for p in re.split(r"(?<=[.!?])\s+|\n+", text) if p.strip()]
    out: list[str] = []
    for piece in pieces:
        only_cites = not _CITE.sub("", piece).strip(" .,;:-*")
        if only_cites and out:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def citation_checks(answer: str, passages: Sequence[dict[str, Any]], fact: Sequence[str]) -> list[dict[str, Any]]:
    """One record per (sentence, [n]) pair: whether passage n exists and supports the sentence (CITATION_RULE)."""
    checks: list[dict[str, Any]] = []
    for sentence in split_sentences(answer):
        cited = list(dict.fromkeys(int(n) for n in _CITE.findall(sentence)))
        if not cited:
            continue
        bare = _CITE.sub(" ", sentence)
        words = content_words(bare)
        nums = numbers_in(bare)
        for n in cited:
            record: dict[str, Any] = {"sentence": sentence[:300], "n": n, "exists": 1 <= n <= len(passages)}
            if not record["exists"]:
                record.update(supported=False, reason="no such passage")
                checks.append(record)
                continue
            passage = passages[n - 1]
            ptext = f"{passage.get('title', '')}\n{passage.get('content', '')}"
            pnorm = f" {normalise(ptext)} "
            pwords = content_words(ptext)
            shared = words & pwords
            need = min(3, math.ceil(len(words) / 2)) if words else 1
            missing_nums = sorted(x for x in nums if f" {x} " not in pnorm)
            fact_shared = contains_fact(bare, fact) and contains_fact(ptext, fact)
            supported = not missing_nums and (fact_shared or len(shared) >= need)
            reason = (
                f"numbers not in passage: {missing_nums}"
                if missing_nums
                else (
                    "fact shared" if fact_shared else f"{len(shared)}/{len(words)} content words shared (need {need})"
                )
            )
            record.update(filename=passage.get("filename"), supported=supported, reason=reason)
            checks.append(record)
    return checks


# ---------------------------------------------------------------------------------------------------------------------
# A provider wrapper that records what every rerank scoring call did
# ---------------------------------------------------------------------------------------------------------------------


class CountingLLM:
    """Delegates to `inner`; records each `complete_json` call's outcome and duration (the reranker's calls)."""

    def __init__(self, inner: LLMProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[dict[str, Any]] = []

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    def stream_chat(self, **kwargs: Any) -> AsyncGenerator[Any, None]:
        return self.inner.stream_chat(**kwargs)

    async def complete_json(self, **kwargs: Any) -> str:
        start = time.perf_counter()
        record: dict[str, Any] = {"outcome": "error"}
        self.calls.append(record)
        try:
            content = await self.inner.complete_json(**kwargs)
        except asyncio.CancelledError:  # the reranker's per-call timeout (or deadline) cancelled the call
            record["outcome"] = "timeout"
            raise
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            raise
        finally:
            record["seconds"] = round(time.perf_counter() - start, 3)
        score = parse_score(content)
        record["outcome"] = "ok" if score is not None else "invalid"
        record["score"] = score
        if score is None:
            record["reply"] = (content or "")[:200]
        return content

    async def close(self) -> None:  # the real provider is closed by its owner
        return None


# ---------------------------------------------------------------------------------------------------------------------
# Setup
# ---------------------------------------------------------------------------------------------------------------------


async def add_user(rt: Any, owner: uuid.UUID, name: str) -> None:
    async with rt.pool.connection() as conn:
        await conn.execute("INSERT INTO users (id, name) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING", (owner, name))


def scifact_sample(n_queries: int, n_others: int, seed: int) -> tuple[dict[str, str], dict[str, dict[str, int]], bytes]:
    """(sampled queries, their qrels, the bounded corpus as BEIR jsonl bytes)."""
    dataset = load_beir(DATA, "train")
    rng = random.Random(seed)
    qids = sorted(dataset.queries, key=lambda q: (len(q), q))
    picked = rng.sample(qids, min(n_queries, len(qids)))
    queries = {q: dataset.queries[q] for q in picked}
    qrels = {q: dataset.qrels[q] for q in picked}
    records = {}
    with dataset.corpus_path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                obj = json.loads(line)
                records[str(obj["_id"])] = line.rstrip("\n")
    relevant = {d for rels in qrels.values() for d, r in rels.items() if r > 0 and d in records}
    others = sorted(set(records) - relevant, key=lambda d: (len(d), d))
    chosen = sorted(relevant) + sorted(rng.sample(others, min(n_others, len(others))), key=lambda d: (len(d), d))
    data = ("\n".join(records[d] for d in chosen) + "\n").encode()
    return queries, qrels, data


# ---------------------------------------------------------------------------------------------------------------------
# Part 1: rerank gain
# ---------------------------------------------------------------------------------------------------------------------


def source_ids(chunks: Sequence[Any]) -> list[str]:
    return dedup_keep_first(str(c.metadata.get("source_id", c.document_id)) for c in chunks)


def oracle_ndcg(docs: Sequence[str], rels: dict[str, int]) -> float:
    return ndcg_at_k(sorted(docs, key=lambda d: -rels.get(d, 0)), rels, K)


async def rerank_gain(rt: Any, counter: CountingLLM, principal: Principal, queries: dict[str, str], qrels: Any) -> dict:
    per_query: list[dict[str, Any]] = []
    for i, (qid, text) in enumerate(queries.items(), 1):
        rels = qrels[qid]
        base = await rt.searcher.search(
            text, principal=principal, options=options_of(rt.searcher.settings, limit=K, mode="hybrid", rerank=False)
        )
        first_call = len(counter.calls)
        start = time.perf_counter()
        rr = await rt.searcher.search(
            text, principal=principal, options=options_of(rt.searcher.settings, limit=K, mode="hybrid", rerank=True)
        )
        wall = time.perf_counter() - start
        calls = counter.calls[first_call:]
        base_docs, rr_docs = source_ids(base.chunks), source_ids(rr.chunks)
        row = {
            "qid": qid,
            "query": text,
            "relevant": sorted(d for d, r in rels.items() if r > 0),
            "same_candidates": sorted(c.id for c in base.chunks) == sorted(c.id for c in rr.chunks),
            "reranked": rr.reranked,
            "candidates": len(base.chunks),
            "ndcg_hybrid": ndcg_at_k(base_docs, rels, K),
            "ndcg_rerank": ndcg_at_k(rr_docs, rels, K),
            "ndcg_oracle": oracle_ndcg(base_docs, rels),
            "mrr_hybrid": mrr_at_k(base_docs, rels, K),
            "mrr_rerank": mrr_at_k(rr_docs, rels, K),
            "order_changed": [c.id for c in base.chunks] != [c.id for c in rr.chunks],
            "rerank_s": round(rr.timings.rerank_ms / 1000, 3),
            "search_wall_s": round(wall, 3),
            "scores": [c.trace.rerank_score for c in rr.chunks],
            "calls": Counter(c["outcome"] for c in calls),
            "hybrid_docs": base_docs,
            "rerank_docs": rr_docs,
        }
        per_query.append(row)
        print(
            f"  [{i}/{len(queries)}] q{qid}: nDCG@10 {row['ndcg_hybrid']:.3f} → {row['ndcg_rerank']:.3f} "
            f"(oracle {row['ndcg_oracle']:.3f}), rerank {row['rerank_s']:.1f} s, calls {dict(row['calls'])}",
            flush=True,
        )
    n = len(per_query)
    outcomes = Counter(c["outcome"] for c in counter.calls)
    call_s = [c["seconds"] for c in counter.calls if c["outcome"] == "ok"]
    all_scores = [s for r in per_query for s in r["scores"] if s is not None]
    summary = {
        "queries": n,
        "ndcg@10_hybrid": _mean(r["ndcg_hybrid"] for r in per_query),
        "ndcg@10_rerank": _mean(r["ndcg_rerank"] for r in per_query),
        "ndcg@10_oracle": _mean(r["ndcg_oracle"] for r in per_query),
        "mrr@10_hybrid": _mean(r["mrr_hybrid"] for r in per_query),
        "mrr@10_rerank": _mean(r["mrr_rerank"] for r in per_query),
        "queries_better": sum(r["ndcg_rerank"] > r["ndcg_hybrid"] + 1e-9 for r in per_query),
        "queries_worse": sum(r["ndcg_rerank"] < r["ndcg_hybrid"] - 1e-9 for r in per_query),
        "queries_order_changed": sum(r["order_changed"] for r in per_query),
        "queries_same_candidates": sum(r["same_candidates"] for r in per_query),
        "queries_with_relevant_in_top10": sum(r["ndcg_oracle"] > 0 for r in per_query),
        "rerank_s_per_query_median": round(statistics.median(r["rerank_s"] for r in per_query), 2) if n else None,
        "rerank_s_per_query_mean": round(_mean(r["rerank_s"] for r in per_query), 2),
        "scoring_calls": sum(outcomes.values()),
        "scoring_calls_by_outcome": dict(outcomes),
        "scoring_failed": outcomes["error"] + outcomes["timeout"] + outcomes["invalid"],
        "call_s_median": round(statistics.median(call_s), 2) if call_s else None,
        "call_s_p95": round(sorted(call_s)[int(0.95 * (len(call_s) - 1))], 2) if call_s else None,
        "score_values": dict(Counter(round(s, 2) for s in all_scores).most_common()),
        "errors_seen": sorted({c["error"] for c in counter.calls if "error" in c})[:5],
        "invalid_replies_seen": [c["reply"] for c in counter.calls if c["outcome"] == "invalid"][:5],
    }
    for r in per_query:
        r["calls"] = dict(r["calls"])
    return {"summary": summary, "per_query": per_query}


def _mean(values: Any) -> float:
    vals = list(values)
    return round(sum(vals) / len(vals), 4) if vals else float("nan")


# ---------------------------------------------------------------------------------------------------------------------
# Part 2: answer quality
# ---------------------------------------------------------------------------------------------------------------------


async def one_turn(rt: Any, principal: Principal, question: str, fact: list[str], expected: str) -> dict[str, Any]:
    start = time.perf_counter()
    first_token: float | None = None
    answer: list[str] = []
    calls: list[dict[str, Any]] = []
    passages: list[dict[str, Any]] = []
    done: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    order: list[str] = []
    options = options_of(
        rt.settings.retrieval, mode="hybrid", rerank=False, default_limit=rt.settings.llm.chat_search_limit
    )
    run = await rt.chat.start(principal, ChatRequest(message=question, options=options))  # as POST /api/chat does
    async for _, event in run.follow(0):
        kind, data = event.event, event.data
        if not order or order[-1] != kind:
            order.append(kind)
        if kind == "token":
            if first_token is None:
                first_token = time.perf_counter() - start
            answer.append(data.get("delta", ""))
        elif kind == "tool_call":
            calls.append({"arguments": data.get("arguments"), "id": data.get("id")})
        elif kind == "tool_result":
            passages.extend(data.get("chunks") or [])
        elif kind == "done":
            done = data
        elif kind == "error":
            error = data
    seconds = time.perf_counter() - start
    text = "".join(answer)
    checks = citation_checks(text, passages, fact)
    cited = [int(n) for n in _CITE.findall(text)]
    first_cited = next((n for n in cited if 1 <= n <= len(passages)), None)
    return {
        "question": question,
        "expected_fact": fact,
        "expected_source": expected,
        "answer": text,
        "seconds": round(seconds, 2),
        "first_token_s": None if first_token is None else round(first_token, 2),
        "has_fact": contains_fact(text, fact),
        "tool_called": bool(calls),
        "searches": [c["arguments"] for c in calls],
        "passages": len(passages),
        "top_returned_source": passages[0].get("filename") if passages else None,
        "top_returned_ok": bool(passages) and passages[0].get("filename") == expected,
        "expected_source_returned": any(p.get("filename") == expected for p in passages),
        "first_cited": first_cited,
        "first_cited_source": passages[first_cited - 1].get("filename") if first_cited else None,
        "first_cited_ok": bool(first_cited) and passages[first_cited - 1].get("filename") == expected,
        "citations": checks,
        "cited_numbers": sorted(set(cited)),
        "invalid_citations": sorted({n for n in cited if not 1 <= n <= len(passages)}),
        "finish_reason": (done or {}).get("finish_reason"),
        "usage": (done or {}).get("usage"),
        "done_citations": (done or {}).get("citations"),
        "error": error,
        "event_order": order,
    }


async def answer_quality(rt: Any, principal: Principal, n_questions: int) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for i, (question, fact, expected) in enumerate(QUESTIONS[:n_questions], 1):
        row = await one_turn(rt, principal, question, fact, expected)
        rows.append(row)
        support = sum(c["supported"] for c in row["citations"])
        print(
            f"  [{i}/{n_questions}] {row['seconds']:.0f} s fact={'Y' if row['has_fact'] else 'n'} "
            f"tool={len(row['searches'])} top={'Y' if row['top_returned_ok'] else 'n'} "
            f"cites {support}/{len(row['citations'])} supported{' ERROR ' + str(row['error']) if row['error'] else ''}"
            f" | {row['answer'][:140]!r}",
            flush=True,
        )
    n = len(rows)
    cites = [c for r in rows for c in r["citations"]]
    with_cited = [r for r in rows if r["first_cited"]]
    summary = {
        "questions": n,
        "answers_with_fact": sum(r["has_fact"] for r in rows),
        "share_with_fact": _share(sum(r["has_fact"] for r in rows), n),
        "turns_tool_called": sum(r["tool_called"] for r in rows),
        "share_tool_called": _share(sum(r["tool_called"] for r in rows), n),
        "searches_per_turn_mean": _mean(len(r["searches"]) for r in rows),
        "top_returned_from_expected": sum(r["top_returned_ok"] for r in rows),
        "expected_source_in_passages": sum(r["expected_source_returned"] for r in rows),
        "answers_citing": len(with_cited),
        "first_cited_from_expected": sum(r["first_cited_ok"] for r in with_cited),
        "citations_checked": len(cites),
        "citations_supported": sum(c["supported"] for c in cites),
        "share_citations_supported": _share(sum(c["supported"] for c in cites), len(cites)),
        "citations_invalid": sum(not c["exists"] for c in cites),
        "citations_to_expected_doc": sum(
            c.get("filename") == r["expected_source"] for r in rows for c in r["citations"]
        ),
        "errors": sum(1 for r in rows if r["error"]),
        "error_codes": dict(Counter(r["error"]["code"] for r in rows if r["error"])),
        "finish_reasons": dict(Counter(str(r["finish_reason"]) for r in rows)),
        "seconds_median": round(statistics.median(r["seconds"] for r in rows), 1) if rows else None,
        "seconds_max": round(max(r["seconds"] for r in rows), 1) if rows else None,
        "first_token_s_median": _median([r["first_token_s"] for r in rows if r["first_token_s"] is not None]),
    }
    return {"summary": summary, "per_question": rows}


def _share(k: int, n: int) -> float | None:
    return round(k / n, 3) if n else None


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


# ---------------------------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------------------------


def report(out: dict[str, Any]) -> str:
    lines = [
        f"real LLM bench — {out['started_at']} — model {out['model']['name']} (n_ctx {out['model']['n_ctx']}, "
        f"threads {out['model']['threads']}), total {out['total_s']:.0f} s",
        f"load average before {out['loadavg_before']} after {out['loadavg_after']} (2 cores)",
    ]
    rg = out.get("rerank")
    if rg:
        s, c = rg["summary"], out["rerank_corpus"]
        lines += [
            "",
            table(
                ["SciFact train sample", "nDCG@10", "MRR@10"],
                [
                    ["hybrid top 10", s["ndcg@10_hybrid"], s["mrr@10_hybrid"]],
                    ["hybrid + real-LLM rerank of those 10", s["ndcg@10_rerank"], s["mrr@10_rerank"]],
                    ["best possible order of those 10", s["ndcg@10_oracle"], ""],
                ],
                title=(
                    f"1. Rerank gain: {s['queries']} queries (seed {out['args']['seed']}), corpus {c['documents']} "
                    f"abstracts ({c['relevant']} judged relevant + {c['others']} others) = {c['chunks']} chunks"
                ),
            ),
            f"queries better / worse / order changed: {s['queries_better']} / {s['queries_worse']} / "
            f"{s['queries_order_changed']}; same 10 candidates in both: {s['queries_same_candidates']}/{s['queries']}; "
            f"a relevant doc among the 10: {s['queries_with_relevant_in_top10']}/{s['queries']}",
            f"rerank seconds per query: median {s['rerank_s_per_query_median']}, mean {s['rerank_s_per_query_mean']} "
            f"(one call per chunk, concurrency 1; per call median {s['call_s_median']} s, p95 {s['call_s_p95']} s)",
            f"scoring calls: {s['scoring_calls']}, failed (score 0 from error/timeout/invalid reply): "
            f"{s['scoring_failed']} {s['scoring_calls_by_outcome']}",
            f"score values given: {s['score_values']}",
        ]
    aq = out.get("answers")
    if aq:
        s = aq["summary"]
        lines += [
            "",
            table(
                ["Answer quality", "value"],
                [
                    ["answers containing the expected fact", f"{s['answers_with_fact']}/{s['questions']}"],
                    ["turns that called the search tool", f"{s['turns_tool_called']}/{s['questions']}"],
                    [
                        "top returned passage from the expected doc",
                        f"{s['top_returned_from_expected']}/{s['questions']}",
                    ],
                    ["expected doc among the passages", f"{s['expected_source_in_passages']}/{s['questions']}"],
                    ["answers with at least one valid [n]", f"{s['answers_citing']}/{s['questions']}"],
                    [
                        "first cited passage from the expected doc",
                        f"{s['first_cited_from_expected']}/{s['answers_citing']}",
                    ],
                    ["[n] citations supporting their sentence", f"{s['citations_supported']}/{s['citations_checked']}"],
                    ["[n] citations pointing at no passage", f"{s['citations_invalid']}/{s['citations_checked']}"],
                    [
                        "[n] citations into the expected doc (any chunk)",
                        f"{s['citations_to_expected_doc']}/{s['citations_checked']}",
                    ],
                    ["errors", f"{s['errors']} {s['error_codes'] or ''}"],
                    ["seconds per answer: median / max", f"{s['seconds_median']} / {s['seconds_max']}"],
                    ["first token seconds: median", f"{s['first_token_s_median']}"],
                ],
                title=(
                    f"2. Answer quality: {s['questions']} questions over {len(CORPUS)} hand-written documents, "
                    f"one chat turn each (search_first={out['settings']['chat_search_first']}, "
                    f"temperature={out['settings']['chat_temperature']}, chat_search_limit="
                    f"{out['settings']['chat_search_limit']})"
                ),
            ),
            f"finish reasons: {s['finish_reasons']}",
            f"fact rule: {FACT_RULE}",
            f"citation rule: {CITATION_RULE}",
        ]
        lines.append("")
        lines.append("per question (fact / tool calls / top doc / citations supported/checked / seconds / answer):")
        for r in aq["per_question"]:
            sup = sum(c["supported"] for c in r["citations"])
            lines.append(
                f"  {'Y' if r['has_fact'] else 'n'} {len(r['searches'])} {'Y' if r['top_returned_ok'] else 'n'} "
                f"{sup}/{len(r['citations'])} {r['seconds']:>5.0f}s  {r['question']}  →  "
                f"{' '.join(r['answer'].split())[:160]!r}"
            )
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    out: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "args": vars(args) | {"json": str(args.json)},
        "loadavg_before": [round(x, 2) for x in os.getloadavg()],
        "cpu_context_start": cpu_context(),
    }
    ensure_runtime()
    model_path = ensure_model()
    with (
        tempfile.TemporaryDirectory(prefix="ragchat-real-llm-") as tmp,
        RealLLM(model_path, n_ctx=args.n_ctx, threads=args.threads, log_path=Path(tmp) / "llm.log") as real,
    ):
        out["model"] = {
            "name": real.model,
            "file": model_path.name,
            "n_ctx": args.n_ctx,
            "threads": args.threads,
            "startup_s": round(real.startup_seconds, 1),
        }
        print(f"model {real.model} up in {real.startup_seconds:.1f} s at {real.base_url}", flush=True)
        settings = bench_settings(
            Path(tmp) / "data",
            llm_provider="openai",
            openai_base_url=real.base_url,
            chat_model=real.model,
            llm_timeout_s=args.llm_timeout,
            rerank_timeout_s=args.rerank_timeout,
            rerank_deadline_s=max(600.0, args.rerank_timeout * 12),
            rerank_concurrency=1,
            rerank_candidates_factor=1,
            chat_search_limit=args.chat_search_limit,
            chat_temperature=args.temperature,
            log_level="warning",
        )
        out["settings"] = {
            k: getattr(getattr(settings, WHERE[k.upper()][0]), k)
            for k in (
                "llm_timeout_s",
                "rerank_timeout_s",
                "rerank_deadline_s",
                "rerank_concurrency",
                "rerank_candidates_factor",
                "rerank_passage_chars",
                "chat_search_limit",
                "chat_search_first",
                "chat_temperature",
                "chat_max_tool_rounds",
                "fusion",
                "chunk_tokens",
                "embed_model",
            )
        }
        llm = build_llm(settings.llm)
        counter = CountingLLM(llm)
        try:
            async with open_runtime(settings, Overrides(llm=llm, rerank_llm=counter)) as rt:  # type: ignore[arg-type]
                await _run_parts(rt, counter, args, out)
        finally:
            await llm.close()
    out["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    out["cpu_context_end"] = cpu_context()
    out["total_s"] = round(time.perf_counter() - t0, 1)
    return out


async def _run_parts(rt: Any, counter: CountingLLM, args: argparse.Namespace, out: dict[str, Any]) -> None:
    sci_owner = uuid.uuid5(_NS, "scifact")
    chat_owner = uuid.uuid5(_NS, "chat")
    await add_user(rt, sci_owner, "bench:scifact")
    await add_user(rt, chat_owner, "bench:chat")
    sci, chat = Principal(sci_owner, "bench", False), Principal(chat_owner, "bench", False)

    ids: list[uuid.UUID] = []
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    if not args.skip_rerank:
        queries, qrels, data = scifact_sample(args.queries, args.others, args.seed)
        registered = await rt.documents.ingestion.register_bulk(sci, "scifact-sample.jsonl", data)
        ids += [r.document_id for r in registered if r.document_id]
        relevant = {d for rels in qrels.values() for d, r in rels.items() if r > 0}
        out["rerank_corpus"] = {"documents": len(registered), "relevant": len(relevant)}
        out["rerank_corpus"]["others"] = len(registered) - len(relevant)
    if not args.skip_chat:
        for filename, text in CORPUS.items():
            registered = await rt.documents.ingestion.register_upload(chat, filename, text.encode())
            ids += [r.document_id for r in registered if r.document_id]
    start = time.perf_counter()
    progress = await rt.documents.ingestion.ingest(ids)
    out["ingest"] = {
        "documents": progress.documents_done,
        "failed": progress.documents_failed,
        "chunks": progress.chunks_done,
        "seconds": round(time.perf_counter() - start, 1),
    }
    print(f"ingested {out['ingest']}", flush=True)
    if progress.documents_failed:
        raise RuntimeError(f"ingestion failed: {progress.failures[:3]}")
    async with rt.pool.connection() as conn:
        cur = await conn.execute("SELECT owner_id, count(*) FROM document_chunks GROUP BY owner_id")
        rows = [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in await cur.fetchall()]
        chunks_by_owner = {str(owner): int(n) for owner, n in rows}

    if not args.skip_rerank:
        out["rerank_corpus"]["chunks"] = chunks_by_owner.get(str(sci_owner), 0)
        print(f"1. rerank gain over {len(queries)} queries", flush=True)
        t = time.perf_counter()
        out["rerank"] = await rerank_gain(rt, counter, sci, queries, qrels)
        out["rerank"]["seconds"] = round(time.perf_counter() - t, 1)
    if not args.skip_chat:
        out["chat_corpus"] = {"documents": len(CORPUS), "chunks": chunks_by_owner.get(str(chat_owner), 0)}
        print(f"2. answer quality over {min(args.questions, len(QUESTIONS))} questions", flush=True)
        t = time.perf_counter()
        out["answers"] = await answer_quality(rt, chat, min(args.questions, len(QUESTIONS)))
        out["answers"]["seconds"] = round(time.perf_counter() - t, 1)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--queries", type=int, default=10, help="SciFact queries for the rerank gain (default 10: ~55 s each)"
    )
    p.add_argument("--others", type=int, default=1000, help="non-relevant abstracts added to the corpus")
    p.add_argument("--questions", type=int, default=len(QUESTIONS), help=f"chat questions (max {len(QUESTIONS)})")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--rerank-timeout", type=float, default=60.0, help="RERANK_TIMEOUT_S per scoring call")
    p.add_argument("--llm-timeout", type=float, default=300.0, help="LLM_TIMEOUT_S per chat model call")
    p.add_argument("--chat-search-limit", type=int, default=6, help="CHAT_SEARCH_LIMIT (the app's default: 6)")
    p.add_argument("--temperature", type=float, default=None, help="CHAT_TEMPERATURE (default: the server's, 0.8)")
    p.add_argument("--n-ctx", type=int, default=4096)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--skip-rerank", action="store_true")
    p.add_argument("--skip-chat", action="store_true")
    p.add_argument("--json", type=Path, default=RESULTS / "real_llm.json", help="the .txt goes next to it")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    out = asyncio.run(run(args))
    text = report(out)
    print()
    print(text)
    write_json(args.json, out)
    args.json.with_suffix(".txt").write_text(text + "\n", encoding="utf-8")
    print(f"\nwrote {args.json} and {args.json.with_suffix('.txt')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
