"""E-books: .epub (ebooklib, after the zip checks and an XML element count) -> sections per chapter.

Chapters are the spine's documents in reading order; each one's title comes from the table of contents (EPUB 3
nav or EPUB 2 NCX), else from its own <title>/<h1>, else its file name. Its text is read by the HTML parser of
`ragchat.documents.parsing.parsers` (headings, tables, element cap), and every section is headed and located by the
chapter's title: `{"chapter": title}`.

ebooklib reads every part of the book into memory when it opens it: the zip checks bound those bytes
(MAX_INFLATED_MB) and the element count bounds the trees it builds of the package document and the nav, so
ebooklib is used rather than walking the spine with lxml ourselves. An internal DTD declaring entities is refused.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from io import BytesIO
from typing import Any

from ragchat.documents.parsing.document import ParsedDocument, Section, make_document
from ragchat.documents.parsing.formats.common import XML_ELEMENTS_PER_UNIT, open_container, scan_xml
from ragchat.documents.parsing.formats.html import TAG_START_RE, parse_html
from ragchat.documents.parsing.limits import Deadline, ParseError, ParseLimits
from ragchat.documents.parsing.text import one_line, short_error

_MAX_CHAPTER_TITLE = 200


def _toc_entries(toc: Any) -> Iterator[tuple[str, str]]:
    """(href without fragment, title) in table-of-contents order; nesting walked without recursion."""
    from ebooklib import epub

    stack: list[Iterator[Any]] = [iter(toc or ())]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        if isinstance(entry, tuple | list) and len(entry) == 2:
            head, children = entry
            if isinstance(head, epub.Section | epub.Link) and head.href:
                yield str(head.href).partition("#")[0], one_line(head.title)
            stack.append(iter(children or ()))
        elif isinstance(entry, epub.Link | epub.Section) and entry.href:
            yield str(entry.href).partition("#")[0], one_line(entry.title)


def _chapter_title(toc: dict[str, str], name: str, parsed_title: str) -> str:
    title = toc.get(name) or parsed_title or name.rsplit("/", 1)[-1]
    return title[:_MAX_CHAPTER_TITLE]


def parse_epub(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    label = "the .epub file"
    zf = open_container(data, limits, ".epub", "META-INF/container.xml", label)
    scan_xml(zf, limits, deadline, label, allow_doctype=True)
    from bs4 import XMLParsedAsHTMLWarning
    from ebooklib import ITEM_DOCUMENT, epub

    try:
        book = epub.read_epub(BytesIO(data), {"ignore_ncx": True})
        toc: dict[str, str] = {}
        for href, title in _toc_entries(book.toc):
            if title:
                toc.setdefault(href, title)
        items = [book.get_item_with_id(idref) for idref, _linear in book.spine]
        chapters = [i for i in items if i is not None and i.get_type() == ITEM_DOCUMENT]
        chapters = [i for i in chapters if not isinstance(i, epub.EpubNav)]
        book_title = one_line(book.title or "")
        creators = book.get_metadata("DC", "creator")
        author = one_line(str(creators[0][0] or "")) if creators else ""
    except ParseError:
        raise
    except Exception as exc:  # ebooklib raises many types on malformed books
        raise ParseError(f"not a valid .epub file: {short_error(exc)}") from exc

    sections: list[Section] = []
    tags = 0
    budget = limits.max_elements * XML_ELEMENTS_PER_UNIT
    for number, item in enumerate(chapters, start=1):
        deadline.check(f"chapter {number:,} of {len(chapters):,}")
        content = item.get_content() or b""
        tags += len(TAG_START_RE.findall(content))
        if tags > budget:
            raise ParseError(
                f"{label} has more than {budget:,} HTML elements in its chapters ({XML_ELEMENTS_PER_UNIT} × "
                f"MAX_ELEMENTS {limits.max_elements:,}); split it into smaller files"
            )
        if not content.strip():
            continue
        with warnings.catch_warnings():  # XHTML read by the HTML parser is what we mean
            warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
            chapter = parse_html(content, "", limits, deadline)
        title = _chapter_title(toc, item.get_name(), chapter.title)
        location = {"chapter": title}
        sections += [Section(text=s.text, heading=title, location=location) for s in chapter.sections if s.text]
    if not sections:
        raise ParseError("the e-book has no text in its chapters (images only, or DRM-protected?)")
    metadata = {"chapters": len(chapters)} | ({"author": author} if author else {})
    return make_document(book_title or stem, sections, metadata)
