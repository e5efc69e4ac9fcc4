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


# --------------------------------------------------------------------------- formats with locations (issue 17)


def parts_of(data: bytes) -> dict[str, bytes]:
    """The parts of a zip-based file (a real .xlsx/.pptx/.epub made by its library), to rebuild it altered."""
    with zipfile.ZipFile(BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def rezip(parts: dict[str, bytes], replace: dict[str, bytes], *, compresslevel: int | None = None) -> bytes:
    """The same parts with some replaced or added (the first part, e.g. an EPUB's mimetype, stays first)."""
    out = BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=compresslevel) as zf:
        for name, data in {**parts, **replace}.items():
            zf.writestr(name, data)
    return out.getvalue()


def write_zip_bomb(path: Path, parts: dict[str, bytes], bomb: str, inflated: int) -> None:
    """`parts` with part `bomb` replaced by `inflated` bytes of zeros (streamed: memory stays flat)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, data in parts.items():
            if name != bomb:
                zf.writestr(name, data)
        with zf.open(bomb, "w", force_zip64=True) as stream:
            _write_zeros(stream, inflated)


def sheet_xml(rows: int, cols: int) -> bytes:
    """An .xlsx worksheet of rows × cols numeric cells with varied values (compresses like real data, ~5:1)."""
    letters = [chr(65 + c % 26) + (chr(65 + c // 26) if c >= 26 else "") for c in range(cols)]
    head = (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
    )
    body = bytearray(head)
    for r in range(1, rows + 1):
        body += f'<row r="{r}">'.encode()
        for c, letter in enumerate(letters):
            body += f'<c r="{letter}{r}"><v>{(r * 7919 + c * 104729) % 1000003}</v></c>'.encode()
        body += b"</row>"
    body += b"</sheetData></worksheet>"
    return bytes(body)


def write_cell_bomb_csv(path: Path, rows: int, cols: int = 10) -> None:
    """`rows` × `cols` numeric cells of CSV (1,000,000 cells: about 7 MB)."""
    with path.open("w") as f:
        f.write(",".join(f"col{c}" for c in range(cols)) + "\n")
        for r in range(rows):
            f.write(",".join(str((r * 31 + c) % 9973) for c in range(cols)) + "\n")


def many_cues_vtt(cues: int) -> bytes:
    """A WebVTT transcript of `cues` two-second cues, a voice tag on every tenth."""
    out = ["WEBVTT", ""]
    for i in range(cues):
        start, end = i * 2, i * 2 + 2
        stamp = f"{start // 3600:02d}:{start // 60 % 60:02d}:{start % 60:02d}.000 --> "
        stamp += f"{end // 3600:02d}:{end // 60 % 60:02d}:{end % 60:02d}.000"
        voice = "<v Speaker>" if i % 10 == 0 else ""
        out += [stamp, f"{voice}line {i} of the transcript", ""]
    return "\n".join(out).encode()


def entity_bomb_xml(root: str = "worksheet") -> bytes:
    """Billion laughs: nine levels of ten entity references each (10^9 "lol"s if expanded)."""
    decls = ['<!ENTITY lol0 "lol">']
    decls += [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)]
    return f'<?xml version="1.0"?><!DOCTYPE {root} [{"".join(decls)}]><{root}>&lol9;</{root}>'.encode()
