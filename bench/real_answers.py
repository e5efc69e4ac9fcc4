"""Answer quality of the chat with the real model over the two dev corpora (issue 34, item 3), one turn each.

Run by `bench/real_llm_arms.py` (which owns the model, the database, the checkpoints and the pause): this file
has the questions, one chat turn through `ChatService.start` and its run's events (the SSE event protocol as
POST /api/chat streams it, as `bench/real_llm.py` `one_turn` does too), the judging of one answer and the
report.

Questions: 20 queries per dev set (seeded, with qrels), asked of that set's corpus (its eval owner). NFCorpus
queries are asked as they are (plain-language questions and titles); SciFact's are claims, asked as "What do
the documents say about this claim: <claim>". Plus the 10 UNANSWERABLE questions below (cooking, sports,
travel...), asked alternately of the SciFact and the NFCorpus corpus.

Judging one answer (no LLM judge, so it is reproducible and cheap):
- `cites_relevant`: a citation [n] in the answer names a passage of a judged-relevant document (qrels > 0);
- `overlap_relevant`: the answer (markers removed) shares at least OVERLAP_WORDS content words (3+ letters, not
  stop words; `bench.real_llm.content_words`) with a judged-relevant document that are NOT in the question, so
  restating the question does not count;
- `has_fact` = both: the answer uses a relevant document and says something from it;
- `retrieved_relevant`: the search results the model saw held a relevant document (the ceiling);
- citations: the project's own verifier (`ragchat.chat.engine.citations`, the `citations` event of the turn):
  sentences, supported sentences and the verdict counts;
- unanswerable: `says_not_found` (the answer says the documents do not have it: NOT_FOUND patterns) and
  whether it cited anything anyway;
- `page_not_covered`, for every question: the page shows "Not in your documents" under the answer (every
  search's confidence was insufficient: `ragchat.chat.engine.coverage.not_covered`, as client/src/chat/coverage.ts),
  whatever the model wrote.
Every answer's text is saved in the checkpoint lines for spot checks by hand.
"""

from __future__ import annotations

import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from bench.real_llm import _CITE, content_words
from ragchat.chat.engine.answer import numbered_sources
from ragchat.chat.engine.coverage import not_covered
from ragchat.chat.engine.loop import Turn
from ragchat.chat.store.turns import ChatRequest
from ragchat.core.options import options_of
from ragchat.core.principal import Principal

OVERLAP_WORDS = 3
UNANSWERABLE = [
    "How long should I knead pizza dough, and at what oven temperature should I bake it?",
    "Who won the FIFA World Cup in 2014, and what was the score in the final?",
    "What is the offside rule in ice hockey?",
    "How do I change the oil filter on a 2012 Honda Civic?",
    "What is the best time of year to visit Kyoto for the cherry blossoms?",
    "How many players are on the field for each team in a rugby union match?",
    "What is a good recipe for French onion soup?",
    "Which chess opening starts with the moves e4 c5?",
    "How do I set up a Python virtual environment on Windows?",
    "What are the rules for castling in chess?",
]
NOT_FOUND = re.compile(
    r"\b(?:not (?:found|mentioned|contain\w*|provide\w*|include\w*|cover\w*|available|discuss\w*|address\w*|"
    r"relevant|related|in the)|no (?:information|mention|relevant|details?|data|documents?|passages?)|"
    r"(?:do|does|did)(?:n't| not) (?:have|contain|mention|say|include|provide|cover|discuss|address)|"
    r"(?:can ?not|can't|couldn't|could not|unable to) (?:find|answer|locate|provide)|"
    r"outside (?:the scope|of the)|(?:doesn't|does not|don't|do not) appear)",
    re.I,
)


def questions_for(name: str, queries: dict[str, str], n: int, seed: int) -> list[tuple[str, str]]:
    """[(qid, question)]: `n` seeded queries with qrels, phrased for the chat."""
    qids = random.Random(f"{seed}:{name}:answers").sample(sorted(queries), min(n, len(queries)))
    if name == "scifact":
        return [(q, f"What do the documents say about this claim: {queries[q]}") for q in qids]
    return [(q, queries[q]) for q in qids]


async def chat_turn(rt: Any, principal: Principal, question: str, *, documents_only: bool = False) -> dict[str, Any]:
    """One new-thread turn through `ChatService.start`: the answer, the passages shown, the verifier's report.
    `documents_only`: the "answer only from documents" setting (refuse when nothing matches well enough)."""
    start = time.perf_counter()
    answer: list[str] = []
    passages: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    searches: list[Any] = []
    citations: dict[str, Any] | None = None
    done: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    options = options_of(
        rt.settings.retrieval, mode="hybrid", rerank=False, default_limit=rt.settings.llm.chat_search_limit
    )
    request = ChatRequest(message=question, options=options, documents_only=documents_only)
    run = await rt.chat.start(principal, request)  # as POST /api/chat does
    async for _, event in run.follow(0):
        kind, data = event.event, event.data
        if kind == "token":
            answer.append(data.get("delta", ""))
        elif kind == "tool_call":
            searches.append(data.get("arguments"))
        elif kind == "tool_result":
            passages.extend(data.get("chunks") or [])
            results.append(data)
        elif kind == "citations":
            citations = data
        elif kind == "done":
            done = data
        elif kind == "error":
            error = data
    return {
        "answer": "".join(answer),
        "passages": passages,
        "searches": searches,
        "verifier": citations,
        "not_covered": not_covered(results),  # the page's "Not in your documents" (client/src/chat/coverage.ts)
        "finish_reason": (done or {}).get("finish_reason"),
        "error": error,
        "seconds": round(time.perf_counter() - start, 2),
    }


