"""Bounds on parsing untrusted files: sizes, element counts, pages, time, and content sniffing.

Every refusal is a `ParseError` naming the limit and the setting that raises it.
"""

from __future__ import annotations

import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, fields
from io import BytesIO
from typing import IO, Any, Self

from ragchat.settings import IngestionSettings

MB = 1024 * 1024
_RATIO_MIN_BYTES = MB  # members smaller than this inflated are never "too compressed"


class ParseError(Exception):
    """A file could not be turned into text; the message is shown to the user."""


class Cancelled(Exception):
    """The document was cancelled while it was parsed (not a failure of the file)."""


def _setting_default(name: str) -> Any:
    """The default of the setting of that name: the one place the limits' defaults are written."""
    return IngestionSettings.model_fields[name].default


@dataclass(frozen=True)
class ParseLimits:
    """The caps a parse runs under: by default the settings' defaults (`from_settings` for the configured)."""

    max_inflated_mb: float = _setting_default("max_inflated_mb")
    max_zip_member_mb: float = _setting_default("max_zip_member_mb")
    max_zip_members: int = _setting_default("max_zip_members")
    max_compression_ratio: float = _setting_default("max_compression_ratio")
    max_elements: int = _setting_default("max_elements")
    max_pdf_pages: int = _setting_default("max_pdf_pages")
    parse_timeout_s: float = _setting_default("parse_timeout_s")
    max_jsonl_records: int = _setting_default("max_jsonl_records")
    max_jsonl_record_kb: int = _setting_default("max_jsonl_record_kb")
    ocr_enabled: bool = _setting_default("ocr_enabled")
    ocr_max_pixels: int = _setting_default("ocr_max_pixels")
    ocr_max_pages: int = _setting_default("ocr_max_pages")
    ocr_page_timeout_s: float = _setting_default("ocr_page_timeout_s")
    ocr_time_budget_s: float = _setting_default("ocr_time_budget_s")
    ocr_min_text_chars: int = _setting_default("ocr_min_text_chars")
    ocr_max_megapixels: float = _setting_default("ocr_max_megapixels")
    ocr_user_megapixels_per_day: float = _setting_default("ocr_user_megapixels_per_day")
    ocr_user_megapixels_left: float | None = None  # what the owner has left of it today (the worker fills it in)

    @classmethod
    def from_settings(cls, settings: IngestionSettings) -> Self:
        return cls(
            **{f.name: getattr(settings, f.name) for f in fields(cls) if f.name in IngestionSettings.model_fields}
        )


class OverBudget(ParseError):
    """Decoding the next page would pass a pixel budget: it and the pages after it are not read."""


@dataclass
class OcrMeter:
    """Pixels decoded for OCR in one parse, checked against OCR_MAX_MEGAPIXELS and what the owner has left of
    OCR_USER_MEGAPIXELS_PER_DAY before each page is decoded."""

    limits: ParseLimits
    pixels: int = 0
    on_spend: Callable[[int], None] | None = None  # told the running total after each page is counted

    def spend(self, pixels: int) -> None:
        """Count a page of `pixels` about to be decoded, or raise OverBudget naming the limit it would pass."""
        total = (self.pixels + pixels) / 1e6
        mine = self.limits.ocr_max_megapixels
        if total > mine:
            raise OverBudget(f"over the {mine:,.0f} megapixel budget of one document (OCR_MAX_MEGAPIXELS)")
        left = self.limits.ocr_user_megapixels_left
        if left is not None and total > left:
            day = self.limits.ocr_user_megapixels_per_day
            raise OverBudget(
                f"the owner's OCR budget of {day:,.0f} megapixels a day is used up "
                f"({max(left, 0):,.0f} left; OCR_USER_MEGAPIXELS_PER_DAY)"
            )
        self.pixels += pixels
        if self.on_spend is not None:
            self.on_spend(self.pixels)


class Deadline:
    """PARSE_TIMEOUT_S for one parse; `check()` between pages / elements raises once it has passed. It also
    carries the parse's progress line (`note`: "OCR page 3 of 12"), for the worker to show while it runs."""

    def __init__(
        self,
        limits: ParseLimits,
        progress: Callable[[str], None] | None = None,
        meter: OcrMeter | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        self.seconds = limits.parse_timeout_s
        self.end = time.monotonic() + self.seconds
        self.progress = progress
        self.meter = meter or OcrMeter(limits)
        self.cancelled = cancelled  # asked between pages: the document was cancelled, stop

    def stop_if_cancelled(self) -> None:
        if self.cancelled is not None and self.cancelled():
            raise Cancelled("cancelled")

    def note(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def check(self, where: str) -> None:
        self.stop_if_cancelled()
        if time.monotonic() > self.end:
            raise ParseError(
                f"parsing took longer than {self.seconds:g} s (PARSE_TIMEOUT_S), stopped at {where}; "
                "split the file into smaller ones"
            )


def too_many_elements(limits: ParseLimits, what: str) -> ParseError:
    return ParseError(
        f"the file has more than {limits.max_elements:,} {what} (MAX_ELEMENTS); split it into smaller files"
    )


# --------------------------------------------------------------------------- sniffing

_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "a PDF"),
    (b"PK\x03\x04", "a ZIP archive (or .docx/.xlsx/.pptx)"),
    (b"PK\x05\x06", "an empty ZIP archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office file (.doc/.xls/.ppt)"),
    (b"\x7fELF", "a Linux executable"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"BZh", "a bzip2 archive"),
    (b"\xcf\xfa\xed\xfe", "a macOS executable"),
    (b"\x00asm", "a WebAssembly module"),
    (b"ID3", "an MP3 file"),
    (b"OggS", "an Ogg media file"),
    (b"fLaC", "a FLAC audio file"),
    (b"SQLite format 3\x00", "an SQLite database"),
)


