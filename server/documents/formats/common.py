"""What the new formats share: zip containers checked before a library opens them, XML parts counted before a
library builds them, and sections of bounded size with a location.

The libraries (openpyxl, python-pptx, ebooklib) build whole XML trees or whole rows in memory. So before one
touches a file, `open_container` runs the zip checks of `server.documents.limits` (member count, inflated sizes,
compression ratios) and `scan_xml` streams every XML part once through lxml (no entities, DTDs or network),
freeing elements as it goes, under an element budget: what a library then builds is bounded.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from server.documents.limits import (
    Deadline,
    ParseError,
    ParseLimits,
    _zip_kind,  # pyright: ignore[reportPrivateUsage]
    member_size,
    mislabelled,
    open_member,
    open_zip,
    sniff,
    too_many_elements,
)
from server.documents.parsers import Section, _iterparse  # pyright: ignore[reportPrivateUsage]

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
        kind = _zip_kind(data)
        reason = mislabelled(kind, ext) if kind != "a ZIP archive" else f"no {required} inside"
        raise ParseError(f"not a valid {ext} file: {reason}")
    return zf


@dataclass
class XmlCounts:
    """Elements seen while scanning, and the elements of one tag (e.g. spreadsheet cells) per part."""

    elements: int = 0
    tagged: dict[str, int] = field(default_factory=dict)


def scan_xml(
    zf: zipfile.ZipFile,
    limits: ParseLimits,
    deadline: Deadline,
    label: str,
    *,
    names: Iterable[str] | None = None,
    count_tags: tuple[str, ...] = (),
    allow_doctype: bool = False,
) -> XmlCounts:
    """Stream the XML parts (`names`, default: every part with an XML-like suffix) under the element budget.

    Elements named in `count_tags` (local names, e.g. "c" for cells) are also counted per part. A DOCTYPE is refused
    (Office parts never have one; an entity bomb does), or with `allow_doctype` (XHTML) one declaring entities;
    malformed XML is left to the library.
    """
    from lxml import etree  # pyright: ignore[reportAttributeAccessIssue]  (no stubs for the C module)

    budget = limits.max_elements * XML_ELEMENTS_PER_UNIT
    counts = XmlCounts()
    wanted = names if names is not None else (n for n in zf.namelist() if n.lower().endswith(XML_SUFFIXES))
    for name in wanted:
        if member_size(zf, name) is None:
            continue
        tagged = 0
        first = True
        try:
            for event, elem in _iterparse(open_member(zf, name), ("start", "end")):
                if event == "start":
                    if first:
                        first = False
                        _check_doctype(elem, allow_doctype, label, name)
                    counts.elements += 1
                    if counts.elements > budget:
                        raise ParseError(
                            f"{label} has more than {budget:,} XML elements ({XML_ELEMENTS_PER_UNIT} × MAX_ELEMENTS "
                            f"{limits.max_elements:,}, stopped in {name!r}); split it into smaller files"
                        )
                    if counts.elements % 8192 == 0:
                        deadline.check(f"XML element {counts.elements:,} ({name})")
                    continue
                if count_tags and isinstance(elem.tag, str) and elem.tag.rpartition("}")[2] in count_tags:
                    tagged += 1
                _free(elem)
        except ParseError:
            raise
        except etree.XMLSyntaxError:
            pass  # the library decides what it makes of a malformed part; what it could build was counted
        if tagged:
            counts.tagged[name] = tagged
    return counts


def _check_doctype(root: Any, allowed: bool, label: str, name: str) -> None:
    info = root.getroottree().docinfo
    if not info.doctype:
        return
    if not allowed:
        raise ParseError(f"{label} part {name!r} declares a DTD, which it never needs (an entity bomb?); refused")
    dtd = info.internalDTD
    if dtd is not None and next(iter(dtd.iterentities()), None) is not None:
        raise ParseError(f"{label} part {name!r} declares XML entities (an entity bomb?); refused")


def _free(elem: Any) -> None:
    """Clear a finished element and drop the finished siblings before it (iterparse keeps them otherwise)."""
    elem.clear()
    parent = elem.getparent()
    if parent is not None:
        while elem.getprevious() is not None:
            del parent[0]


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
