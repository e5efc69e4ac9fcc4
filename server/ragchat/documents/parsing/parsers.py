"""Uploaded file bytes -> structured plain text (sections with page / heading path).

User-caused failures raise `ParseError`; its message is shown as the document's failure reason.
"""

from __future__ import annotations

import codecs
import json
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any

from ragchat.documents.parsing.limits import (
    MB,
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

__all__ = ["ParseError", "ParseLimits"]


class UnsupportedFormat(ParseError):
    """The file type (extension) is not supported."""


@dataclass(frozen=True)
class Section:
    """A run of text sharing one page (PDF) or one heading path, and where it sits in its source (`location`:
    a transcript's time span, a sheet's rows, a slide, a chapter; JSON-serializable)."""

    text: str
    page: int | None = None
    heading: str | None = None
    location: dict[str, Any] | None = None


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


CONTENT_TYPES: dict[str, str] = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".jsonl": "application/x-ndjson",
    ".vtt": "text/vtt",
    ".srt": "application/x-subrip",
    ".csv": "text/csv",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".epub": "application/epub+zip",
}
SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(CONTENT_TYPES)

_MAX_TITLE = 200
_PLACEHOLDERS = {"untitled", "anonymous", "unknown", "unspecified"}  # e.g. reportlab defaults
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # keeps \t and \n
_GARBAGE_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ufffd]")  # Cc except \t \n \f \r
_COMMON_ENCODINGS = re.compile(
    r"cp125\d|iso8859_\d+|latin_1|koi8_\w+|cp874|cp93[26]|cp949|cp950|shift_jis\w*|euc_\w+|gb\w+|big5\w*|tis_620"
)
_BINARY_RE = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")
_SPACES_RE = re.compile(r" {2,}")
_BLANK_LINES_RE = re.compile(r"\n[ \t]*\n\s*")
_HYPHEN_RE = re.compile(r"([^\W\d_]{2})-[ \t]*\n[ \t]*([^\W\d_]+)")
_NOT_TEXT = (
    "file does not look like text (it contains binary data); "
    "upload plain text saved as UTF-8, or use the right extension (.pdf, .docx, ...)"
)
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _split_name(filename: str) -> tuple[str, str]:
    """Return (lower-cased extension incl. dot, stem) of the last path component."""
    name = re.split(r"[\\/]", filename)[-1]
    stem, dot, ext = name.rpartition(".")
    return ("." + ext.lower(), stem) if dot and stem else ("", name)


def _normalize_newlines(text: str) -> str:
    """CRLF/CR, form feeds and Unicode line separators -> "\n"."""
    return re.sub(r"\r\n?|[\f\v\x1c-\x1e\x85\u2028\u2029]", "\n", text)


def _clean(text: str, *, collapse: bool = True) -> str:
    """Strip control chars, (optionally) collapse spaces, strip line ends and outer blank lines."""
    text = _CONTROL_RE.sub("", _normalize_newlines(text))
    if collapse:
        text = _SPACES_RE.sub(" ", text)
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def _paragraphs(text: str) -> list[str]:
    """Split text on blank lines into cleaned, non-empty paragraphs."""
    parts = (_clean(p).strip() for p in _BLANK_LINES_RE.split(_normalize_newlines(text)))
    return [p for p in parts if p]


def _one_line(text: str | None) -> str:
    """Collapse all whitespace (titles, headings, table cells)."""
    return " ".join(_CONTROL_RE.sub(" ", text or "").split())


def _dehyphenate(text: str) -> str:
    """Join words split by a line-break hyphen ("exam-\\nple" -> "example") when clearly so."""
    return _HYPHEN_RE.sub(lambda m: m[1] + m[2] if m[2][0].islower() else m[0], _normalize_newlines(text))


def _short(exc: BaseException) -> str:
    """First line of an exception message, for user-facing errors."""
    msg = (str(exc).strip().splitlines() or [""])[0][:200]
    return msg or type(exc).__name__


def _placeholder(value: str) -> bool:
    """A tool's stand-in for no value: "(anonymous)", "Untitled", "[unknown]", or nothing but punctuation."""
    return value.strip(" ()[]<>{}-_.\"'").lower() in _PLACEHOLDERS | {""}


