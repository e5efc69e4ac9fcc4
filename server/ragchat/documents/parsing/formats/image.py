"""Images (.png .jpg .jpeg .tif .tiff .webp), read by OCR: one page per image, a multi-frame TIFF one page per
frame. The pixel count is read from the header and checked against OCR_MAX_PIXELS before anything is decoded
(a 20,000 × 20,000 image costs nothing to refuse); a JPEG is decoded at a reduced scale when that is enough."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator
from io import BytesIO
from typing import Any

from ragchat.documents.parsing import ocr
from ragchat.documents.parsing.document import ParsedDocument, make_document
from ragchat.documents.parsing.limits import Deadline, OcrMeter, ParseError, ParseLimits, mislabelled, sniff
from ragchat.documents.parsing.scanned import PageSource, ocr_unavailable, read_pages
from ragchat.documents.parsing.text import short_error

IMAGE_TYPES: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".webp": "image/webp",
}
_FORMATS = {"PNG", "JPEG", "MPO", "TIFF", "WEBP"}  # what Pillow may call them (MPO: a camera's multi-picture JPEG)


def _too_big(width: int, height: int, limits: ParseLimits, what: str = "the image") -> ParseError:
    return ParseError(
        f"{what} is {width:,} × {height:,} pixels ({width * height / 1e6:,.0f} megapixels), over the "
        f"{limits.ocr_max_pixels / 1e6:,.0f} megapixel limit (OCR_MAX_PIXELS); scale it down and upload it again"
    )


def open_image(data: bytes, ext: str, limits: ParseLimits) -> Any:
    """The image opened (header only, nothing decoded), or a ParseError saying what is wrong with it."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(BytesIO(data))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        found = re.search(r"\((\d+) pixels\)", str(exc))
        size = f"{int(found.group(1)) / 1e6:,.0f} megapixels" if found else "too many pixels"
        raise ParseError(
            f"the image has {size}, over the {limits.ocr_max_pixels / 1e6:,.0f} megapixel limit "
            "(OCR_MAX_PIXELS); refused before decoding: scale it down and upload it again"
        ) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        kind = sniff(data)
        if kind and "image" not in kind:
            raise ParseError(f"not a valid image: {mislabelled(kind, ext)}") from None
        raise ParseError(f"not a valid image: {short_error(exc)} (is the file damaged or cut short?)") from None
    if image.format not in _FORMATS:
        raise ParseError(f"not a supported image: it is {image.format or 'of an unknown format'}, not {ext}")
    width, height = image.size
    if width * height > limits.ocr_max_pixels:
        raise _too_big(width, height, limits)
    return image


def _frame(image: Any, index: int, limits: ParseLimits, meter: OcrMeter) -> Any:
    """Frame `index` decoded as RGB at most ocr.MAX_SIDE on its long side (the JPEG decoder scales down
    itself), or a ParseError (OverBudget when its pixels would pass a budget: nothing decoded)."""
    try:
        image.seek(index)
        width, height = image.size
        if width * height > limits.ocr_max_pixels:
            raise _too_big(width, height, limits, f"frame {index + 1}")
        meter.spend(width * height)  # from the header, before decoding
        if image.format in ("JPEG", "MPO"):
            image.draft("RGB", (ocr.MAX_SIDE, ocr.MAX_SIDE))
        return ocr.fit(image)
    except ParseError:
        raise
    except Exception as exc:  # Pillow raises OSError, ValueError, SyntaxError, struct.error on damaged data
        raise ParseError(
            f"could not decode the image: {short_error(exc)} (is the file damaged or cut short?)"
        ) from None


def image_parser(ext: str) -> Callable[[bytes, str, ParseLimits, Deadline], ParsedDocument]:
    """The parser of images with extension `ext` (named in its messages)."""

    def parse(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
        return parse_image(data, stem, limits, deadline, ext)

    return parse


def parse_image(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline, ext: str = ".png") -> ParsedDocument:
    why = ocr_unavailable(limits)
    if why:
        raise ParseError(f"images are read by OCR and {why}")
    image = open_image(data, ext, limits)
    frames = max(1, int(getattr(image, "n_frames", 1) or 1))

    def pages() -> Iterator[PageSource]:
        for index in range(frames):
            yield index + 1, lambda index=index: _frame(image, index, limits, deadline.meter)

    sections, report = read_pages(pages(), frames, limits, deadline)
    if not sections:
        if report.failed and len(report.failed) == frames:
            raise ParseError(next(iter(report.failed.values())))
        raise ParseError(f"no text found in the image: {report.summary()}")
    metadata = {"page_count": frames, "ocr": report.summary(), "ocr_engine": ocr.ENGINE_NAME}
    return make_document(stem, sections, metadata)
