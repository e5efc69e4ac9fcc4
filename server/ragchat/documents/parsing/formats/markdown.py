"""Markdown (.md, .markdown): sections by heading path, read in bounded batches."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ragchat.documents.parsing.document import ParsedDocument, SectionBuilder, make_document
from ragchat.documents.parsing.formats.html import html_fragment_text
from ragchat.documents.parsing.limits import (
    Deadline,
    ParseLimits,
    too_many_elements,
)
from ragchat.documents.parsing.text import (
    decode_text,
    normalize_newlines,
    one_line,
)


def _md_inline(children: Iterable[Any]) -> str:
    """Plain text of markdown-it inline children (HTML tags dropped, image alt text kept)."""
    out: list[str] = []
    for tok in children:
        if tok.type in ("text", "code_inline"):
            out.append(tok.content)
        elif tok.type == "softbreak":
            out.append(" ")
        elif tok.type == "hardbreak":
            out.append("\n")
        elif tok.type == "image":
            out.append(_md_inline(tok.children or []))
    return "".join(out)


_MD_BATCH_LINES = 2000
_MD_BATCH_CHARS = 64 * 1024
_MD_LONG_LINE = 16 * 1024


def _md_lines(text: str) -> Iterator[str]:
    """Lines of `text`; a line over _MD_LONG_LINE is cut at a space (a soft break: it reads as that space)."""
    pos = 0
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        while end - pos > _MD_LONG_LINE:
            cut = text.rfind(" ", pos + 1, pos + _MD_LONG_LINE)
            if cut < 0:  # a run with no space: cut anyway
                yield text[pos : pos + _MD_LONG_LINE]
                pos += _MD_LONG_LINE
            else:
                yield text[pos:cut]
                pos = cut + 1
        yield text[pos:end]
        pos = end + 1


def _md_batches(text: str) -> Iterator[str]:
    """Runs of about _MD_BATCH_LINES lines or _MD_BATCH_CHARS, cut at a blank line outside a code fence if any.

    markdown-it builds every token of its input up front (~400 bytes each); batches keep that bounded.
    A batch forced to end inside a fence reopens it in the next one.
    """
    batch: list[str] = []
    size = 0
    fence = ""
    for line in _md_lines(text):
        stripped = line.lstrip(" ")
        if fence:
            fence = "" if stripped.startswith(fence) else fence
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        batch.append(line)
        size += len(line) + 1
        lines = len(batch)
        if (lines >= _MD_BATCH_LINES or size >= _MD_BATCH_CHARS) and (
            (not fence and not stripped.strip()) or lines >= 2 * _MD_BATCH_LINES or size >= 2 * _MD_BATCH_CHARS
        ):
            yield "\n".join(batch)
            batch, size = ([fence] if fence else []), 0
    if batch:
        yield "\n".join(batch)


def _md_tokens(md: Any, text: str, limits: ParseLimits, deadline: Deadline) -> Iterator[Any]:
    """Block tokens of `text`, parsed batch by batch; more than MAX_ELEMENTS in all is refused."""
    seen = 0
    for batch in _md_batches(text):
        tokens = md.parse(batch)
        seen += len(tokens)
        if seen > limits.max_elements:
            raise too_many_elements(limits, "Markdown blocks")
        deadline.check(f"Markdown block {seen:,}")
        yield from tokens


def parse_markdown(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    from markdown_it import MarkdownIt

    text, encoding = decode_text(data, ".md")
    md = MarkdownIt("commonmark").enable("table")
    out, title = SectionBuilder(), None
    cells: list[str] = []
    rows: list[str] = []
    level = 0  # > 0 while inside a heading
    in_cell = False
    for tok in _md_tokens(md, normalize_newlines(text), limits, deadline):
        kind = tok.type
        if kind == "heading_open":
            level = int(tok.tag[1])
        elif kind == "heading_close":
            level = 0
        elif kind in ("th_open", "td_open"):
            in_cell = True
        elif kind in ("th_close", "td_close"):
            in_cell = False
        elif kind == "tr_close":
            rows.append(" | ".join(c for c in cells if c))
            cells = []
        elif kind == "table_close":
            out.add("\n".join(r for r in rows if r))
            rows = []
        elif kind == "inline":
            content = _md_inline(tok.children or [])
            if level:
                title = title or (one_line(content) if level == 1 else None)
                out.heading(level, content)
            elif in_cell:
                cells.append(one_line(content))
            else:
                out.add(content)
        elif kind in ("fence", "code_block"):
            out.add(tok.content, code=True)
        elif kind == "html_block":
            out.add(html_fragment_text(tok.content))
    return make_document(title or stem, out.finish(), {"encoding": encoding})