def _doc(title: str, sections: list[Section], metadata: dict[str, Any]) -> ParsedDocument:
    """Build a ParsedDocument with a one-line, length-capped title."""
    return ParsedDocument(title=_one_line(title)[:_MAX_TITLE], sections=sections, metadata=metadata)


class _Builder:
    """Accumulates paragraphs into sections keyed by a heading path (Markdown/HTML/DOCX)."""

    def __init__(self) -> None:
        self.sections: list[Section] = []
        self._paras: list[str] = []
        self._heading: str | None = None
        self._stack: list[tuple[int, str]] = []

    def add(self, text: str, *, code: bool = False) -> None:
        """Add a paragraph (code keeps its spacing; other text is trimmed per line)."""
        text = _clean(text, collapse=not code)
        text = text if code else "\n".join(line.strip() for line in text.split("\n") if line.strip())
        if text.strip():
            self._paras.append(text)

    def heading(self, level: int, text: str) -> None:
        """Start a new section; a heading pops headings of the same or deeper level."""
        text = _one_line(text)
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


def _is_garbage(text: str) -> bool:
    """True if too many control characters / replacement chars for this to be real text."""
    return len(_GARBAGE_RE.findall(text)) > max(2, len(text) // 50)


def _encoding_rank(match: Any) -> tuple[float, float]:
    """Sort key for charset-normalizer matches; rare legacy code pages (Mac, DOS) need a clear win."""
    return match.chaos + (0.0 if _COMMON_ENCODINGS.fullmatch(match.encoding) else 0.2), -match.coherence


def _decode_text(data: bytes, ext: str) -> tuple[str, str]:
    """Decode text bytes: BOM, then UTF-8, then charset-normalizer (preferring cp1252 on ties).

    Bytes that start like a known binary format (PDF, ZIP, executable, image...) are refused by name.
    """
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), None)
    kind = None if encoding else sniff(data)
    # printable magic ("GIF87a", "ID3"...) may start real text: name a format only with binary bytes around
    if kind and (data.startswith((b"%PDF-", b"PK\x03\x04")) or _BINARY_RE.search(data[:1024])):
        raise ParseError(f"{mislabelled(kind, ext)} (the file does not look like text)")
    if encoding is None and b"\x00" in data:
        raise ParseError(_NOT_TEXT)
    try:
        text = data.decode(encoding or "utf-8")
        encoding = (encoding or "utf-8").removesuffix("-sig")
    except UnicodeDecodeError:
        if encoding:  # a BOM followed by undecodable bytes
            raise ParseError(_NOT_TEXT) from None
        from charset_normalizer import from_bytes

        matches = [m for m in from_bytes(data) if not m.encoding.startswith(("utf_16", "utf_32"))]
        if not matches:
            raise ParseError(_NOT_TEXT) from None
        matches.sort(key=_encoding_rank)
        best, western = matches[0], {"cp1252", "latin_1", "iso8859_15"}
        ties = (m for m in matches if _encoding_rank(m)[0] <= _encoding_rank(best)[0] + 0.02)
        tied = (m for m in ties if m.coherence >= best.coherence - 0.02)
        best = next((m for m in tied if western & set(m.could_be_from_charset)), best)  # Western on ties
        text = str(best)
        encoding = "cp1252" if "cp1252" in best.could_be_from_charset else best.encoding
    if _is_garbage(text):
        raise ParseError(_NOT_TEXT)
    return text, encoding


_TEXT_SECTION_CHARS = 1 << 20  # a long text file becomes sections of about this size: no second whole copy


