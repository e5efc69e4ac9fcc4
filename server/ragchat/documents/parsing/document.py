"""The parsed document every format parser returns (sections with page, heading path and location), and
the two ways parsers build it: `make_document` (a capped one-line title) and `SectionBuilder` (paragraphs
grouped under a heading path)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragchat.documents.parsing.limits import (
    ParseError,
)
from ragchat.documents.parsing.text import clean, one_line

if TYPE_CHECKING:
    from ragchat.documents.parsing.ocr import PageLayout


class UnsupportedFormat(ParseError):
    """The file type (extension) is not supported."""


@dataclass(frozen=True)
class Section:
    """A run of text sharing one page (PDF) or one heading path, and where it sits in its source (`location`:
    a transcript's time span, a sheet's rows, a slide, a chapter; JSON-serializable). A page read by OCR
    also carries its lines with their boxes (`ocr`: stored beside the chunks for the scan viewer, never in one)."""

    text: str
    page: int | None = None
    heading: str | None = None
    location: dict[str, Any] | None = None
    ocr: PageLayout | None = None


@dataclass(frozen=True)
class ParsedDocument:
    """A parsed document: title, sections in order, JSON-serializable metadata."""

    title: str
    sections: list[Section]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BeirRecord:
    """One record of a BEIR `corpus.jsonl`."""

    source_id: str
    title: str
    text: str


MAX_TITLE = 200


def make_document(title: str, sections: list[Section], metadata: dict[str, Any]) -> ParsedDocument:
    """Build a ParsedDocument with a one-line, length-capped title."""
    return ParsedDocument(title=one_line(title)[:MAX_TITLE], sections=sections, metadata=metadata)


class SectionBuilder:
    """Accumulates paragraphs into sections keyed by a heading path (Markdown/HTML/DOCX)."""

    def __init__(self) -> None:
        self.sections: list[Section] = []
        self._paras: list[str] = []
        self._heading: str | None = None
        self._stack: list[tuple[int, str]] = []

    def add(self, text: str, *, code: bool = False) -> None:
        """Add a paragraph (code keeps its spacing; other text is trimmed per line)."""
        text = clean(text, collapse=not code)
        text = text if code else "\n".join(line.strip() for line in text.split("\n") if line.strip())
        if text.strip():
            self._paras.append(text)

    def heading(self, level: int, text: str) -> None:
        """Start a new section; a heading pops headings of the same or deeper level."""
        text = one_line(text)
        if not text:
            return
        self._flush()
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, text))
        self._heading = " > ".join(t for _, t in self._stack)

    def _flush(self) -> None:
        if self._paras:
            self.sections.append(Section(text="\n\n".join(self._paras), heading=self._heading))
        self._paras = []

    def finish(self) -> list[Section]:
        self._flush()
        return self.sections
