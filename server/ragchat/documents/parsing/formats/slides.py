"""PowerPoint .pptx (python-pptx, after the zip checks and an XML element count): one section per slide.

A slide's section has its title as heading (and first line), then the text of its shapes in order (grouped
shapes included), its tables (cells joined by " | ", a row per paragraph) and its speaker notes ("Notes: ..."),
and is located by `{"slide": n}` (1-based). Paragraphs, table cells and shapes together count toward MAX_ELEMENTS.
"""

from __future__ import annotations

from io import BytesIO
from typing import Any

from ragchat.documents.parsing.document import ParsedDocument, Section, make_document
from ragchat.documents.parsing.formats.common import open_container, scan_xml
from ragchat.documents.parsing.limits import Deadline, ParseError, ParseLimits, too_many_elements
from ragchat.documents.parsing.text import one_line, short_error


class _Counter:
    def __init__(self, limits: ParseLimits) -> None:
        self.limits, self.n = limits, 0

    def __call__(self, k: int = 1) -> None:
        self.n += k
        if self.n > self.limits.max_elements:
            raise too_many_elements(self.limits, "shapes, paragraphs and table cells")


def _frame_paragraphs(frame: Any, count: _Counter) -> list[str]:
    out = []
    for paragraph in frame.paragraphs:
        count()
        text = one_line(paragraph.text)
        if text:
            out.append(text)
    return out


def _shape_texts(shapes: Any, skip: Any, count: _Counter) -> list[str]:
    """Text of shapes in order; group shapes are walked without recursion (nesting depth is unbounded)."""
    out: list[str] = []
    stack = [iter(shapes)]
    while stack:
        shape = next(stack[-1], None)
        if shape is None:
            stack.pop()
            continue
        count()
        if skip is not None and shape.shape_id == skip:
            continue
        if hasattr(shape, "shapes"):  # a group shape
            stack.append(iter(shape.shapes))
        elif getattr(shape, "has_table", False):
            for row in shape.table.rows:
                cells = list(row.cells)
                count(len(cells))
                line = " | ".join(t for t in (one_line(c.text) for c in cells) if t)
                if line:
                    out.append(line)
        elif getattr(shape, "has_text_frame", False):
            out += _frame_paragraphs(shape.text_frame, count)
    return out


def parse_pptx(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    label = "the .pptx file"
    zf = open_container(data, limits, ".pptx", "ppt/presentation.xml", label)
    scan_xml(zf, limits, deadline, label)  # python-pptx builds every XML part as a tree when it opens the file
    from pptx import Presentation

    try:
        deck = Presentation(BytesIO(data))
        sections: list[Section] = []
        count = _Counter(limits)
        title = one_line(deck.core_properties.title or "")
        author = one_line(deck.core_properties.author or "")
        number = 0
        for number, slide in enumerate(deck.slides, start=1):
            deadline.check(f"slide {number:,}")
            heading_shape = slide.shapes.title
            heading = one_line(heading_shape.text_frame.text) if heading_shape is not None else ""
            parts = _shape_texts(slide.shapes, heading_shape.shape_id if heading_shape is not None else None, count)
            if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
                notes = " ".join(_frame_paragraphs(slide.notes_slide.notes_text_frame, count))
                if notes:
                    parts.append(f"Notes: {notes}")
            if heading:  # also in the text: a slide's title is often most of what it says
                parts.insert(0, heading)
            if parts:
                location = {"slide": number}
                sections.append(Section(text="\n\n".join(parts), heading=heading or None, location=location))
    except ParseError:
        raise
    except Exception as exc:  # python-pptx raises many types on malformed parts
        raise ParseError(f"not a valid .pptx file: {short_error(exc)}") from exc
    if not sections:
        raise ParseError("the presentation has no text on any slide")
    first_heading = next((s.heading for s in sections if s.heading), "")
    metadata: dict[str, Any] = {"slides": number} | ({"author": author} if author else {})
    return make_document(title or first_heading or stem, sections, metadata)