def _parse_txt(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    text, encoding = _decode_text(data, ".txt")
    text = _normalize_newlines(text)  # the decoded copy goes: one copy of the text at a time, plus the sections
    sections: list[Section] = []
    paras: list[str] = []
    size = 0
    first = ""
    start = 0
    for match in _BLANK_LINES_RE.finditer(text):
        size += _add_paragraph(paras, text[start : match.start()])
        start = match.end()
        if size >= _TEXT_SECTION_CHARS:
            first = first or paras[0]
            sections.append(Section(text="\n\n".join(paras)))
            paras, size = [], 0
            deadline.check(f"character {start:,}")
    _add_paragraph(paras, text[start:])
    del text
    if paras:
        first = first or paras[0]
        sections.append(Section(text="\n\n".join(paras)))
    first = first.split("\n", 1)[0].strip()
    title = first if 0 < len(first) <= 120 else stem
    return _doc(title, sections, {"encoding": encoding})


def _add_paragraph(paras: list[str], raw: str) -> int:
    """Append the cleaned paragraph if it has text; returns its length."""
    p = _clean(raw).strip()
    if p:
        paras.append(p)
    return len(p)


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


def _parse_markdown(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    from markdown_it import MarkdownIt

    text, encoding = _decode_text(data, ".md")
    md = MarkdownIt("commonmark").enable("table")
    out, title = _Builder(), None
    cells: list[str] = []
    rows: list[str] = []
    level = 0  # > 0 while inside a heading
    in_cell = False
    for tok in _md_tokens(md, _normalize_newlines(text), limits, deadline):
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
                title = title or (_one_line(content) if level == 1 else None)
                out.heading(level, content)
            elif in_cell:
                cells.append(_one_line(content))
            else:
                out.add(content)
        elif kind in ("fence", "code_block"):
            out.add(tok.content, code=True)
        elif kind == "html_block":
            out.add(_html_fragment_text(tok.content))
    return _doc(title or stem, out.finish(), {"encoding": encoding})


_TAG_START_RE = re.compile(rb"<[A-Za-z]")
_DROP_TAGS = ["script", "style", "noscript", "template", "nav", "footer", "svg", "head", "iframe"]
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BLOCK_TAGS = {
    *"address article aside blockquote body caption center dd details dialog div dl dt fieldset".split(),
    *"figcaption figure form header hr html legend li main menu ol p section summary table".split(),
    *"tbody td tfoot th thead tr ul".split(),
}


def _html_fragment_text(html: str) -> str:
    from bs4 import BeautifulSoup

    return " ".join(BeautifulSoup(html, "lxml").stripped_strings)


def _simple_row(tr: Any) -> str | None:
    """Cells of a table row joined by " | ", or None if a cell holds block content (layout table)."""
    cells = tr.find_all(["td", "th"], recursive=False)
    if any(c.find(list(_BLOCK_TAGS | set(_HEADINGS) | {"pre"})) for c in cells):
        return None
    return " | ".join(t for t in (_one_line(" ".join(c.stripped_strings)) for c in cells) if t)


def _check_markup_count(count: int, limits: ParseLimits, what: str) -> None:
    """An upper bound of the elements a markup parser will build, checked before it builds them."""
    if count > limits.max_elements:
        raise too_many_elements(limits, what)


def _parse_html(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    from bs4 import BeautifulSoup, CData, Tag
    from bs4.element import NavigableString

    kind = sniff(data)
    if kind:
        raise ParseError(f"{mislabelled(kind, '.html')} (the file does not look like text)")
    # every element starts with "<" + a letter: an upper bound known before BeautifulSoup builds the tree
    _check_markup_count(len(_TAG_START_RE.findall(data)), limits, "HTML elements")
    soup = BeautifulSoup(data, "lxml")
    deadline.check("the HTML tree")
    metadata: dict[str, Any] = {"encoding": soup.original_encoding} if soup.original_encoding else {}
    title_tag = soup.head.find("title") if soup.head else None
    title = _one_line(title_tag.get_text(" ")) if isinstance(title_tag, Tag) else ""
    author = soup.find("meta", attrs={"name": re.compile(r"^author$", re.I)})
    if isinstance(author, Tag) and _one_line(str(author.get("content") or "")):
        metadata["author"] = _one_line(str(author.get("content")))
    for tag in soup(_DROP_TAGS):
        tag.decompose()

    out, buf = _Builder(), []
    stack: list[tuple[Any, bool]] = [(soup, False)]
    steps = 0
    while stack:  # iterative walk: deep nesting cannot hit the recursion limit
        node, closing = stack.pop()
        steps += 1
        if steps % 4096 == 0:
            deadline.check(f"HTML node {steps:,}")
        if closing:
            out.add("".join(buf))
            buf = []
        elif type(node) in (NavigableString, CData):  # skips comments, doctypes, etc.
            buf.append(re.sub(r"\s+", " ", str(node)))
        elif isinstance(node, Tag):
            name = node.name
            row = _simple_row(node) if name == "tr" else None
            if name in _HEADINGS or name == "pre" or row is not None:
                out.add("".join(buf))
                buf = []
                if name == "pre":
                    out.add(node.get_text(), code=True)
                elif row is not None:
                    out.add(row)
                else:
                    heading = " ".join(node.stripped_strings)
                    title = title or (_one_line(heading) if name == "h1" else "")
                    out.heading(_HEADINGS[name], heading)
            elif name == "br":
                buf.append("\n")
            else:
                if name in _BLOCK_TAGS:
                    out.add("".join(buf))
                    buf = []
                    stack.append((node, True))
                stack.extend((child, False) for child in reversed(node.contents))
    out.add("".join(buf))
    return _doc(title or stem, out.finish(), metadata)


def _parse_pdf(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    from pypdf import PdfReader

    if b"%PDF-" not in data[:1024]:
        kind = sniff(data)
        if kind:
            raise ParseError(f"not a valid PDF file: {mislabelled(kind, '.pdf')}")
        raise ParseError("not a valid PDF file: no PDF header found (is it really a PDF?)")
    try:
        reader = PdfReader(BytesIO(data))
        if reader.is_encrypted:
            try:
                unlocked = reader.decrypt("")
            except Exception:
                unlocked = 0
            if not unlocked:
                raise ParseError(
                    "PDF is encrypted/password-protected; remove the password "
                    "(e.g. `qpdf --decrypt --password=... in.pdf out.pdf`) and upload it again"
                )
        page_count = len(reader.pages)
        if page_count > limits.max_pdf_pages:
            raise ParseError(
                f"the PDF has {page_count:,} pages, over the {limits.max_pdf_pages:,} page limit (MAX_PDF_PAGES); "
                "split it into smaller files"
            )
        info = reader.metadata
        title, author = (_one_line(str(v or "")) for v in ((info.title, info.author) if info else ("", "")))
        title, author = ("" if _placeholder(v) else v for v in (title, author))
    except ParseError:
        raise
    except Exception as exc:  # pypdf raises many types on malformed input
        raise ParseError(f"not a valid PDF file: {_short(exc)}") from exc

    sections = []
    for number in range(1, page_count + 1):
        deadline.check(f"page {number:,} of {page_count:,}")
        try:
            raw = reader.pages[number - 1].extract_text() or ""
        except Exception:  # a single broken page should not sink the document
            raw = ""
        paras = _paragraphs(_dehyphenate(raw))
        if paras:
            sections.append(Section(text="\n\n".join(paras), page=number))
    if not sections:
        raise ParseError(
            "PDF has no extractable text (scanned or image-only?); run OCR first, "
            "e.g. `ocrmypdf in.pdf out.pdf`, and upload the result"
        )
    metadata = {"page_count": page_count} | {k: v for k, v in (("title", title), ("author", author)) if v}
    return _doc(title or stem, sections, metadata)


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
            found[local] = _one_line(elem.text)
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
    out, first_heading = _Builder(), ""
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
                        first_heading = _one_line(text)
                    out.heading(level, text)
            _drop(elem)
        elif tag == _W_TC and cell_paras and cells:
            cells[-1].append(_one_line("\n".join(cell_paras.pop())))
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


def _parse_docx(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    if not data.startswith(b"PK\x03\x04"):
        kind = sniff(data)
        reason = mislabelled(kind, ".docx") if kind else "it is not a ZIP-based Word file"
        raise ParseError(_DOCX_NOT_VALID.format(reason))
    try:
        zf = open_zip(data, limits, "the .docx file")
        if member_size(zf, "word/document.xml") is None:
            kind = _zip_kind(data)
            reason = mislabelled(kind, ".docx") if kind != "a ZIP archive" else "no word/document.xml inside"
            raise ParseError(_DOCX_NOT_VALID.format(reason))
        title, author = _docx_core(zf)
        sections, first_heading = _docx_body(zf, limits, deadline)
    except ParseError:
        raise
    except Exception as exc:  # zip errors, malformed XML...
        raise ParseError(_DOCX_NOT_VALID.format(_short(exc))) from exc
    return _doc(title or first_heading or stem, sections, {"author": author} if author else {})


Parser = Callable[[bytes, str, ParseLimits, Deadline], ParsedDocument]

_PARSERS: dict[str, Parser] = {
    ".txt": _parse_txt,
    ".md": _parse_markdown,
    ".markdown": _parse_markdown,
    ".html": _parse_html,
    ".htm": _parse_html,
    ".pdf": _parse_pdf,
    ".docx": _parse_docx,
}


def _format_parser(ext: str) -> Parser | None:
    """The parser of a format kept in `ragchat.documents.parsing.formats` (imported on first use: those modules build on
    this one's sections and text helpers)."""
    from ragchat.documents.parsing.formats import FORMAT_PARSERS

    return FORMAT_PARSERS.get(ext)


def _unsupported(filename: str, ext: str) -> UnsupportedFormat:
    supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
    kind = f"'{ext}'" if ext else "(no extension)"
    return UnsupportedFormat(f"unsupported file type {kind} for {filename!r}; supported types: {supported}")


def content_type_for(filename: str) -> str:
    """MIME type for a supported filename; raises UnsupportedFormat otherwise."""
    ext, _ = _split_name(filename)
    if ext not in CONTENT_TYPES:
        raise _unsupported(filename, ext)
    return CONTENT_TYPES[ext]


def parse(data: bytes, filename: str, limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse file bytes by (case-insensitive) extension. Raises ParseError / UnsupportedFormat.

    Runs under `limits` (default: the Settings defaults): sizes, element counts, pages and PARSE_TIMEOUT_S.
    """
    limits = limits or ParseLimits()
    ext, stem = _split_name(filename)
    if ext == ".jsonl":
        raise UnsupportedFormat("JSONL (BEIR corpus) files hold many documents; import them with iter_beir_jsonl()")
    parser = _PARSERS.get(ext) or _format_parser(ext)
    if parser is None:
        raise _unsupported(filename, ext)
    if not data:
        raise ParseError("file is empty (0 bytes); upload a file with content")
    try:
        return parser(data, _one_line(stem) or filename, limits, Deadline(limits))
    except RecursionError as exc:
        raise ParseError("document is too deeply nested to parse") from exc


def _lines(data: bytes) -> Iterator[bytes]:
    """Lines of `data` without building a list of them all."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        yield data[start:end]
        start = end + 1


def iter_beir_jsonl(data: bytes, limits: ParseLimits | None = None) -> Iterator[BeirRecord]:
    """Yield records of a BEIR corpus.jsonl ({"_id", "title", "text"} per line); skips blank lines.

    At most MAX_JSONL_RECORDS records of at most MAX_JSONL_RECORD_KB each.
    """
    limits = limits or ParseLimits()
    if not data:
        raise ParseError("file is empty (0 bytes); upload a file with content")
    kind = sniff(data)
    if kind:
        raise ParseError(mislabelled(kind, ".jsonl"))
    records = 0
    for number, raw in enumerate(_lines(data.removeprefix(codecs.BOM_UTF8)), start=1):
        if not raw.strip():
            continue
        records += 1
        if records > limits.max_jsonl_records:
            raise ParseError(
                f"line {number}: more than {limits.max_jsonl_records:,} records (MAX_JSONL_RECORDS); "
                "split the file into smaller ones"
            )
        if len(raw) > limits.max_jsonl_record_kb * 1024:
            raise ParseError(
                f"line {number}: a record of {len(raw) / 1024:,.0f} KB is over the "
                f"{limits.max_jsonl_record_kb:,} KB limit (MAX_JSONL_RECORD_KB)"
            )
        try:
            obj = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise ParseError(f"line {number}: not valid UTF-8") from None
        except json.JSONDecodeError as exc:
            raise ParseError(f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        except RecursionError:
            raise ParseError(f"line {number}: JSON nested too deeply") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("_id"), str | int) or "text" not in obj:
            raise ParseError(f'line {number}: expected a JSON object with "_id" and "text" (and optionally "title")')
        title, text = obj.get("title") or "", obj.get("text") or ""
        if not isinstance(title, str) or not isinstance(text, str):
            raise ParseError(f'line {number}: "title" and "text" must be strings')
        yield BeirRecord(source_id=str(obj["_id"]), title=_one_line(title), text=_clean(text).strip())
