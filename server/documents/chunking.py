"""Split parsed sections into chunks sized in the embedding model's own tokens.

Units are sentences (a sentence longer than a chunk is cut into word runs), packed greedily up to
`max_tokens`, with trailing sentences of the previous chunk repeated as overlap. A chunk never crosses
a section (page or heading), never cuts a word, and empty text yields no chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from server.documents.parsers import Section
from server.vectors.store import content_hash, embedding_text

__all__ = ["Chunk", "chunk_sections", "content_hash", "embedding_text"]

_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+(?=[\"'(\[“‘]?[A-Z0-9À-ÖØ-Þ])")

TokenCounter = Callable[[Sequence[str]], list[int]]


@dataclass(frozen=True)
class Chunk:
    content: str
    page: int | None
    section: str | None
    token_count: int


@dataclass(frozen=True)
class _Unit:
    text: str
    tokens: int
    paragraph_start: bool


def _sentences(paragraph: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(paragraph) if s.strip()]


def _units(text: str, max_tokens: int, count: TokenCounter) -> list[_Unit]:
    pieces: list[tuple[str, bool]] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = " ".join(paragraph.split())
        for i, sentence in enumerate(_sentences(paragraph)):
            pieces.append((sentence, i == 0))
    if not pieces:
        return []
    counts = count([p for p, _ in pieces])
    units: list[_Unit] = []
    for (piece, starts), tokens in zip(pieces, counts, strict=True):
        if tokens <= max_tokens:
            units.append(_Unit(piece, tokens, starts))
            continue
        units.extend(_split_long(piece, starts, max_tokens, count))
    return units


def _split_long(sentence: str, starts: bool, max_tokens: int, count: TokenCounter) -> list[_Unit]:
    """Cut an over-long sentence into runs of whole words of at most `max_tokens` tokens."""
    words = sentence.split(" ")
    out: list[_Unit] = []
    buf: list[str] = []
    used = 0
    for word, tokens in zip(words, count(words), strict=True):
        if tokens > max_tokens:  # a pathological "word" (e.g. a base64 blob): cut by characters
            word = word[: max_tokens * 2]
            tokens = min(tokens, max_tokens)
        if buf and used + tokens > max_tokens:
            out.append(_Unit(" ".join(buf), used, starts and not out))
            buf, used = [], 0
        buf.append(word)
        used += tokens
    if buf:
        out.append(_Unit(" ".join(buf), used, starts and not out))
    return out


def _join(units: Sequence[_Unit]) -> str:
    text = ""
    for i, unit in enumerate(units):
        if i == 0:
            text = unit.text
        else:
            text += ("\n\n" if unit.paragraph_start else " ") + unit.text
    return text


def chunk_sections(
    sections: Sequence[Section], count: TokenCounter, *, max_tokens: int = 200, overlap: int = 40
) -> list[Chunk]:
    """Chunks in document order for every section with text."""
    chunks: list[Chunk] = []
    for section in sections:
        units = _units(section.text, max_tokens, count)
        start = 0
        while start < len(units):
            end, used = start, 0
            while end < len(units) and (end == start or used + units[end].tokens <= max_tokens):
                used += units[end].tokens
                end += 1
            chunks.append(Chunk(_join(units[start:end]), section.page, section.heading, used))
            if end >= len(units):
                break
            # step back over trailing units that fit in the overlap budget, but always advance
            back, kept = end, 0
            while back - 1 > start and kept + units[back - 1].tokens <= overlap:
                back -= 1
                kept += units[back].tokens
            start = back
    return chunks
