"""What the new formats share: zip containers checked before a library opens them, XML parts counted before a
library builds them, and sections of bounded size with a location.

The libraries (openpyxl, python-pptx; lxml for .epub) build whole XML trees or whole rows in memory. So before one
touches a file, `open_container` runs the zip checks of `ragchat.documents.parsing.limits` (member count,
inflated sizes, compression ratios) and `scan_xml` counts the elements of every XML part, streamed,
under an element budget,
and refuses DTDs: what a library then builds is bounded.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ragchat.documents.parsing.document import Section
from ragchat.documents.parsing.limits import (
    Deadline,
    ParseError,
    ParseLimits,
    member_size,
    mislabelled,
    open_member,
    open_zip,
    sniff,
    too_many_elements,
    zip_kind,
)

# XML elements per MAX_ELEMENTS unit (a spreadsheet cell is 2-3 elements, a slide paragraph 3-6): the budget of
# all XML parts of one file together is this many times MAX_ELEMENTS.
XML_ELEMENTS_PER_UNIT = 10
XML_SUFFIXES = (".xml", ".rels", ".xhtml", ".html", ".htm", ".opf", ".ncx", ".vml")
SECTION_CHARS = 700  # a transcript's or a table's section: well under one chunk (about 150 tokens)


def open_container(data: bytes, limits: ParseLimits, ext: str, required: str, label: str) -> zipfile.ZipFile:
    """The zip-based file after the zip checks, if it holds `required` (else a ParseError naming what it is)."""
    if not data.startswith(b"PK\x03\x04"):
        kind = sniff(data)
        raise ParseError(mislabelled(kind, ext) if kind else f"not a valid {ext} file: it is not a ZIP container")
    try:
        zf = open_zip(data, limits, label)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ParseError(f"not a valid {ext} file: {exc}") from exc
    if member_size(zf, required) is None:
        kind = zip_kind(data)
        reason = mislabelled(kind, ext) if kind != "a ZIP archive" else f"no {required} inside"
        raise ParseError(f"not a valid {ext} file: {reason}")
    return zf


@dataclass
class XmlCounts:
    """Elements seen while scanning (an upper bound: every "<" before a name), and per counted tag."""

    elements: int = 0
    tagged: dict[str, int] = field(default_factory=dict)


_ELEMENT = re.compile(rb"<[A-Za-z_]")
_DOCTYPE = re.compile(rb"<!DOCTYPE")
_ENTITY = re.compile(rb"<!ENTITY")
_SCAN_BLOCK = 1 << 20


def scan_xml(
    zf: zipfile.ZipFile,
    limits: ParseLimits,
    deadline: Deadline,
    label: str,
    *,
    count_tags: dict[str, str] | None = None,
    allow_doctype: bool = False,
) -> XmlCounts:
    """Count the elements of every XML-like part, streamed in blocks at C speed, before a library parses them.

    All parts together may hold `XML_ELEMENTS_PER_UNIT` × MAX_ELEMENTS elements; each tag of `count_tags`
    (local name -> what it is, e.g. {"c": "cells"}) at most MAX_ELEMENTS. A DOCTYPE is refused (Office parts
    never have one; an entity bomb does), or with `allow_doctype` (XHTML) any entity declaration. In XML a "<"
    before a name always opens an element (text and attributes escape it), so the count is an upper bound.
    """
    budget = limits.max_elements * XML_ELEMENTS_PER_UNIT
    tags = {
        tag: re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?" + re.escape(tag.encode()) + rb"[\s/>]")
        for tag in (count_tags or {})
    }
    refused = _ENTITY if allow_doctype else _DOCTYPE
    counts = XmlCounts()
    for name in zf.namelist():
        if not name.lower().endswith(XML_SUFFIXES):
            continue
        for block in _blocks(zf, name):
            if refused.search(block):
                what = "XML entities" if allow_doctype else "a DTD, which it never needs"
                raise ParseError(f"{label} part {name!r} declares {what} (an entity bomb?); refused")
            counts.elements += len(_ELEMENT.findall(block))
            if counts.elements > budget:
                raise ParseError(
                    f"{label} has more than {budget:,} XML elements ({XML_ELEMENTS_PER_UNIT} × MAX_ELEMENTS "
                    f"{limits.max_elements:,}, stopped in {name!r}); split it into smaller files"
                )
            for tag, pattern in tags.items():
                counts.tagged[tag] = counts.tagged.get(tag, 0) + len(pattern.findall(block))
                if counts.tagged[tag] > limits.max_elements:
                    raise too_many_elements(limits, (count_tags or {})[tag])
            deadline.check(f"XML element {counts.elements:,} ({name})")
    return counts


def _blocks(zf: zipfile.ZipFile, name: str) -> Iterator[bytes]:
    """A part's bytes in blocks of about `_SCAN_BLOCK`, each cut just before a "<" (no tag spans two)."""
    reader = open_member(zf, name)
    carry = b""
    while True:
        block = reader.read(_SCAN_BLOCK)
        if not block:
            if carry:
                yield carry
            return
        data = carry + block
        cut = data.rfind(b"<")
        if cut <= 0:  # no "<" to cut at (or only the first byte): a tag is miscounted at most
            yield data
            carry = b""
        else:
            yield data[:cut]
            carry = data[cut:]


class Grouper:
    """Collects pieces of text (cues, rows) into sections of at most about `SECTION_CHARS` characters; each
    section gets the location `locate(first, last)` of its first and last piece (a piece over the cap is a
    section alone). `head` (a table's header row) starts every section."""

    def __init__(
        self,
        locate: Callable[[Any, Any], dict[str, Any]],
        *,
        heading: str | None = None,
        head: str = "",
        joiner: str = "\n\n",
    ) -> None:
        self.locate, self.heading, self.head, self.joiner = locate, heading, head, joiner
        self.sections: list[Section] = []
        self._parts: list[str] = []
        self._pieces = 0
        self._size = 0
        self._first: Any = None
        self._last: Any = None

    def add(self, text: str, where: Any, joiner: str | None = None) -> None:
        """Add a piece; `joiner` (default: the grouper's) separates it from the piece before it."""
        sep = self.joiner if joiner is None else joiner
        if self._pieces and self._size + len(sep) + len(text) > SECTION_CHARS:
            self.flush()
        if not self._pieces:
            self._first = where
            self._parts = [self.head, self.joiner] if self.head else []
            self._size = len(self.head) + len(self.joiner) if self.head else 0
        else:
            self._parts.append(sep)
            self._size += len(sep)
        self._parts.append(text)
        self._size += len(text)
        self._pieces += 1
        self._last = where

    def flush(self) -> None:
        if self._pieces:
            location = self.locate(self._first, self._last)
            self.sections.append(Section(text="".join(self._parts), heading=self.heading, location=location))
        self._parts, self._pieces, self._size = [], 0, 0

    def finish(self) -> list[Section]:
        self.flush()
        return self.sections


def check_count(count: int, limits: ParseLimits, what: str) -> None:
    if count > limits.max_elements:
        raise too_many_elements(limits, what)
