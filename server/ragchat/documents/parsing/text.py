"""Text helpers every format parser shares: decoding bytes to text, newline and whitespace clean-up,
paragraph splitting, one-line titles, and short user-facing error wording."""

from __future__ import annotations

import codecs
import re
from typing import Any

from ragchat.documents.parsing.limits import (
    ParseError,
    mislabelled,
    sniff,
)

PLACEHOLDERS = {"untitled", "anonymous", "unknown", "unspecified"}  # e.g. reportlab defaults
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # keeps \t and \n
_GARBAGE_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ufffd]")  # Cc except \t \n \f \r
_COMMON_ENCODINGS = re.compile(
    r"cp125\d|iso8859_\d+|latin_1|koi8_\w+|cp874|cp93[26]|cp949|cp950|shift_jis\w*|euc_\w+|gb\w+|big5\w*|tis_620"
)
_BINARY_RE = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")
_SPACES_RE = re.compile(r" {2,}")
BLANK_LINES_RE = re.compile(r"\n[ \t]*\n\s*")
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


def split_name(filename: str) -> tuple[str, str]:
    """Return (lower-cased extension incl. dot, stem) of the last path component."""
    name = re.split(r"[\\/]", filename)[-1]
    stem, dot, ext = name.rpartition(".")
    return ("." + ext.lower(), stem) if dot and stem else ("", name)


def normalize_newlines(text: str) -> str:
    """CRLF/CR, form feeds and Unicode line separators -> "\n"."""
    return re.sub(r"\r\n?|[\f\v\x1c-\x1e\x85\u2028\u2029]", "\n", text)


def clean(text: str, *, collapse: bool = True) -> str:
    """Strip control chars, (optionally) collapse spaces, strip line ends and outer blank lines."""
    text = _CONTROL_RE.sub("", normalize_newlines(text))
    if collapse:
        text = _SPACES_RE.sub(" ", text)
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def paragraphs(text: str) -> list[str]:
    """Split text on blank lines into cleaned, non-empty paragraphs."""
    parts = (clean(p).strip() for p in BLANK_LINES_RE.split(normalize_newlines(text)))
    return [p for p in parts if p]


def one_line(text: str | None) -> str:
    """Collapse all whitespace (titles, headings, table cells)."""
    return " ".join(_CONTROL_RE.sub(" ", text or "").split())


def dehyphenate(text: str) -> str:
    """Join words split by a line-break hyphen ("exam-\\nple" -> "example") when clearly so."""
    return _HYPHEN_RE.sub(lambda m: m[1] + m[2] if m[2][0].islower() else m[0], normalize_newlines(text))


def short_error(exc: BaseException) -> str:
    """First line of an exception message, for user-facing errors."""
    msg = (str(exc).strip().splitlines() or [""])[0][:200]
    return msg or type(exc).__name__


def _is_garbage(text: str) -> bool:
    """True if too many control characters / replacement chars for this to be real text."""
    return len(_GARBAGE_RE.findall(text)) > max(2, len(text) // 50)


def _encoding_rank(match: Any) -> tuple[float, float]:
    """Sort key for charset-normalizer matches; rare legacy code pages (Mac, DOS) need a clear win."""
    return match.chaos + (0.0 if _COMMON_ENCODINGS.fullmatch(match.encoding) else 0.2), -match.coherence


def decode_text(data: bytes, ext: str) -> tuple[str, str]:
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


def add_paragraph(paras: list[str], raw: str) -> int:
    """Append the cleaned paragraph if it has text; returns its length."""
    p = clean(raw).strip()
    if p:
        paras.append(p)
    return len(p)
