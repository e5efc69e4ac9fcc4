"""The `line` strategy: lines grouped up to the token budget, for receipts, sheets and other line-shaped text.

A section's lines are packed greedily into chunks within `max_tokens` (the embedder's word pieces) and
`max_chars`; a block of lines between blank lines (a sheet's row, a receipt's group of items) stays whole in
one chunk when it fits in one, so a chunk ends at a blank line whenever it can. A line over either cap is cut
like a sentence in chunking.py (at sentence ends, then words, then characters). No overlap: a line repeated
in two chunks would count twice in a sum.

Nothing is dropped: within a line, whitespace runs become one space; lines are joined by a newline and
blocks by a blank line. A chunk never crosses a section and keeps its page, heading and location.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ragchat.documents.chunking.sentences import (
    DEFAULT_MAX_CHARS,
    Chunk,
    TokenCounter,
    Unit,
    joined_within,
    units_within,
)
from ragchat.documents.parsing.parsers import Section

_BLANK = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_LINE_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_COUNT_BATCH = 512  # lines per token-count call


class _Packer:
    """Greedy packing of units (lines, or pieces of an over-long line) within both caps."""

    def __init__(self, count: TokenCounter, max_tokens: int, max_chars: int) -> None:
        self.count, self.max_tokens, self.max_chars = count, max_tokens, max_chars
        self.units: list[Unit] = []
        self.tokens = 0
        self.chars = 0

    def fits(self, units: list[Unit], *, fresh: bool = False) -> bool:
        """Whether `units` fit after what is held (in an empty chunk with `fresh`)."""
        tokens = sum(u.tokens for u in units) + (0 if fresh else self.tokens)
        chars = (0 if fresh else self.chars) + sum(len(u.text) + len(u.sep) for u in units)
        if units and (fresh or not self.units):
            chars -= len(units[0].sep)
        return tokens <= self.max_tokens and chars <= self.max_chars

    def add(self, units: list[Unit]) -> None:
        for unit in units:
            self.chars += len(unit.text) + (len(unit.sep) if self.units else 0)
            self.tokens += unit.tokens
            self.units.append(unit)

    def emit(self) -> Iterator[tuple[str, int]]:
        if self.units:
            yield from joined_within(self.units, self.count, self.max_tokens)
        self.units, self.tokens, self.chars = [], 0, 0

    def greedy(self, unit: Unit) -> Iterator[tuple[str, int]]:
        if self.units and not self.fits([unit]):
            yield from self.emit()
        self.add([unit])


def _lines(text: str) -> Iterator[tuple[str, str]]:
    """(line, separator before it) for every non-blank line: "\\n" inside a block, "\\n\\n" after a blank line."""
    first = True
    for block in _BLANK.split(text):
        sep = "\n\n"
        for raw in block.split("\n"):
            line = _LINE_SPACES.sub(" ", raw).strip()
            if not line:
                continue
            yield line, ("" if first else sep)
            first, sep = False, "\n"


def _line_units(
    lines: Iterable[tuple[str, str]], count: TokenCounter, max_tokens: int, max_chars: int
) -> Iterator[tuple[Unit, bool]]:
    """(unit, whether it starts a block) within both caps, in order, counted in batches; a long line becomes
    several units."""
    batch: list[tuple[str, str]] = []

    def flush() -> Iterator[tuple[Unit, bool]]:
        short = [line for line, _ in batch if len(line) <= max_chars]
        counts = iter(count(short))
        for line, sep in batch:
            starts = sep != "\n"
            tokens = next(counts) if len(line) <= max_chars else max_tokens + 1
            if tokens <= max_tokens:
                yield Unit(line, tokens, sep), starts  # type: ignore[arg-type]
                continue
            for i, piece in enumerate(units_within(line, max_tokens, max_chars, count)):
                yield Unit(piece.text, piece.tokens, sep if i == 0 else piece.sep), starts and i == 0  # type: ignore[arg-type]

    for item in lines:
        batch.append(item)
        if len(batch) >= _COUNT_BATCH:
            yield from flush()
            batch = []
    yield from flush()


def _section_chunks(text: str, count: TokenCounter, max_tokens: int, max_chars: int) -> Iterator[tuple[str, int]]:
    packer = _Packer(count, max_tokens, max_chars)
    block: list[Unit] | None = []  # the current block while it still fits in one chunk; None once it cannot

    for unit, starts in _line_units(_lines(text), count, max_tokens, max_chars):
        if starts:
            if block:  # the previous block, whole: with what is held if it fits there, else in a new chunk
                if packer.units and not packer.fits(block):
                    yield from packer.emit()
                packer.add(block)
            block = []
        if block is None:
            yield from packer.greedy(unit)
            continue
        block.append(unit)
        if not packer.fits(block, fresh=True):  # too big for any one chunk: packed line by line
            pending, block = block, None
            for held in pending:
                yield from packer.greedy(held)
    if block:
        if packer.units and not packer.fits(block):
            yield from packer.emit()
        packer.add(block)
    yield from packer.emit()


def line_chunks(
    sections: Iterable[Section], count: TokenCounter, *, max_tokens: int = 200, max_chars: int = DEFAULT_MAX_CHARS
) -> list[Chunk]:
    """Chunks of whole lines (blank-line blocks kept together when they fit), in document order."""
    out: list[Chunk] = []
    for section in sections:
        for text, tokens in _section_chunks(section.text, count, max_tokens, max_chars):
            out.append(Chunk(text, section.page, section.heading, tokens, section.location))
    return out