def sniff(data: bytes) -> str | None:
    """What binary format the bytes look like ("a PDF", "a ZIP archive ..."), or None if not recognised."""
    head = data[:1024]
    if head.startswith(b"PK\x03\x04"):
        return zip_kind(data)
    if head.startswith(b"MZ") and b"\x00" in head:
        return "a Windows executable"
    if head[4:8] == b"ftyp":
        return "an MP4/MOV video or HEIC image"
    if head.startswith(b"RIFF") and len(head) >= 12:
        return "a RIFF media file (WAV/AVI/WebP)"
    for magic, kind in _SIGNATURES:
        if head.startswith(magic):
            return kind
    if b"%PDF-" in head and b"\x00" in head:
        return "a PDF"
    return None


def zip_kind(data: bytes) -> str:
    try:
        names = set(zipfile.ZipFile(BytesIO(data)).namelist()) if data.count(b"PK\x01\x02") <= 100_000 else set()
    except (zipfile.BadZipFile, OSError, ValueError):
        return "a ZIP archive"
    for part, kind in (
        ("word/document.xml", "a Word document (.docx)"),
        ("xl/workbook.xml", "an Excel workbook (.xlsx)"),
        ("ppt/presentation.xml", "a PowerPoint presentation (.pptx)"),
        ("META-INF/container.xml", "an EPUB e-book"),
        ("content.xml", "an OpenDocument file (.odt/.ods/.odp)"),
    ):
        if part in names:
            return kind
    return "a ZIP archive"


def mislabelled(kind: str, ext: str) -> str:
    return f"this file looks like {kind}, not {ext}; rename it with the right extension or convert it"


# --------------------------------------------------------------------------- zip containers


def open_zip(data: bytes, limits: ParseLimits, label: str) -> zipfile.ZipFile:
    """Open a zip-based file after checking its central directory: member count, inflated sizes, ratios.

    Nothing is inflated here; `read_member` / `open_member` then never return more than a member declares.
    """
    if data.count(b"PK\x01\x02") > limits.max_zip_members:  # before ZipFile reads the whole directory
        raise _too_many_members(limits, label)
    zf = zipfile.ZipFile(BytesIO(data))
    infos = zf.infolist()
    if len(infos) > limits.max_zip_members:
        raise _too_many_members(limits, label)
    total = 0
    for info in infos:
        size = info.file_size
        total += size
        if size > limits.max_zip_member_mb * MB:
            raise ParseError(
                f"{label} part {info.filename!r} inflates to {size / MB:,.0f} MB, over the "
                f"{limits.max_zip_member_mb:g} MB limit per part (MAX_ZIP_MEMBER_MB); refused before inflating"
            )
        ratio = size / max(info.compress_size, 1)
        if size >= _RATIO_MIN_BYTES and ratio > limits.max_compression_ratio:
            raise ParseError(
                f"{label} part {info.filename!r} is compressed {ratio:,.0f}:1, over the "
                f"{limits.max_compression_ratio:g}:1 limit (MAX_COMPRESSION_RATIO), a zip bomb?"
            )
    if total > limits.max_inflated_mb * MB:
        raise ParseError(
            f"{label} inflates to {total / MB:,.0f} MB, over the {limits.max_inflated_mb:g} MB limit "
            "(MAX_INFLATED_MB); refused before inflating"
        )
    return zf


def _too_many_members(limits: ParseLimits, label: str) -> ParseError:
    return ParseError(f"{label} has more than {limits.max_zip_members:,} parts (MAX_ZIP_MEMBERS); refused")


class _Bounded:
    """A read-only stream that fails once more than `limit` bytes came out (a member lying about its size)."""

    def __init__(self, raw: IO[bytes], limit: int, name: str) -> None:
        self.raw, self.left, self.name = raw, limit, name

    def read(self, n: int = -1) -> bytes:
        chunk = self.raw.read(n if n >= 0 else self.left + 1)
        self.left -= len(chunk)
        if self.left < 0:
            raise ParseError(f"part {self.name!r} inflates to more than it declares; refused (a zip bomb?)")
        return chunk


def open_member(zf: zipfile.ZipFile, name: str) -> _Bounded:
    """A streaming reader of one (already size-checked) member."""
    info = zf.getinfo(name)
    return _Bounded(zf.open(info), info.file_size, name)


def member_size(zf: zipfile.ZipFile, name: str) -> int | None:
    try:
        return zf.getinfo(name).file_size
    except KeyError:
        return None