def judge(
    turn: dict[str, Any],
    question: str,
    rels: dict[str, int] | None,
    source_of: dict[str, str],
    texts: dict[str, str],
) -> dict[str, Any]:
    """The checks of the module docstring for one turn (`rels` None: an unanswerable question)."""
    text, passages = turn["answer"], turn["passages"]
    sources = [source_of.get(str(p.get("document_id")), "?") for p in passages]
    cited = [int(n) for n in _CITE.findall(text)]
    cited_sources = [sources[n - 1] for n in cited if 1 <= n <= len(sources)]
    verifier = turn["verifier"] or {}
    verdicts = Counter(c.get("verdict") for c in verifier.get("citations", []))
    out: dict[str, Any] = {
        "page_not_covered": turn["not_covered"],
        "cited": sorted(set(cited)),
        "cited_sources": list(dict.fromkeys(cited_sources)),
        "retrieved_sources": list(dict.fromkeys(sources)),
        "sentences": verifier.get("sentences", 0),
        "supported_sentences": verifier.get("supported_sentences", 0),
        "verdicts": dict(verdicts),
    }
    if rels is None:
        out["says_not_found"] = bool(NOT_FOUND.search(text))
        return out
    relevant = {d for d, r in rels.items() if r > 0}
    new_words = content_words(_CITE.sub(" ", text)) - content_words(question)
    overlaps = {d: len(new_words & content_words(texts.get(d, ""))) for d in relevant}
    best = max(overlaps.values(), default=0)
    out.update(
        cites_relevant=any(s in relevant for s in cited_sources),
        overlap_relevant=best >= OVERLAP_WORDS,
        overlap_words=best,
        retrieved_relevant=any(s in relevant for s in sources),
    )
    out["has_fact"] = out["cites_relevant"] and out["overlap_relevant"]
    return out


async def reverify(
    rt: Any, row: dict[str, Any], rels: dict[str, int] | None, source_of: dict[str, str], texts: dict[str, str]
) -> dict[str, Any] | None:
    """`row` with `verifier` and `checks` redone by today's citation verifier, from the passages its answer saw
    (the tool results saved with the answer's message, found by its id or else its text); None when the message
    is not in the database. The check is the chat service's own (`ChatService.check_citations`)."""
    message_id = (row.get("verifier") or {}).get("message_id")
    async with rt.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id::text AS id, tool_results FROM messages WHERE role = 'assistant' AND "
            "(id::text = %s OR (%s::text IS NULL AND content = %s)) ORDER BY created_at DESC LIMIT 1",
            (message_id, message_id, row["answer"]),
        )
        found = await cur.fetchone()
    if found is None:
        return None
    saved = Turn(parts=[row["answer"]], tool_results=found["tool_results"])
    verifier = await rt.chat.check_citations(saved, UUID(found["id"]))  # as the chat checks a finished answer
    passages = numbered_sources(found["tool_results"])
    turn = {"answer": row["answer"], "passages": passages, "verifier": verifier,
            "not_covered": not_covered(found["tool_results"])}  # fmt: skip
    return {**row, "verifier": verifier, "checks": judge(turn, row["question"], rels, source_of, texts)}


def _share(rows: Sequence[dict[str, Any]], key: str) -> str:
    k = sum(1 for r in rows if r.get(key))
    return f"{k}/{len(rows)}" if rows else "-"


def report(rows: Sequence[dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    """Markdown lines and a JSON summary of the answer-quality lines done so far."""
    lines = [
        "| questions | done | has fact (cites a relevant doc + 3 new content words from it) | cites relevant |"
        ' relevant retrieved | sentences supported (verifier) | page says "Not in your documents" |'
        " answer says not found | cites anyway | s/turn median |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    summary: dict[str, Any] = {}
    groups = {
        "scifact": [r for r in rows if r["set"] == "scifact" and r["kind"] == "answerable"],
        "nfcorpus": [r for r in rows if r["set"] == "nfcorpus" and r["kind"] == "answerable"],
        "unanswerable": [r for r in rows if r["kind"] == "unanswerable"],
    }
    for name, group in groups.items():
        if not group:
            continue
        checks = [r["checks"] for r in group]
        sentences = sum(c["sentences"] for c in checks)
        supported = sum(c["supported_sentences"] for c in checks)
        seconds = [r["seconds"] for r in group]
        median = f"{statistics.median(seconds):.0f}" if seconds else "-"
        page = _share(checks, "page_not_covered")
        if name == "unanswerable":
            cells = ["-", "-", "-", f"{supported}/{sentences}", page, _share(checks, "says_not_found")]
            cells.append(f"{sum(1 for c in checks if c['cited'])}/{len(checks)}")
        else:
            cells = [_share(checks, "has_fact"), _share(checks, "cites_relevant"), _share(checks, "retrieved_relevant")]
            cells += [f"{supported}/{sentences}", page, "-", "-"]
        lines.append(f"| {name} | {len(group)} | " + " | ".join(cells) + f" | {median} |")
        summary[name] = {
            "done": len(group),
            "has_fact": sum(1 for c in checks if c.get("has_fact")),
            "cites_relevant": sum(1 for c in checks if c.get("cites_relevant")),
            "retrieved_relevant": sum(1 for c in checks if c.get("retrieved_relevant")),
            "says_not_found": sum(1 for c in checks if c.get("says_not_found")),
            "page_not_covered": sum(1 for c in checks if c.get("page_not_covered")),
            "sentences": sentences,
            "supported_sentences": supported,
            "errors": sum(1 for r in group if r.get("error")),
            "seconds_median": None if not seconds else round(statistics.median(seconds), 1),
        }
    return lines, summary
