"""Whole-document summaries and comparisons as a map-reduce that fits the model's context window.

read:   each document's sections (chunks) in order, at most SUMMARY_MAX_SECTIONS per request (shared among
        the documents), through the `DocumentReader` contract;
map:    consecutive sections grouped into parts that fit the window (minus the answer reserve and the
        prompt), at most SUMMARY_MAX_PARTS parts; one model call per part summarises it. Each part becomes
        a numbered passage [n] (its first chunk, its pages or sections), so the answer cites it and the
        page opens it;
reduce: when the part summaries together do not fit the window, adjacent ones are merged by further calls
        that keep the [n] markers, until they fit; the chat model then writes the answer from them.

Every step yields a `progress` event. What was cut (sections beyond the bound, parts beyond the cap) is said
in the result: "summarised the first N of M sections". A cancelled run (Stop, a disconnect) cancels the call
in flight and stops; nothing here catches `CancelledError`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from ragchat.chat.engine.budget import estimate_tokens
from ragchat.core.principal import Principal
from ragchat.core.reading import DocumentReader, DocumentSections, Section
from ragchat.providers.llm.base import LLMError, LLMProvider
from ragchat.providers.llm.replies import clean_reply

log = logging.getLogger(__name__)

READ_PAGE = 200  # sections per read
PROMPT_TOKENS = 400  # the map/reduce instructions and labels, with room to spare
SUMMARY_CHARS = 1500  # a part's summary is cut here (the prompt asks for ~120 words)
MAX_REDUCE_LEVELS = 4

MAP_PROMPT = """\
You summarise one part of a longer document for a reader who will not see the text.
- Write at most 120 words: the main points, facts, names, numbers, obligations and conclusions in this part.
- Use only the text given. No introduction, no outside knowledge."""

REDUCE_PROMPT = """\
You merge summaries of consecutive parts of documents into one shorter summary.
- Keep every citation marker like [3] next to the point it supports; never invent new numbers.
- Keep facts, names and numbers; drop repetition. At most 200 words."""


@dataclass(frozen=True)
class SummaryLimits:
    context_tokens: int  # the model's window
    answer_reserve: int  # kept free for the answer
    max_sections: int  # sections read per request (all documents)
    max_parts: int  # map calls per request

    @property
    def budget(self) -> int:
        """Tokens one map or reduce request may hold."""
        return max(256, self.context_tokens - self.answer_reserve - PROMPT_TOKENS)


@dataclass
class Part:
    number: int
    document: DocumentSections
    sections: list[Section]
    summary: str = ""
    failed: bool = False

    @property
    def label(self) -> str:
        pages = [s.page for s in self.sections if s.page is not None]
        if pages:
            low, high = min(pages), max(pages)
            return f"page {low}" if low == high else f"pages {low}–{high}"
        heads = list(dict.fromkeys(s.section for s in self.sections if s.section))
        if heads:
            return heads[0] if len(heads) == 1 else f"{heads[0]} – {heads[-1]}"
        first, last = self.sections[0].chunk_index, self.sections[-1].chunk_index
        return f"section {first + 1}" if first == last else f"sections {first + 1}–{last + 1}"

    def passage(self) -> dict[str, Any]:
        """The part as a numbered passage (the `tool_result` chunk the page opens: its first section)."""
        first = self.sections[0]
        return {
            "id": first.id,
            "document_id": str(self.document.document_id),
            "filename": self.document.filename,
            "title": self.document.title,
            "page": first.page,
            "section": f"Summary of {self.label}",
            "chunk_index": first.chunk_index,
            "content": self.summary,
            "score": 1.0,
            "score_kind": "similarity",
            "trace": {},
            "location": first.location,
        }


@dataclass
class Summary:
    parts: list[Part] = field(default_factory=list)
    digest: list[str] = field(default_factory=list)  # what the model reads: part summaries, or merged ones
    notes: list[str] = field(default_factory=list)  # what was cut or failed, in words
    llm_calls: int = 0


Event = tuple[str, dict[str, Any]]


async def _read(
    reader: DocumentReader, principal: Principal, document_id: UUID, cap: int
) -> tuple[DocumentSections, bool]:
    """The document's first `cap` sections, and whether that is all of them."""
    head = await reader.read_sections(principal, document_id, start=0, limit=min(READ_PAGE, cap))
    sections = list(head.sections)
    while sections and len(sections) < min(cap, head.chunks_total):
        more = await reader.read_sections(
            principal, document_id, start=sections[-1].chunk_index + 1, limit=min(READ_PAGE, cap - len(sections))
        )
        if not more.sections:
            break
        sections += more.sections
    return head.model_copy(update={"sections": sections}), len(sections) >= head.chunks_total


def split_parts(document: DocumentSections, budget: int, first_number: int) -> list[Part]:
    """Consecutive sections in parts of at most `budget` tokens (a longer section is cut to fit alone)."""
    parts: list[Part] = []
    current: list[Section] = []
    used = 0
    for section in document.sections:
        tokens = estimate_tokens(section.content) + 8
        if tokens > budget:
            section = section.model_copy(update={"content": section.content[: int(budget * 2.5)]})
            tokens = estimate_tokens(section.content) + 8
        if current and used + tokens > budget:
            parts.append(Part(first_number + len(parts), document, current))
            current, used = [], 0
        current.append(section)
        used += tokens
    if current:
        parts.append(Part(first_number + len(parts), document, current))
    return parts


