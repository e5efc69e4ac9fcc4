"""A scanned page as an image for the viewer: the image OCR read, made the way OCR made it (an image's frame
decoded and fitted, a PDF page rendered by the same PDFium renderer at the same scale), so the boxes of its
OCR lines (ocr.PageLayout, in that image's pixels) fall on it. Bounded as OCR is: the pixel count is checked
from the header (or the page size) before anything is decoded, and the long side is at most ocr.MAX_SIDE."""

from __future__ import annotations

from dataclasses import dataclass
from io import BytesIO
from pathlib import PurePath

from ragchat.documents.parsing import ocr
from ragchat.documents.parsing.formats.image import IMAGE_TYPES, _frame, open_image
from ragchat.documents.parsing.formats.pdf import _rendered
from ragchat.documents.parsing.limits import OcrMeter, ParseError, ParseLimits

PDF = "application/pdf"
_JPEG_QUALITY = 85


class NotScanned(ParseError):
    """The document is neither an image nor a PDF: it has no page image."""


@dataclass(frozen=True)
class PageImage:
    data: bytes
    media_type: str  # image/png (a grey or black-and-white page) or image/jpeg (colour)
    width: int
    height: int


def has_page_images(content_type: str, filename: str) -> bool:
    """Whether a document of this type has page images (an image, a PDF)."""
    return (
        content_type == PDF or PurePath(filename).suffix.lower() in IMAGE_TYPES or content_type in IMAGE_TYPES.values()
    )


def page_image(data: bytes, content_type: str, filename: str, page: int, limits: ParseLimits) -> PageImage:
    """Page `page` (from 1; a TIFF's frame, a PDF's page) of the document's original bytes. ParseError when it
    cannot be decoded, is over OCR_MAX_PIXELS or is not there; NotScanned for a type without page images."""
    meter = OcrMeter(limits)  # a view is not counted against the owner's daily OCR budget, only bounded
    if content_type == PDF or filename.lower().endswith(".pdf"):
        pages = _rendered(data, [page], limits, meter)
        try:
            _, render = next(iter(pages))
            image = render()
        finally:
            close = getattr(pages, "close", None)  # a generator: closing it closes the PDFium document
            if close is not None:
                close()
        grey = True  # rendered in grey, as OCR reads it
    else:
        ext = PurePath(filename).suffix.lower()
        if ext not in IMAGE_TYPES:
            raise NotScanned("this document has no page images (it is neither an image nor a PDF)")
        source = open_image(data, ext, limits)
        frames = max(1, int(getattr(source, "n_frames", 1) or 1))
        if page > frames:
            raise ParseError(f"the image has {frames} {'page' if frames == 1 else 'pages'}, not {page}")
        source.seek(page - 1)
        grey = source.mode in ("1", "L", "LA", "I", "I;16", "F", "P") and _greyish(source)
        image = _frame(source, page - 1, limits, meter)
    image = ocr.fit(image)
    out = BytesIO()
    if grey:
        image.convert("L").save(out, "PNG", compress_level=6)
        media_type = "image/png"
    else:
        image.save(out, "JPEG", quality=_JPEG_QUALITY)
        media_type = "image/jpeg"
    return PageImage(out.getvalue(), media_type, image.width, image.height)


def _greyish(image: object) -> bool:
    """A palette image counts as grey when its palette is (a bilevel or grey scan saved as PNG-8)."""
    if getattr(image, "mode", "") != "P":
        return True
    palette = getattr(image, "getpalette", lambda: None)() or []
    triples = [palette[i : i + 3] for i in range(0, len(palette), 3)]
    return all(len(t) < 3 or t[0] == t[1] == t[2] for t in triples)
