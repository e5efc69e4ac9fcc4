"""Word (.docx): sections by heading style, streamed from the zip under the element budget."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from typing import Any

from ragchat.documents.parsing.document import ParsedDocument, Section, SectionBuilder, make_document
from ragchat.documents.parsing.limits import (
    MB,
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
from ragchat.documents.parsing.text import (
    one_line,
    short_error,
)

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_W_P, _W_TC, _W_TR, _W_TBL, _W_R, _W_T = (_W + t for t in ("p", "tc", "tr", "tbl", "r", "t"))
_W_PSTYLE, _W_STYLE, _W_NAME = _W + "pStyle", _W + "style", _W + "name"
_W_VAL, _W_STYLE_ID, _W_TYPE, _W_DEFAULT = _W + "val", _W + "styleId", _W + "type", _W + "default"
_RUN_CHARS = {_W + "tab": "\t", _W + "ptab": "\t", _W + "br": "\n", _W + "cr": "\n", _W + "noBreakHyphen": "-"}
_DOCX_PARTS = ("word/document.xml", "word/styles.xml", "docProps/core.xml")
_DOCX_NOT_VALID = (
    "not a valid DOCX file ({}); if it is an old .doc file, save it as .docx (Word or LibreOffice) and upload again"
)


def _iterparse(source: Any, events: tuple[str, ...], tag: Any = None) -> Iterator[tuple[str, Any]]:
    """lxml's streaming parser with entities, DTDs and the network off (no billion laughs, no XXE)."""
    from lxml import etree  # pyright: ignore[reportAttributeAccessIssue]  (no stubs for the C module)

    return etree.iterparse(
        source, events=events, tag=tag, resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
    )


def _docx_styles(zf: zipfile.ZipFile) -> tuple[dict[str, str], str]:
    """Paragraph style id -> name, and the default paragraph style's name (streamed)."""
    names: dict[str, str] = {}
    default = ""
    if member_size(zf, "word/styles.xml") is None:
        return names, default
    for _, elem in _iterparse(open_member(zf, "word/styles.xml"), ("end",), _W_STYLE):
        name_el = elem.find(_W_NAME)
        name = str(name_el.get(_W_VAL) or "") if name_el is not None else ""
        if elem.get(_W_TYPE) == "paragraph":
            names[str(elem.get(_W_STYLE_ID) or "")] = name
            if elem.get(_W_DEFAULT) in ("1", "true", "on"):
                default = name
        elem.clear()
    return names, default


def _docx_core(zf: zipfile.ZipFile) -> tuple[str, str]:
    """(title, author) from docProps/core.xml; a missing or oversized part gives empty strings."""
    size = member_size(zf, "docProps/core.xml")
    if size is None or size > MB:
        return "", ""
    found = {"title": "", "creator": ""}
    for _, elem in _iterparse(open_member(zf, "docProps/core.xml"), ("end",)):
        local = str(elem.tag).rpartition("}")[2]
        if local in found and not found[local] and not elem.getchildren():
            found[local] = one_line(elem.text)
    return found["title"], found["creator"]


def _docx_level(style_name: str) -> int | None:
    """0 for Title, N for "heading N", None for body text."""
    style = style_name.strip()
    if style.lower() == "title":
        return 0
    match = re.fullmatch(r"heading\s*(\d)", style, re.I)
    return int(match.group(1)) if match else None


def _docx_body(zf: zipfile.ZipFile, limits: ParseLimits, deadline: Deadline) -> tuple[list[Section], str]:
    """Stream word/document.xml: paragraphs (with heading styles) and table rows; memory stays flat.

    Paragraphs and table cells together may not exceed MAX_ELEMENTS; processed elements are cleared.
    """
    styles, default_style = _docx_styles(zf)
    out, first_heading = SectionBuilder(), ""
    paras: list[list[str]] = []  # text of the open paragraphs (a text box nests one inside a run)
    styles_open: list[str] = []
    rows: list[list[str]] = []  # per open table: finished row strings
    cells: list[list[str]] = []  # per open row: finished cell texts
    cell_paras: list[list[str]] = []  # per open cell: its paragraphs
    blocks = events = 0
    for event, elem in _iterparse(open_member(zf, "word/document.xml"), ("start", "end")):
        events += 1
        if events % 4096 == 0:
            deadline.check(f"XML element {events:,} of word/document.xml")
        tag = elem.tag
        if event == "start":
            if tag == _W_P or tag == _W_TC:
                blocks += 1
                if blocks > limits.max_elements:
                    raise too_many_elements(limits, "paragraphs and table cells")
            if tag == _W_P:
                paras.append([])
                styles_open.append(default_style)
            elif tag == _W_TBL:
                rows.append([])
            elif tag == _W_TR:
                cells.append([])
            elif tag == _W_TC:
                cell_paras.append([])
            continue
        if tag == _W_T:
            if paras and elem.text:
                paras[-1].append(elem.text)
        elif tag in _RUN_CHARS:
            parent = elem.getparent()
            if paras and parent is not None and parent.tag == _W_R:
                paras[-1].append(_RUN_CHARS[tag])
        elif tag == _W_PSTYLE:
            if styles_open:
                styles_open[-1] = styles.get(str(elem.get(_W_VAL) or ""), "")
        elif tag == _W_P and paras:
            text, style = "".join(paras.pop()), styles_open.pop()
            if cell_paras:
                cell_paras[-1].append(text)
            else:
                level = _docx_level(style)
                if level is None:
                    out.add(text)
                else:
                    if level <= 1 and not first_heading:
                        first_heading = one_line(text)
                    out.heading(level, text)
            _drop(elem)
        elif tag == _W_TC and cell_paras and cells:
            cells[-1].append(one_line("\n".join(cell_paras.pop())))
        elif tag == _W_TR and cells and rows:
            rows[-1].append(" | ".join(c for c in cells.pop() if c))
            _drop(elem)
        elif tag == _W_TBL and rows:
            table = "\n".join(r for r in rows.pop() if r)
            if cell_paras:  # a table inside a cell: its rows become the cell's text
                cell_paras[-1].append(table)
            else:
                out.add(table)
            _drop(elem)
    return out.finish(), first_heading


def _drop(elem: Any) -> None:
    """Free a processed element and the siblings before it (iterparse keeps the tree otherwise)."""
    elem.clear()
    parent = elem.getparent()
    if parent is not None:
        while elem.getprevious() is not None:
            del parent[0]


def parse_docx(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    if not data.startswith(b"PK\x03\x04"):
        kind = sniff(data)
        reason = mislabelled(kind, ".docx") if kind else "it is not a ZIP-based Word file"
        raise ParseError(_DOCX_NOT_VALID.format(reason))
    try:
        zf = open_zip(data, limits, "the .docx file")
        if member_size(zf, "word/document.xml") is None:
            kind = zip_kind(data)
            reason = mislabelled(kind, ".docx") if kind != "a ZIP archive" else "no word/document.xml inside"
            raise ParseError(_DOCX_NOT_VALID.format(reason))
        title, author = _docx_core(zf)
        sections, first_heading = _docx_body(zf, limits, deadline)
    except ParseError:
        raise
    except Exception as exc:  # zip errors, malformed XML...
        raise ParseError(_DOCX_NOT_VALID.format(short_error(exc))) from exc
    return make_document(title or first_heading or stem, sections, {"author": author} if author else {})
