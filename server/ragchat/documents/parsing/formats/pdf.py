"""PDF: one section per page, line-break hyphens joined."""

from __future__ import annotations

from io import BytesIO

from ragchat.documents.parsing.document import ParsedDocument, Section, make_document
from ragchat.documents.parsing.limits import (
    Deadline,
    ParseError,
    ParseLimits,
    mislabelled,
    sniff,
)
from ragchat.documents.parsing.text import (
    PLACEHOLDERS,
    dehyphenate,
    one_line,
    paragraphs,
    short_error,
)


def parse_pdf(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
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
        title, author = (one_line(str(v or "")) for v in ((info.title, info.author) if info else ("", "")))
        title, author = ("" if _placeholder(v) else v for v in (title, author))
    except ParseError:
        raise
    except Exception as exc:  # pypdf raises many types on malformed input
        raise ParseError(f"not a valid PDF file: {short_error(exc)}") from exc

    sections = []
    for number in range(1, page_count + 1):
        deadline.check(f"page {number:,} of {page_count:,}")
        try:
            raw = reader.pages[number - 1].extract_text() or ""
        except Exception:  # a single broken page should not sink the document
            raw = ""
        paras = paragraphs(dehyphenate(raw))
        if paras:
            sections.append(Section(text="\n\n".join(paras), page=number))
    if not sections:
        raise ParseError(
            "PDF has no extractable text (scanned or image-only?); run OCR first, "
            "e.g. `ocrmypdf in.pdf out.pdf`, and upload the result"
        )
    metadata = {"page_count": page_count} | {k: v for k, v in (("title", title), ("author", author)) if v}
    return make_document(title or stem, sections, metadata)


def _placeholder(value: str) -> bool:
    """A tool's stand-in for no value: "(anonymous)", "Untitled", "[unknown]", or nothing but punctuation."""
    return value.strip(" ()[]<>{}-_.\"'").lower() in PLACEHOLDERS | {""}
