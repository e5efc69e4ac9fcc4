"""Uploaded file bytes -> structured plain text (sections with page / heading path).

User-caused failures raise `ParseError`; its message is shown as the document's failure reason.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any


class ParseError(Exception):
    """A file could not be turned into text; the message is shown to the user."""


class UnsupportedFormat(ParseError):
    """The file type (extension) is not supported."""


@dataclass(frozen=True)
class Section:
    """A run of text sharing one page (PDF) or one heading path."""

    text: str
    page: int | None = None
    heading: str | None = None


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
}
SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(CONTENT_TYPES)

_MAX_TITLE = 200
_PLACEHOLDERS = {"untitled", "anonymous", "unknown", "unspecified"}  # e.g. reportlab defaults
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # keeps \t and \n
_GARBAGE_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ufffd]")  # Cc except \t \n \f \r
_COMMON_ENCODINGS = re.compile(
    r"cp125\d|iso8859_\d+|latin_1|koi8_\w+|cp874|cp93[26]|cp949|cp950|shift_jis\w*|euc_\w+|gb\w+|big5\w*|tis_620"
)
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


def _decode_text(data: bytes) -> tuple[str, str]:
    """Decode text bytes: BOM, then UTF-8, then charset-normalizer (preferring cp1252 on ties)."""
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), None)
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


def _parse_txt(data: bytes, stem: str) -> ParsedDocument:
    text, encoding = _decode_text(data)
    paras = _paragraphs(text)
    first = paras[0].split("\n", 1)[0].strip() if paras else ""
    title = first if 0 < len(first) <= 120 else stem
    sections = [Section(text="\n\n".join(paras))] if paras else []
    return _doc(title, sections, {"encoding": encoding})


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


def _parse_markdown(data: bytes, stem: str) -> ParsedDocument:
    from markdown_it import MarkdownIt

    text, encoding = _decode_text(data)
    tokens = MarkdownIt("commonmark").enable("table").parse(_normalize_newlines(text))
    out, title = _Builder(), None
    cells: list[str] = []
    rows: list[str] = []
    level = 0  # > 0 while inside a heading
    in_cell = False
    for tok in tokens:
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


def _parse_html(data: bytes, stem: str) -> ParsedDocument:
    from bs4 import BeautifulSoup, CData, Tag
    from bs4.element import NavigableString

    soup = BeautifulSoup(data, "lxml")
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
    while stack:  # iterative walk: deep nesting cannot hit the recursion limit
        node, closing = stack.pop()
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


def _parse_pdf(data: bytes, stem: str) -> ParsedDocument:
    from pypdf import PdfReader

    if b"%PDF-" not in data[:1024]:
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
        pages = list(reader.pages)
        info = reader.metadata
        title, author = (_one_line(str(v or "")) for v in ((info.title, info.author) if info else ("", "")))
        title, author = ("" if v.lower() in _PLACEHOLDERS else v for v in (title, author))
    except ParseError:
        raise
    except Exception as exc:  # pypdf raises many types on malformed input
        raise ParseError(f"not a valid PDF file: {_short(exc)}") from exc

    sections = []
    for number, page in enumerate(pages, start=1):
        try:
            raw = page.extract_text() or ""
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
    metadata = {"page_count": len(pages)} | {k: v for k, v in (("title", title), ("author", author)) if v}
    return _doc(title or stem, sections, metadata)


def _parse_docx(data: bytes, stem: str) -> ParsedDocument:
    import docx
    from docx.table import Table

    try:
        document = docx.Document(BytesIO(data))
        props = document.core_properties
        title, author = _one_line(props.title), _one_line(props.author)
        out, first_heading = _Builder(), ""
        for block in document.iter_inner_content():
            if isinstance(block, Table):
                rows = []
                for row in block.rows:
                    cells = {id(c._tc): c for c in row.cells}.values()  # merged cells repeat one <w:tc>
                    rows.append(" | ".join(t for t in (_one_line(c.text) for c in cells) if t))
                out.add("\n".join(r for r in rows if r))
                continue
            style = (block.style.name if block.style is not None else "") or ""
            match = re.fullmatch(r"heading\s*(\d)", style.strip(), re.I)
            level = 0 if style.strip().lower() == "title" else int(match.group(1)) if match else None
            if level is None:
                out.add(block.text)
                continue
            if level <= 1 and not first_heading:
                first_heading = _one_line(block.text)
            out.heading(level, block.text)
        sections = out.finish()
    except Exception as exc:  # zip errors, missing parts, malformed XML...
        raise ParseError(
            f"not a valid DOCX file ({_short(exc)}); if it is an old .doc file, "
            "save it as .docx (Word or LibreOffice) and upload again"
        ) from exc
    return _doc(title or first_heading or stem, sections, {"author": author} if author else {})


_PARSERS = {
    ".txt": _parse_txt,
    ".md": _parse_markdown,
    ".markdown": _parse_markdown,
    ".html": _parse_html,
    ".htm": _parse_html,
    ".pdf": _parse_pdf,
    ".docx": _parse_docx,
}


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


def parse(data: bytes, filename: str) -> ParsedDocument:
    """Parse file bytes by (case-insensitive) extension. Raises ParseError / UnsupportedFormat."""
    ext, stem = _split_name(filename)
    if ext == ".jsonl":
        raise UnsupportedFormat("JSONL (BEIR corpus) files hold many documents; import them with iter_beir_jsonl()")
    parser = _PARSERS.get(ext)
    if parser is None:
        raise _unsupported(filename, ext)
    if not data:
        raise ParseError("file is empty (0 bytes); upload a file with content")
    try:
        return parser(data, _one_line(stem) or filename)
    except RecursionError as exc:
        raise ParseError("document is too deeply nested to parse") from exc


def iter_beir_jsonl(data: bytes) -> Iterator[BeirRecord]:
    """Yield records of a BEIR corpus.jsonl ({"_id", "title", "text"} per line); skips blank lines."""
    if not data:
        raise ParseError("file is empty (0 bytes); upload a file with content")
    for number, raw in enumerate(data.removeprefix(codecs.BOM_UTF8).split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise ParseError(f"line {number}: not valid UTF-8") from None
        except json.JSONDecodeError as exc:
            raise ParseError(f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("_id"), str | int) or "text" not in obj:
            raise ParseError(f'line {number}: expected a JSON object with "_id" and "text" (and optionally "title")')
        title, text = obj.get("title") or "", obj.get("text") or ""
        if not isinstance(title, str) or not isinstance(text, str):
            raise ParseError(f'line {number}: "title" and "text" must be strings')
        yield BeirRecord(source_id=str(obj["_id"]), title=_one_line(title), text=_clean(text).strip())
