"""Plain text (.txt): decoded, split on blank lines into sections of bounded size."""

from __future__ import annotations

from ragchat.documents.parsing.document import ParsedDocument, Section, make_document
from ragchat.documents.parsing.limits import (
    Deadline,
    ParseLimits,
)
from ragchat.documents.parsing.text import (
    BLANK_LINES_RE,
    add_paragraph,
    decode_text,
    normalize_newlines,
)

_TEXT_SECTION_CHARS = 1 << 20  # a long text file becomes sections of about this size: no second whole copy


def parse_txt(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    text, encoding = decode_text(data, ".txt")
    text = normalize_newlines(text)  # the decoded copy goes: one copy of the text at a time, plus the sections
    sections: list[Section] = []
    paras: list[str] = []
    size = 0
    first = ""
    start = 0
    for match in BLANK_LINES_RE.finditer(text):
        size += add_paragraph(paras, text[start : match.start()])
        start = match.end()
        if size >= _TEXT_SECTION_CHARS:
            first = first or paras[0]
            sections.append(Section(text="\n\n".join(paras)))
            paras, size = [], 0
            deadline.check(f"character {start:,}")
    add_paragraph(paras, text[start:])
    del text
    if paras:
        first = first or paras[0]
        sections.append(Section(text="\n\n".join(paras)))
    first = first.split("\n", 1)[0].strip()
    title = first if 0 < len(first) <= 120 else stem
    return make_document(title, sections, {"encoding": encoding})
