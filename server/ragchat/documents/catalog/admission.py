"""What the library accepts as a document: a file name Postgres and file systems can hold, a size within
MAX_UPLOAD_MB, a format a parser reads (images only with OCR on). Uploads, paths and folder sync all ask here."""

from __future__ import annotations

from ragchat.core.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from ragchat.documents.parsing.limits import ParseLimits
from ragchat.documents.parsing.parsers import UnsupportedFormat, content_type_for
from ragchat.documents.parsing.scanned import ocr_unavailable
from ragchat.settings import IngestionSettings

MAX_FILENAME_CHARS = 255  # what file systems hold; Postgres text holds no NUL (DESIGN §12)


def check_filename(filename: str) -> None:
    """A 400 for a file name Postgres or a file system cannot hold: a NUL or other control character, or more
    than MAX_FILENAME_CHARS characters. The message quotes a shortened, printable form of the name."""
    shown = "".join(c if c.isprintable() else "?" for c in filename[:60]) + ("…" if len(filename) > 60 else "")
    if any(ord(c) < 32 or ord(c) == 127 for c in filename):
        raise BadRequest(f"{shown}: the file name contains a NUL or another control character")
    if len(filename) > MAX_FILENAME_CHARS:
        raise BadRequest(f"{shown}: the file name is {len(filename)} characters, over {MAX_FILENAME_CHARS}")


def validate_upload(filename: str, size: int, settings: IngestionSettings, *, check_size: bool = True) -> str:
    """Content type for an acceptable upload; raise a clear domain error otherwise."""
    if size == 0:
        raise BadRequest(f"{filename}: file is empty")
    if check_size and size > settings.max_upload_bytes:
        raise PayloadTooLarge(
            f"{filename}: {size / 1048576:.1f} MB is over the {settings.max_upload_mb:g} MB limit (MAX_UPLOAD_MB)"
        )
    try:
        content_type = content_type_for(filename)
    except UnsupportedFormat as exc:
        raise UnsupportedMediaType(str(exc)) from exc  # it names the file already
    if content_type.startswith("image/"):
        why = ocr_unavailable(ParseLimits(ocr_enabled=settings.ocr_enabled))
        if why:
            raise UnsupportedMediaType(f"{filename}: images are read by OCR, and {why}")
    return content_type