async def _complete(llm: LLMProvider, model: str, messages: list[dict[str, Any]], temperature: float | None) -> str:
    """One streamed call without tools, its text (reasoning blocks dropped), at most SUMMARY_CHARS."""
    out: list[str] = []
    stream = llm.stream_chat(model=model, messages=messages, temperature=temperature)
    async with aclosing(stream):
        async for chunk in stream:
            if chunk.content:
                out.append(chunk.content)
    text = "".join(out)
    if "<think" in text.lower():
        text = clean_reply(text) if "{" in text else text.rsplit(">", 1)[-1]
    return " ".join(text.split())[:SUMMARY_CHARS].strip()


async def summarize(
    llm: LLMProvider,
    model: str,
    reader: DocumentReader,
    principal: Principal,
    document_ids: list[UUID],
    limits: SummaryLimits,
    result: Summary,
    *,
    first_number: int = 1,
    focus: str | None = None,
    temperature: float | None = None,
    charge: Callable[[int], Awaitable[None]] | None = None,
) -> AsyncGenerator[Event, None]:
    """`progress` events while it reads, maps and reduces; the outcome is left in `result`. `charge(1)` is
    awaited before every model call (the user's LLM budget: it raises when spent, which ends the summary)."""
    per_document = max(1, limits.max_sections // len(document_ids))
    documents: list[DocumentSections] = []
    for done, document_id in enumerate(document_ids):
        document, whole = await _read(reader, principal, document_id, per_document)
        yield "progress", {"stage": "read", "done": done + 1, "total": len(document_ids), "message": document.title}
        if document.status != "ready" or not document.sections:
            reason = f" ({document.error})" if document.error else ""
            result.notes.append(f"{document.title} has no text to summarise: it is {document.status}{reason}.")
            continue
        if not whole:
            result.notes.append(_cut_note(document, len(document.sections)))
        documents.append(document)

    parts_cap = max(1, limits.max_parts // max(1, len(documents)))
    number = first_number
    for document in documents:
        parts = split_parts(document, limits.budget, number)
        if len(parts) > parts_cap:
            kept = parts[:parts_cap]
            sections = sum(len(p.sections) for p in kept)
            result.notes.append(_cut_note(document, sections, kept[-1].label))
            parts = kept
        result.parts += parts
        number += len(parts)

    for done, part in enumerate(result.parts, 1):
        text = "\n\n".join(s.content for s in part.sections)
        ask = f"Document: {part.document.title}\nPart [{part.number}], {part.label}:\n\n{text}"
        if focus:
            ask += f"\n\n(The reader is interested in: {focus[:300]})"
        messages = [{"role": "system", "content": MAP_PROMPT}, {"role": "user", "content": ask}]
        if charge is not None:
            await charge(1)
        result.llm_calls += 1
        try:
            part.summary = await _complete(llm, model, messages, temperature)
        except LLMError as exc:
            if done == 1:  # the first call failed: the model is away or broken, say so rather than go on
                raise
            log.info("summary part %d failed: %s", part.number, exc)
            part.failed = True
        if not part.summary:
            part.failed = True
            part.summary = f"(This part, {part.label}, could not be summarised.)"
        yield "progress", {"stage": "map", "done": done, "total": len(result.parts), "message": part.label}
    if result.parts and all(p.failed for p in result.parts):
        raise LLMError("the model summarised none of the parts")
    failed = [p for p in result.parts if p.failed]
    if failed:
        result.notes.append(f"{len(failed)} of {len(result.parts)} parts could not be summarised.")

    digest = [f"[{p.number}] {p.document.title}, {p.label}:\n{p.summary}" for p in result.parts]
    level = 0
    while sum(estimate_tokens(d) for d in digest) > limits.budget and len(digest) > 1 and level < MAX_REDUCE_LEVELS:
        level += 1
        groups = _groups(digest, limits.budget)
        merged: list[str] = []
        for done, group in enumerate(groups, 1):
            messages = [
                {"role": "system", "content": REDUCE_PROMPT},
                {"role": "user", "content": "\n\n".join(group)},
            ]
            if charge is not None:
                await charge(1)
            result.llm_calls += 1
            text = await _complete(llm, model, messages, temperature)
            merged.append(text or "\n\n".join(group)[:SUMMARY_CHARS])
            yield "progress", {"stage": "reduce", "done": done, "total": len(groups), "message": f"level {level}"}
        digest = merged
    result.digest = digest


def _groups(digest: list[str], budget: int) -> list[list[str]]:
    """Adjacent summaries in groups that fit `budget` (at least two per group, so every level shrinks)."""
    groups: list[list[str]] = []
    current: list[str] = []
    used = 0
    for text in digest:
        tokens = estimate_tokens(text)
        if len(current) >= 2 and used + tokens > budget:
            groups.append(current)
            current, used = [], 0
        current.append(text)
        used += tokens
    if current:
        if len(current) == 1 and groups:
            groups[-1].append(current[0])
        else:
            groups.append(current)
    return groups


def _cut_note(document: DocumentSections, sections: int, until: str | None = None) -> str:
    where = f" (up to {until})" if until else ""
    return (
        f"Summarised the first {sections} of {document.chunks_total} sections of {document.title}{where}: "
        "the rest was not read (the request's bound)."
    )
