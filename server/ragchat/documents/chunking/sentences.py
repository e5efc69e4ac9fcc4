"""Split parsed sections into chunks sized in the embedding model's own tokens and capped in characters.

Units are sentences; a sentence over either cap is cut into word runs, and a word over either cap (a
base64 blob, a 10 MB line with no spaces: WordPiece counts any word over 100 characters as one token) is
cut at character boundaries, preferably just after punctuation, '/', '-' or '_'. Units are packed greedily
up to `max_tokens` and `max_chars`, with trailing units of the previous chunk repeated as overlap (`overlap`
tokens, and the same share of `max_chars`). A chunk never crosses a section (page or heading), never cuts a
word that fits, and empty text yields no chunk.

Nothing is dropped: whitespace runs become one space (a blank line stays a paragraph break) and every
other character lands in order in some chunk; each chunk is a substring of the normalised section text.

The text is processed as a stream (`iter_chunks`): paragraphs, sentences and words are found with
`finditer`, token counts are asked for in bounded batches, and only the units of the chunk being built
are held, so memory does not grow with the size of a section beyond the text itself.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ragchat.documents.parsing.parsers import Section
from ragchat.vectors.store import content_hash, embedding_text

__all__ = [
    "DEFAULT_MAX_CHARS",
    "Chunk",
    "Unit",
    "chunk_sections",
    "content_hash",
    "embedding_text",
    "iter_chunks",
    "joined_within",
    "units_within",
]

# Longest of 10,929 SciFact + NFCorpus chunks at 256 tokens (the largest CHUNK_TOKENS): 1,578 characters
# (6.45 per token). 2,000 never cuts prose and bounds a chunk of giant "words" (1 token each) to 2 KB.
DEFAULT_MAX_CHARS = 2000
# A chunk closes with fewer new tokens than max_tokens // MIN_SHARE only at the end of its section.
MIN_SHARE = 4

# Abbreviations after which a full stop and a capital do not end a sentence ("Dr. Smith", "Fig. 2").
_ABBREVIATIONS = (
    "Dr",
    "Mr",
    "Mrs",
    "Ms",
    "Prof",
    "Fig",
    "Figs",
    "No",
    "Nos",
    "St",
    "vs",
    "al",
    "Eq",
    "cf",
    "approx",
    "Ref",
)
_NOT_AFTER = "".join(rf"(?<!\b{re.escape(a)}\.)" for a in _ABBREVIATIONS) + r"(?<!\be\.g\.)(?<!\bi\.e\.)"
# A sentence ends at . ! ? followed by whitespace and a capital or digit (not after an abbreviation), or at a
# CJK full stop, exclamation or question mark (。！？, written without a space after them).
_SENTENCE_END = re.compile(rf"{_NOT_AFTER}(?<=[.!?])\s+(?=[\"'(\[“‘]?[A-Z0-9À-ÖØ-Þ])|(?<=[。！？])\s*(?=\S)")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[^ ]+")
# A cut inside an over-long word goes just after one of these when one is in the window's second half.
_BREAK_AFTER = re.compile(r"[/\\\-_.,;:!?|&=+#~)\]}>'\"]")
_COUNT_BATCH_CHARS = 256 * 1024  # text handed to the tokenizer per call: bounds its per-token buffers

TokenCounter = Callable[[Sequence[str]], list[int]]
_Sep = Literal["\n\n", "\n", " ", ""]


@dataclass(frozen=True)
class Chunk:
    content: str
    page: int | None
    section: str | None
    token_count: int
    location: dict[str, Any] | None = None  # the section's: every chunk of a section shares it


@dataclass(frozen=True)
class _Unit:
    text: str
    tokens: int
    sep: _Sep  # what joins it to the unit before it in the same chunk ("" inside a cut word)


def _split_iter(pattern: re.Pattern[str], text: str) -> Iterator[str]:
    """`pattern.split(text)` as a stream, without the list."""
    pos = 0
    for match in pattern.finditer(text):
        yield text[pos : match.start()]
        pos = match.end()
    yield text[pos:]


def _counted(pieces: Iterable[tuple[str, _Sep]], count: TokenCounter, max_chars: int) -> Iterator[_Unit]:
    """Token counts for a stream of pieces, asked for in batches of about `_COUNT_BATCH_CHARS`. A piece over
    `max_chars` will be cut anyway: it is not counted (-1), so one huge line never reaches the tokenizer."""
    batch: list[tuple[str, _Sep]] = []
    size = 0
    for piece in pieces:
        if len(piece[0]) > max_chars:
            yield from _count_batch(batch, count)
            batch, size = [], 0
            yield _Unit(piece[0], -1, piece[1])
            continue
        batch.append(piece)
        size += len(piece[0])
        if size >= _COUNT_BATCH_CHARS:
            yield from _count_batch(batch, count)
            batch, size = [], 0
    if batch:
        yield from _count_batch(batch, count)


def _count_batch(batch: list[tuple[str, _Sep]], count: TokenCounter) -> list[_Unit]:
    if not batch:
        return []
    counts = count([text for text, _ in batch])
    return [_Unit(text, tokens, sep) for (text, sep), tokens in zip(batch, counts, strict=True)]


def _sentences(text: str) -> Iterator[tuple[str, _Sep]]:
    first = True
    for paragraph in _split_iter(_PARAGRAPH_BREAK, text):
        paragraph = _SPACES.sub(" ", paragraph).strip()
        if not paragraph:
            continue
        pos, sep = 0, " "
        for i, match in enumerate(itertools.chain(_SENTENCE_END.finditer(paragraph), [None])):
            end = len(paragraph) if match is None else match.start()
            sentence = paragraph[pos:end].strip()
            if sentence:
                yield sentence, ("\n\n" if i == 0 and not first else sep)
                first = False
            if match is not None:
                pos, sep = match.end(), (" " if match.group() else "")


def _words(sentence: str) -> Iterator[tuple[str, _Sep]]:
    for match in _WORD.finditer(sentence):
        yield match.group(), " "


def _units(text: str, max_tokens: int, max_chars: int, count: TokenCounter) -> Iterator[_Unit]:
    """Units within both caps, in order; the first has no separator that matters."""
    for unit in _counted(_sentences(text), count, max_chars):
        if unit.tokens <= max_tokens and len(unit.text) <= max_chars:
            yield unit
            continue
        for i, word in enumerate(_counted(_words(unit.text), count, max_chars)):
            sep: _Sep = unit.sep if i == 0 else " "
            if word.tokens <= max_tokens and len(word.text) <= max_chars:
                yield _Unit(word.text, word.tokens, sep)
            else:
                yield from _cut_word(word.text, sep, max_tokens, max_chars, count)


def _cut_word(word: str, sep: _Sep, max_tokens: int, max_chars: int, count: TokenCounter) -> Iterator[_Unit]:
    """Pieces of an over-long word, each within both caps, glued back together (separator "").

    Pieces are counted a batch at a time; after each batch the piece length adapts to the characters per
    token seen, so dense text (many word pieces per character) is not cut and counted twice throughout."""
    first = True
    limit, pos = max_chars, 0
    while pos < len(word):
        pieces: list[str] = []
        size = 0
        for piece in _char_pieces(word, limit, pos):
            pieces.append(piece)
            size += len(piece)
            if size >= _COUNT_BATCH_CHARS:
                break
        pos += size
        counts = count(pieces)
        for piece, tokens in zip(pieces, counts, strict=True):
            for unit in _fit_tokens(_Unit(piece, tokens, ""), max_tokens, count):
                yield _Unit(unit.text, unit.tokens, sep if first else "")
                first = False
        if total := sum(counts):
            limit = max(1, min(max_chars, size * max_tokens * 9 // (total * 10)))


def _fit_tokens(unit: _Unit, max_tokens: int, count: TokenCounter) -> Iterator[_Unit]:
    """`unit` cut shorter until each piece has at most `max_tokens` tokens (one character always passes)."""
    if unit.tokens <= max_tokens or len(unit.text) <= 1:
        yield unit
        return
    limit = max(1, min(len(unit.text) - 1, len(unit.text) * max_tokens // unit.tokens))
    pieces = list(_char_pieces(unit.text, limit))  # at most len(unit.text) ≤ max_chars pieces
    for piece, tokens in zip(pieces, count(pieces), strict=True):
        yield from _fit_tokens(_Unit(piece, tokens, ""), max_tokens, count)


def _char_pieces(text: str, limit: int, pos: int = 0) -> Iterator[str]:
    """`text[pos:]` in pieces of at most `limit` characters, cut after punctuation in the window's second
    half when there is some, and never just before a combining mark (unless a piece would be empty)."""
    while len(text) - pos > limit:
        end = pos + limit
        cut = end
        for match in _BREAK_AFTER.finditer(text, pos + limit // 2, end):
            cut = match.end()
        while cut - 1 > pos and unicodedata.combining(text[cut]):
            cut -= 1
        yield text[pos:cut]
        pos = cut
    if pos < len(text):
        yield text[pos:]


def _join(units: Sequence[_Unit]) -> str:
    return "".join(u.text if i == 0 else u.sep + u.text for i, u in enumerate(units))


class _Packer:
    """Greedy packing of a stream of units into chunks within both caps, with token overlap."""

    def __init__(self, count: TokenCounter, max_tokens: int, max_chars: int, overlap: int) -> None:
        self.count, self.max_tokens, self.max_chars, self.overlap = count, max_tokens, max_chars, overlap
        self.overlap_chars = max_chars * overlap // max_tokens
        self.min_tokens = max_tokens // MIN_SHARE  # a chunk's new text is at least this, but at a section's end
        self.units: list[_Unit] = []
        self.tokens = 0
        self.chars = 0
        self.fresh = 0  # units not yet emitted in any chunk

    def _fits(self, unit: _Unit) -> bool:
        extra = len(unit.text) + (len(unit.sep) if self.units else 0)
        return self.tokens + unit.tokens <= self.max_tokens and self.chars + extra <= self.max_chars

    def _sliver(self) -> bool:
        """The new text waiting is under both minimums (MIN_SHARE of each cap)."""
        fresh = self.units[len(self.units) - self.fresh :]
        chars = sum(len(u.text) + 1 for u in fresh)
        return sum(u.tokens for u in fresh) < self.min_tokens and chars < self.max_chars // MIN_SHARE

    def _push(self, unit: _Unit) -> None:
        self.chars += len(unit.text) + (len(unit.sep) if self.units else 0)
        self.tokens += unit.tokens
        self.units.append(unit)
        self.fresh += 1

    def _drop_first(self) -> None:
        gone = self.units.pop(0)
        self.tokens -= gone.tokens
        self.chars -= len(gone.text) + (len(self.units[0].sep) if self.units else 0)

    def add(self, unit: _Unit) -> Iterator[tuple[str, int]]:
        if self.fresh and not self._fits(unit) and self._sliver():
            # closing now would leave a sliver of new text (a short sentence before a long one): the next
            # sentence's words fill this chunk instead, and the rest starts the next one
            words = list(_counted(_words(unit.text), self.count, self.max_chars))
            if len(words) > 1:
                words[0] = _Unit(words[0].text, words[0].tokens, unit.sep)
                for word in words:
                    yield from self.add(word)
                return
        while self.units and not self._fits(unit):
            if self.fresh:  # new text is waiting: it goes out first
                yield from self._emit()
            else:  # only overlap is left: it gives way to new text
                self._drop_first()
        self._push(unit)

    def _emit(self) -> Iterator[tuple[str, int]]:
        units, carry = self.units, []
        text, tokens = _join(units), self.tokens
        if any(u.sep == "" for u in units[1:]):  # a word cut in pieces counts differently once glued
            tokens = self.count([text])[0]
            first_fresh = len(units) - self.fresh
            while tokens > self.max_tokens and len(units) > 1:
                if len(units) - first_fresh > 1:  # new text goes to the next chunk
                    carry.insert(0, units.pop())
                else:  # or, when only one new unit is left, the overlap goes
                    units.pop(0)
                    first_fresh -= 1
                text = _join(units)
                tokens = self.count([text])[0]
        yield text, tokens
        # the next chunk starts with trailing units within the overlap budget (never the whole chunk); the
        # budget is also a share of the character cap, or chunks cut by characters would step one unit at a time
        kept, kept_chars, back = 0, 0, len(units)
        while (
            back - 1 > 0
            and kept + units[back - 1].tokens <= self.overlap
            and kept_chars + len(units[back - 1].text) + 1 <= self.overlap_chars
        ):
            back -= 1
            kept += units[back].tokens
            kept_chars += len(units[back].text) + 1
        self.units, self.tokens, self.chars, self.fresh = [], 0, 0, 0
        for unit in units[back:]:
            self._push(unit)
        self.fresh = 0
        for unit in carry:  # never dropped: they fitted together in the chunk they come from
            while len(self.units) > self.fresh and not self._fits(unit):
                self._drop_first()
            self._push(unit)

    def finish(self) -> Iterator[tuple[str, int]]:
        while self.fresh:
            yield from self._emit()


def iter_chunks(
    sections: Iterable[Section],
    count: TokenCounter,
    *,
    max_tokens: int = 200,
    overlap: int = 40,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> Iterator[Chunk]:
    """Chunks in document order for every section with text, as a stream."""
    for section in sections:
        packer = _Packer(count, max_tokens, max_chars, overlap)
        for unit in _units(section.text, max_tokens, max_chars, count):
            for text, tokens in packer.add(unit):
                yield Chunk(text, section.page, section.heading, tokens, section.location)
        for text, tokens in packer.finish():
            yield Chunk(text, section.page, section.heading, tokens, section.location)


# --- building blocks shared with the other strategies (chunk_line.py, chunk_semantic.py) ---
Unit = _Unit


def units_within(text: str, max_tokens: int, max_chars: int, count: TokenCounter) -> Iterator[_Unit]:
    """`text`'s sentences (paragraph breaks kept as separators), each within both caps: a longer one is cut
    into words, a longer word into pieces glued back with the separator ""."""
    return _units(text, max_tokens, max_chars, count)


def joined_within(units: Sequence[_Unit], count: TokenCounter, max_tokens: int) -> Iterator[tuple[str, int]]:
    """`units` joined by their separators as one chunk (text, tokens), or as several when a word cut in pieces
    counts more tokens once glued than its pieces did; each part within `max_tokens` (units never split)."""
    text = _join(units)
    tokens = sum(u.tokens for u in units)
    if len(units) > 1 and any(u.sep == "" for u in units[1:]):
        tokens = count([text])[0]
        if tokens > max_tokens:
            half = len(units) // 2
            yield from joined_within(units[:half], count, max_tokens)
            yield from joined_within(units[half:], count, max_tokens)
            return
    yield text, tokens


def chunk_sections(
    sections: Iterable[Section],
    count: TokenCounter,
    *,
    max_tokens: int = 200,
    overlap: int = 40,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> list[Chunk]:
    """Chunks in document order for every section with text (`iter_chunks` as a list)."""
    return list(iter_chunks(sections, count, max_tokens=max_tokens, overlap=overlap, max_chars=max_chars))
