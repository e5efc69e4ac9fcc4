"""PDF: one section per page, line-break hyphens joined; a page without a text layer (or with fewer than
OCR_MIN_TEXT_CHARS characters) is rendered and read by OCR, the other pages kept as they are."""

from __future__ import annotations

from collections.abc import Iterator
from io import BytesIO
from typing import Any

from ragchat.documents.parsing import ocr
from ragchat.documents.parsing.document import ParsedDocument, Section, make_document
from ragchat.documents.parsing.limits import (
    Deadline,
    OcrMeter,
    ParseError,
    ParseLimits,
    mislabelled,
    sniff,
)
from ragchat.documents.parsing.scanned import PDFIUM_LOCK, PageSource, ocr_unavailable, read_pages
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

    sections: list[Section] = []
    scanned: list[int] = []  # pages whose text layer is missing or too thin: OCR'd
    for number in range(1, page_count + 1):
        deadline.check(f"page {number:,} of {page_count:,}")
        try:
            raw = reader.pages[number - 1].extract_text() or ""
        except Exception:  # a single broken page should not sink the document
            raw = ""
        paras = paragraphs(dehyphenate(raw))
        if sum(len(p) for p in paras) < limits.ocr_min_text_chars and _draws_image(reader.pages[number - 1]):
            scanned.append(number)
        if paras:
            sections.append(Section(text="\n\n".join(paras), page=number))
    del reader
    ocr_meta: dict[str, str] = {}
    why_not = ocr_unavailable(limits) if scanned else None
    if scanned and not why_not:
        read, report = read_pages(_rendered(data, scanned, limits, deadline.meter), len(scanned), limits, deadline)
        by_page = {s.page: s for s in sections}
        for section in read:  # an OCR'd page replaces the few characters its text layer had
            by_page[section.page] = section
        sections = [by_page[n] for n in sorted(by_page, key=lambda n: n or 0)]
        ocr_meta = {"ocr": report.summary(), "ocr_engine": ocr.ENGINE_NAME}
    if not sections:
        if why_not:
            raise ParseError(
                f"PDF has no extractable text (scanned or image-only?) and {why_not}; run OCR first, "
                "e.g. `ocrmypdf in.pdf out.pdf`, and upload the result"
            )
        raise ParseError(
            f"PDF has no extractable text, and {ocr_meta.get('ocr', 'no page has a scanned image to read by OCR')}"
        )
    metadata = {"page_count": page_count} | {k: v for k, v in (("title", title), ("author", author)) if v}
    metadata |= ocr_meta
    return make_document(title or stem, sections, metadata)


_RENDER_DPI = 300


def _draws_image(page: Any) -> bool:
    """Whether the page draws an image (an image XObject of its own or inside one of its forms, or an inline
    image): a page with too little text and no image has nothing for OCR to read."""
    try:
        resources = page.get("/Resources")
        todo = [resources.get_object()] if resources is not None else []
        for _ in range(3):  # forms inside forms, a few levels deep
            nested = []
            for res in todo:
                xobjects = res.get("/XObject")
                for ref in (xobjects.get_object() if xobjects is not None else {}).values():
                    xobject = ref.get_object()
                    if xobject.get("/Subtype") == "/Image":
                        return True
                    if xobject.get("/Subtype") == "/Form" and xobject.get("/Resources") is not None:
                        nested.append(xobject["/Resources"].get_object())
            todo = nested
        contents = page.get_contents()
        return contents is not None and b"\nBI" in contents.get_data()[:1_000_000]
    except Exception:  # a damaged page: let OCR have a look
        return True


def _rendered(data: bytes, numbers: list[int], limits: ParseLimits, meter: OcrMeter) -> Iterator[PageSource]:
    """The pages `numbers` rendered (PDFium) at 300 dpi, scaled down so the long side is at most ocr.MAX_SIDE:
    however large a page claims to be, its bitmap stays within that (and OCR_MAX_PIXELS)."""
    import pypdfium2 as pdfium

    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(data)
        except Exception as exc:
            raise ParseError(f"could not render the PDF's scanned pages: {short_error(exc)}") from None

    def render(number: int) -> Any:
        with PDFIUM_LOCK:
            try:
                page = document[number - 1]
                width, height = page.get_size()
                scale = min(_RENDER_DPI / 72, ocr.MAX_SIDE / max(width, height, 1.0))
                if width * height * scale * scale > limits.ocr_max_pixels:
                    scale = (limits.ocr_max_pixels / (width * height)) ** 0.5
                meter.spend(round(width * scale) * round(height * scale))  # before it is rendered
                bitmap = page.render(scale=scale, grayscale=True)  # pyright: ignore[reportArgumentType]  (a float is fine)
                image = bitmap.to_pil()
                page.close()
                return image
            except ParseError:
                raise
            except Exception as exc:  # PDFium's errors on a damaged page
                raise ParseError(f"could not render the page: {short_error(exc)}") from None

    try:
        for number in numbers:
            yield number, lambda number=number: render(number)
    finally:
        with PDFIUM_LOCK:
            document.close()


def _placeholder(value: str) -> bool:
    """A tool's stand-in for no value: "(anonymous)", "Untitled", "[unknown]", or nothing but punctuation."""
    return value.strip(" ()[]<>{}-_.\"'").lower() in PLACEHOLDERS | {""}
