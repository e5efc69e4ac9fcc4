"""Builders of hostile files (zip and paragraph bombs, huge PDFs, long runs), generated in code, streamed to disk."""

from __future__ import annotations

import zipfile
from io import BytesIO
from pathlib import Path
from typing import IO

import docx
from reportlab.lib.pagesizes import A6
from reportlab.pdfgen import canvas

MB = 1024 * 1024


def _docx_parts() -> dict[str, bytes]:
    """The parts of an empty python-docx document."""
    out = BytesIO()
    docx.Document().save(out)
    with zipfile.ZipFile(out) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def docx_with_body(body_xml: str, *, compresslevel: int | None = None) -> bytes:
    """A valid .docx whose <w:body> starts with `body_xml`."""
    out = BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=compresslevel) as zf:
        for name, data in _docx_parts().items():
            if name == "word/document.xml":
                text = data.decode()
                at = text.index("<w:body>") + len("<w:body>")
                data = (text[:at] + body_xml + text[at:]).encode()
            zf.writestr(name, data)
    return out.getvalue()


def paragraph_bomb_docx(paragraphs: int = 900_000) -> bytes:
    """~45-90 KB: `paragraphs` empty <w:p/> elements."""
    return docx_with_body("<w:p/>" * paragraphs)


def _write_zeros(stream: IO[bytes], size: int) -> None:
    block = bytes(MB)
    for _ in range(size // MB):
        stream.write(block)
    stream.write(bytes(size % MB))


def write_zip_bomb_docx(path: Path, inflated: int, *, members: int = 1) -> None:
    """A .docx whose word/document.xml (and `members - 1` more parts) are `inflated` bytes of zeros each.

    Written as a stream (memory stays flat); zeros deflate about 1000:1.
    """
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, data in _docx_parts().items():
            if name != "word/document.xml":
                zf.writestr(name, data)
        for i in range(members):
            name = "word/document.xml" if i == 0 else f"word/media/pad{i}.bin"
            with zf.open(name, "w", force_zip64=True) as stream:
                _write_zeros(stream, inflated)


def zip_bytes(parts: dict[str, bytes]) -> bytes:
    out = BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in parts.items():
            zf.writestr(name, data)
    return out.getvalue()


def many_pages_pdf(pages: int) -> bytes:
    """A PDF of `pages` tiny pages with a word each."""
    out = BytesIO()
    pdf = canvas.Canvas(out, pagesize=A6)
    for number in range(1, pages + 1):
        pdf.drawString(20, 100, f"page {number}")
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def write_long_run_text(path: Path, size: int) -> None:
    """`size` bytes of letters with no space or newline."""
    with path.open("wb") as f:
        block = b"abcdefghij" * (MB // 10)
        for _ in range(size // len(block)):
            f.write(block)
        f.write(b"x" * (size % len(block)))
