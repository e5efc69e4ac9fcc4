"""Which chunking strategy a document gets, and the record of it stored with the document.

Strategies: `line` (chunk_line.py: receipts, sheets), `sentence` (chunking.py: prose), `semantic`
(chunk_semantic.py: long reports whose headings do not separate topics) and `auto`, which picks one from the
file type and the parsed text's shape (`route`) and says why. The record (`documents.chunking`) holds the
strategy requested and the one used, the token budget, the overlap and the reason.
"""

from __future__ import annotations

import asyncio
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Literal

import numpy as np

from ragchat.documents.chunking.line import line_chunks
from ragchat.documents.chunking.semantic import Choose, Embed, TooLong, semantic_chunks
from ragchat.documents.chunking.sentences import Chunk, TokenCounter, chunk_sections
from ragchat.documents.parsing.parsers import Section

Strategy = Literal["auto", "line", "sentence", "semantic"]
STRATEGIES: tuple[Strategy, ...] = ("auto", "line", "sentence", "semantic")

SHEET_SUFFIXES = frozenset({".csv", ".tsv", ".xlsx", ".xlsm", ".ods", ".xls"})
# receipt-like text: at least this many lines, most of them short, many with an amount
RECEIPT_MIN_LINES = 6
RECEIPT_MEDIAN_CHARS = 48
RECEIPT_AMOUNT_SHARE = 0.3
# a long report whose headings (if any) do not cut it into topic-sized parts: about this many tokens in all,
# and this many per run of sections under one heading. `auto` once sent it to semantic; it now stays with
# sentence (docs/benchmarks/results/chunking.md, flat text at the default 200 tokens: semantic +0.026 nDCG@10 on SciFact
# but -0.007 on NFCorpus, with 27% more chunks, and it embeds every sentence on top of every chunk: 39.5 s vs
# 8.9 s to ingest three 14 KB notes, 4.4x). `semantic` stays available by name (CHUNK_STRATEGY, per upload).
REPORT_MIN_TOKENS = 2000
REPORT_MIN_RUN_TOKENS = 1000
CHARS_PER_TOKEN = 4.5  # for the routing estimate only (English prose in MiniLM's word pieces: 4.3-4.8)

_AMOUNT = re.compile(r"(?:[$€£¥₹]\s?\d|\d[.,]\d{2}\b|\b\d+\s?(?:EUR|USD|GBP|CHF|INR)\b)")


@dataclass(frozen=True)
class Decision:
    strategy: Literal["line", "sentence", "semantic"]
    reason: str


def route(sections: Sequence[Section], filename: str) -> Decision:
    """`auto`'s choice for a parsed document: sheets and receipt-like text -> line; anything else -> sentence
    (a long text without headings too: the reason says why not semantic, whose cost is unbounded by it)."""
    suffix = PurePath(filename).suffix.lower()
    if suffix in SHEET_SUFFIXES:
        return Decision("line", f"a spreadsheet ({suffix}): rows are lines")
    lines = [line.strip() for s in sections for line in s.text.split("\n") if line.strip()]
    if len(lines) >= RECEIPT_MIN_LINES:
        median = statistics.median(len(line) for line in lines)
        amounts = sum(1 for line in lines if _AMOUNT.search(line)) / len(lines)
        if median <= RECEIPT_MEDIAN_CHARS and amounts >= RECEIPT_AMOUNT_SHARE:
            return Decision(
                "line",
                f"receipt-like: {len(lines)} lines, median {median:.0f} characters, {amounts:.0%} with amounts",
            )
    tokens = int(sum(len(s.text) for s in sections) / CHARS_PER_TOKEN)
    runs = sum(1 for i, s in enumerate(sections) if i == 0 or s.heading != sections[i - 1].heading)
    per_run = tokens // max(runs, 1)
    if tokens >= REPORT_MIN_TOKENS and per_run >= REPORT_MIN_RUN_TOKENS:
        return Decision(
            "sentence",
            f"a long text (about {tokens:,} tokens, {per_run:,} per heading): sentence, as semantic costs about "
            "4x to ingest and does not earn it on both benchmark sets",
        )
    why = f"short (about {tokens:,} tokens)" if tokens < REPORT_MIN_TOKENS else f"{runs} headings cut it up"
    return Decision("sentence", f"prose ({why})")


@dataclass(frozen=True)
class Chunked:
    chunks: list[Chunk]
    record: dict[str, Any]  # stored in documents.chunking


def chunk_document(
    sections: Sequence[Section],
    filename: str,
    count: TokenCounter,
    embed: Embed | None,
    *,
    strategy: Strategy,
    max_tokens: int,
    overlap: int,
    max_chars: int,
    choose: Choose | None = None,
) -> Chunked:
    """The document's chunks by `strategy` (auto: `route`'s choice); semantic without an embedder, or past
    chunk_semantic.MAX_UNITS sentences, falls back to sentence (the record says so)."""
    decision = route(sections, filename) if strategy == "auto" else Decision(strategy, "requested")
    used, reason = decision.strategy, decision.reason
    chunks: list[Chunk] | None = None
    if used == "semantic":
        if embed is None:
            used, reason = "sentence", reason + "; semantic needs an embedder: sentence instead"
        else:
            try:
                chunks = semantic_chunks(
                    sections, count, embed, max_tokens=max_tokens, max_chars=max_chars, choose=choose
                )
            except TooLong as exc:
                used, reason = "sentence", f"{reason}; {exc}: sentence instead"
    if used == "line":
        chunks = line_chunks(sections, count, max_tokens=max_tokens, max_chars=max_chars)
    elif chunks is None:
        used = "sentence"
        chunks = chunk_sections(sections, count, max_tokens=max_tokens, overlap=overlap, max_chars=max_chars)
    record = {
        "requested": strategy,
        "strategy": used,
        "tokens": max_tokens,
        "overlap": overlap if used == "sentence" else 0,
        "reason": reason,
    }
    return Chunked(chunks, record)


def blocking_embed(embedder: Any, loop: asyncio.AbstractEventLoop | None, timeout_s: float = 600.0) -> Embed | None:
    """A synchronous embed function for code running in a worker thread: the provider's own `embed_sync` when
    it has one (the local model), else its async `embed_documents` run on `loop` (a remote model's client
    lives there). None when neither is possible."""
    sync = getattr(embedder, "embed_sync", None)
    if callable(sync):
        return lambda texts: np.asarray(sync(list(texts)), dtype=np.float32)
    if loop is None:
        return None

    def run(texts: Sequence[str]) -> np.ndarray:
        future = asyncio.run_coroutine_threadsafe(embedder.embed_documents(list(texts)), loop)
        return np.asarray(future.result(timeout_s), dtype=np.float32)

    return run
