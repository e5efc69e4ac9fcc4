"""Pages drawn here for OCR tests and bench/ocr.py: text at several sizes and fonts, rotated a little, with
noise; a table; two columns; pure noise. Each maker returns (PIL image, the text drawn, in reading order)."""

from __future__ import annotations

import random
import struct
from io import BytesIO
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONT_DIRS = (Path("/usr/share/fonts/truetype/dejavu"), Path("/usr/share/fonts/truetype/liberation"))
FONTS = ("DejaVuSans.ttf", "DejaVuSerif.ttf", "LiberationSans-Regular.ttf", "LiberationSerif-Regular.ttf")

WORDS = (
    "the harbour authority approved seventeen permits for the northern quay after the spring inspection "
    "found corrosion in four pylons while the budget committee postponed dredging until the autumn review "
    "engineers measured tidal loads and recommended replacing the fender system before winter storms"
).split()


def font(size: int, name: str = FONTS[0]) -> Any:
    for folder in FONT_DIRS:
        path = folder / name
        if path.exists():
            return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size)


def sentences(n: int, seed: int, words: int = 9) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "." for _ in range(n)]


def text_page(
    lines: list[str],
    *,
    size: int = 28,
    font_name: str = FONTS[0],
    width: int = 1400,
    angle: float = 0.0,
    noise: float = 0.0,
    seed: int = 0,
) -> Image.Image:
    """Lines of text on a white page; `angle` degrees of rotation, `noise` the share of pixels flipped."""
    step = int(size * 1.7)
    face = font(size, font_name)
    longest = max((face.getlength(line) for line in lines), default=0)
    width = max(width, int(longest) + 80)  # never cut a line
    page = Image.new("L", (width, step * len(lines) + 2 * size + 40), 255)
    draw = ImageDraw.Draw(page)
    for i, line in enumerate(lines):
        draw.text((40, 20 + size + i * step), line, font=face, fill=0)
    if angle:
        page = page.rotate(angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255)
    if noise:
        rng = random.Random(seed)
        px = page.load()
        assert px is not None
        for _ in range(int(page.width * page.height * noise)):
            x, y = rng.randrange(page.width), rng.randrange(page.height)
            px[x, y] = 255 - px[x, y]  # type: ignore[operator]
        page = page.filter(ImageFilter.GaussianBlur(0.4))
    return page


def table_page(rows: list[list[str]], *, size: int = 26) -> Image.Image:
    cols = len(rows[0])
    cell_w, cell_h = 300, int(size * 2.2)
    page = Image.new("L", (cols * cell_w + 80, len(rows) * cell_h + 80), 255)
    draw = ImageDraw.Draw(page)
    face = font(size)
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            x, y = 40 + c * cell_w, 40 + r * cell_h
            draw.rectangle((x, y, x + cell_w, y + cell_h), outline=0, width=2)
            draw.text((x + 14, y + (cell_h - size) // 2), cell, font=face, fill=0)
    return page


def two_columns(left: list[str], right: list[str], *, size: int = 24, title: str = "") -> Image.Image:
    step, col_w = int(size * 1.7), 760
    top = 40 + (int(size * 2.4) if title else 0)
    page = Image.new("L", (2 * col_w + 160, top + step * max(len(left), len(right)) + 60), 255)
    draw = ImageDraw.Draw(page)
    face = font(size)
    if title:
        draw.text((40, 30), title, font=font(int(size * 1.4)), fill=0)
    for col, lines in ((0, left), (1, right)):
        for i, line in enumerate(lines):
            draw.text((40 + col * (col_w + 80), top + i * step), line, font=face, fill=0)
    return page


def noise_page(width: int = 900, height: int = 700, seed: int = 1) -> Image.Image:
    rng = random.Random(seed)
    return Image.frombytes("L", (width, height), bytes(rng.getrandbits(8) for _ in range(width * height)))


def png(image: Image.Image) -> bytes:
    out = BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def encoded(image: Image.Image, fmt: str, **options: Any) -> bytes:
    out = BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def tiff(frames: list[Image.Image]) -> bytes:
    out = BytesIO()
    frames[0].save(out, "TIFF", save_all=True, append_images=frames[1:], compression="tiff_deflate")
    return out.getvalue()


def group4_strip(page: Image.Image) -> bytes:
    """A bilevel page compressed with CCITT Group 4 as one TIFF strip (its raw bytes)."""
    raw = encoded(page.convert("1"), "TIFF", compression="group4", strip_size=1 << 30)
    tags = Image.open(BytesIO(raw)).tag_v2  # pyright: ignore[reportAttributeAccessIssue]
    return b"".join(raw[o : o + c] for o, c in zip(tags[273], tags[279], strict=True))


def group4_tiff(strips: list[bytes], width: int, height: int, pages: int, *, copies: bool = True) -> bytes:
    """A multi-page bilevel TIFF of `pages` pages of `width` × `height`, page n drawn by strip n % len(strips)
    (`group4_strip`), written fast without Pillow: each page its own IFD and, with `copies`, its own copy of the
    strip's bytes (a file as big as a real scan), else all pages pointing at the strips written once (tiny)."""
    tags = [(256, 4, width), (257, 4, height), (258, 3, 1), (259, 3, 4), (262, 3, 1), (273, 4, 0)]
    tags += [(277, 3, 1), (278, 4, height), (279, 4, 0)]
    ifd_size = 2 + 12 * len(tags) + 4
    out = bytearray(b"II*\x00" + b"\x00" * 4)
    at: list[int] = []
    if not copies:
        for strip in strips:
            at.append(len(out))
            out += strip + b"\x00" * (len(strip) & 1)
    out[4:8] = struct.pack("<I", len(out))
    for i in range(pages):
        strip = strips[i % len(strips)]
        here = len(out) + ifd_size if copies else at[i % len(strips)]
        nxt = len(out) + ifd_size + (len(strip) + (len(strip) & 1) if copies else 0)
        out += struct.pack("<H", len(tags))
        for tag, kind, value in tags:
            value = {273: here, 279: len(strip)}.get(tag, value)
            packed = struct.pack("<HH", value, 0) if kind == 3 else struct.pack("<I", value)
            out += struct.pack("<HHI", tag, kind, 1) + packed
        out += struct.pack("<I", nxt if i < pages - 1 else 0)
        if copies:
            out += strip + b"\x00" * (len(strip) & 1)
    return bytes(out)


def scanned_pdf(pages: list[Image.Image | str], dpi: int = 150) -> bytes:
    """A PDF whose pages are images (scans) or, for a string, a real text layer: a mixed PDF."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    out = BytesIO()
    pdf = canvas.Canvas(out, pagesize=(612, 792))
    for page in pages:
        if isinstance(page, str):
            text = pdf.beginText(72, 720)
            text.setFont("Helvetica", 11)
            for line in page.split("\n"):
                text.textLine(line)
            pdf.drawText(text)
        else:
            w, h = page.width * 72 / dpi, page.height * 72 / dpi
            scale = min(1.0, 560 / w, 740 / h)
            pdf.drawImage(ImageReader(page.convert("RGB")), 26, 792 - 26 - h * scale, w * scale, h * scale)
        pdf.showPage()
    pdf.save()
    return out.getvalue()
