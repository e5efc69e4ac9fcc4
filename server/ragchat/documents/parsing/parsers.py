"""The parser registry: uploaded file bytes -> structured plain text (sections with page / heading path), by
extension, each format's parser in `formats/`; and BEIR corpus files (`iter_beir_jsonl`).

User-caused failures raise `ParseError`; its message is shown as the document's failure reason.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterator

from ragchat.documents.parsing.document import BeirRecord, ParsedDocument, Section, UnsupportedFormat
from ragchat.documents.parsing.formats.docx import parse_docx
from ragchat.documents.parsing.formats.epub import parse_epub
from ragchat.documents.parsing.formats.html import parse_html
from ragchat.documents.parsing.formats.image import IMAGE_TYPES, image_parser
from ragchat.documents.parsing.formats.markdown import parse_markdown
from ragchat.documents.parsing.formats.pdf import parse_pdf
from ragchat.documents.parsing.formats.slides import parse_pptx
from ragchat.documents.parsing.formats.tabular import parse_csv, parse_xlsx
from ragchat.documents.parsing.formats.text import parse_txt
from ragchat.documents.parsing.formats.transcripts import parse_srt, parse_vtt
from ragchat.documents.parsing.limits import (
    Deadline,
    OcrMeter,
    ParseError,
    ParseLimits,
    mislabelled,
    sniff,
)
from ragchat.documents.parsing.text import (
    clean,
    one_line,
    split_name,
)

__all__ = [
    "BeirRecord",
    "ParseError",
    "ParseLimits",
    "ParsedDocument",
    "Section",
    "UnsupportedFormat",
]

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
    **IMAGE_TYPES,
}
SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(CONTENT_TYPES)


Parser = Callable[[bytes, str, ParseLimits, Deadline], ParsedDocument]

#: The one registry: each extension's parser (`.jsonl` is a BEIR corpus of many documents: `iter_beir_jsonl`).
PARSERS: dict[str, Parser] = {
    ".txt": parse_txt,
    ".md": parse_markdown,
    ".markdown": parse_markdown,
    ".html": parse_html,
    ".htm": parse_html,
    ".pdf": parse_pdf,
    ".docx": parse_docx,
    ".vtt": parse_vtt,
    ".srt": parse_srt,
    ".csv": parse_csv,
    ".xlsx": parse_xlsx,
    ".pptx": parse_pptx,
    ".epub": parse_epub,
    **{ext: image_parser(ext) for ext in IMAGE_TYPES},
}


def _unsupported(filename: str, ext: str) -> UnsupportedFormat:
    supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
    kind = f"'{ext}'" if ext else "(no extension)"
    return UnsupportedFormat(f"unsupported file type {kind} for {filename!r}; supported types: {supported}")


def content_type_for(filename: str) -> str:
    """MIME type for a supported filename; raises UnsupportedFormat otherwise."""
    ext, _ = split_name(filename)
    if ext not in CONTENT_TYPES:
        raise _unsupported(filename, ext)
    return CONTENT_TYPES[ext]


def parse(
    data: bytes,
    filename: str,
    limits: ParseLimits | None = None,
    progress: Callable[[str], None] | None = None,
    meter: OcrMeter | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> ParsedDocument:
    """Parse file bytes by (case-insensitive) extension. Raises ParseError / UnsupportedFormat.

    Runs under `limits` (default: the Settings defaults): sizes, element counts, pages and PARSE_TIMEOUT_S.
    `progress` is told what a long parse is doing ("OCR page 3 of 12"); `meter` counts the pixels decoded for
    OCR (against the pixel budgets); `cancelled`, asked between pages, stops the parse (raises Cancelled).
    """
    limits = limits or ParseLimits()
    ext, stem = split_name(filename)
    if ext == ".jsonl":
        raise UnsupportedFormat("JSONL (BEIR corpus) files hold many documents; import them with iter_beir_jsonl()")
    parser = PARSERS.get(ext)
    if parser is None:
        raise _unsupported(filename, ext)
    if not data:
        raise ParseError("file is empty (0 bytes); upload a file with content")
    try:
        return parser(data, one_line(stem) or filename, limits, Deadline(limits, progress, meter, cancelled))
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
        yield BeirRecord(source_id=str(obj["_id"]), title=one_line(title), text=clean(text).strip())
