"""OCR's bounds with the real engine: pixel cap before decoding, page cap, time budgets, noise, damaged and
mislabelled images, reading order; pages drawn here (tests/support/scans.py)."""

from __future__ import annotations

import resource
import struct
import time
import zlib
from io import BytesIO
from zipfile import ZipFile

import pytest

from ragchat.core.search import Location
from ragchat.documents.parsing import ocr
from ragchat.documents.parsing.limits import ParseError, ParseLimits
from ragchat.documents.parsing.parsers import parse
from tests.support import scans


def test_the_engine_imports() -> None:
    """rapidocr-onnxruntime is a dependency: a broken install fails here instead of skipping every OCR test."""
    assert ocr.available() is None, ocr.available()


LINES = ["Tide tables for the western pier", "High water at 06:42 and 19:05"]


def png_header(width: int, height: int) -> bytes:
    """A PNG declaring width × height pixels that holds almost nothing."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")
    )


def squash(text: str) -> str:
    return "".join(text.lower().split())


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize(
    ("width", "height", "says"),
    [(20_000, 20_000, "400 megapixels"), (7_000, 7_000, "7,000 × 7,000 pixels (49 megapixels)")],
)
def test_giant_images_are_refused_before_decoding(width: int, height: int, says: str) -> None:
    before, began = rss_mb(), time.monotonic()
    with pytest.raises(ParseError, match="OCR_MAX_PIXELS") as info:
        parse(png_header(width, height), "huge.png")
    assert says in str(info.value)
    assert time.monotonic() - began < 2 and rss_mb() - before < 50  # nothing was decoded


def test_the_pixel_cap_is_a_setting() -> None:
    image = scans.png(scans.text_page(LINES, width=600))
    with pytest.raises(ParseError, match="over the 0 megapixel limit"):
        parse(image, "small.png", ParseLimits(ocr_max_pixels=10_000))


def test_damaged_and_mislabelled_images_say_what_they_are() -> None:
    good = scans.png(scans.text_page(LINES, width=600))
    buf = BytesIO()
    with ZipFile(buf, "w") as zf:
        zf.writestr("notes.txt", "hello")
    cases = {
        "cut.png": (good[: len(good) // 2], r"could not decode the image|not a valid image"),
        "archive.jpg": (buf.getvalue(), r"not a valid image: this file looks like a ZIP archive, not \.jpg"),
        "text.webp": (b"just some words, not an image at all" * 10, "not a valid image"),
        "gif.png": (scans.encoded(scans.noise_page(20, 20), "GIF"), "not a supported image: it is GIF, not .png"),
    }
    for name, (data, says) in cases.items():
        began = time.monotonic()
        with pytest.raises(ParseError, match=says):
            parse(data, name)
        assert time.monotonic() - began < 5, name


def test_ocr_off_refuses_images_and_scans_say_so() -> None:
    off = ParseLimits(ocr_enabled=False)
    with pytest.raises(ParseError, match=r"images are read by OCR and OCR is off \(OCR_ENABLED=false\)"):
        parse(scans.png(scans.text_page(LINES, width=600)), "page.png", off)
    with pytest.raises(ParseError, match=r"no extractable text.*OCR_ENABLED=false.*ocrmypdf"):
        parse(scans.scanned_pdf([scans.text_page(LINES, width=600)]), "scan.pdf", off)


def test_tiff_frames_are_pages_noise_is_skipped_and_the_page_cap_is_said() -> None:
    frames = [scans.text_page(LINES, width=700), scans.noise_page(300, 200), scans.text_page(LINES[::-1], width=700)]
    notes: list[str] = []
    doc = parse(scans.tiff(frames), "pier.tiff", ParseLimits(ocr_max_pages=2), notes.append)
    assert notes == ["OCR page 1 of 2", "OCR page 2 of 2"]
    assert [s.page for s in doc.sections] == [1]
    # PP-OCR's recogniser sometimes drops a space between English words (measured by bench/ocr.py)
    assert "tidetablesforthewesternpier" in squash(doc.sections[0].text) and "06:42" in doc.sections[0].text
    assert doc.sections[0].location is not None and doc.sections[0].location["ocr_confidence"] > 0.8
    assert doc.metadata["page_count"] == 3
    summary = doc.metadata["ocr"]
    assert summary.startswith("OCR read 1 of 3 pages (mean confidence 0.9")
    assert "page 2: no text found (skipped)" in summary
    assert "page 3 not read (over the 2 page limit of OCR_MAX_PAGES)" in summary


def test_a_500_page_scan_is_bounded_and_says_what_was_done() -> None:
    pages = [scans.text_page([f"Scanned sheet {n}", "Harbour ledger"], width=500) for n in (1, 2)]
    pdf = scans.scanned_pdf([pages[n % 2] for n in range(500)])
    began = time.monotonic()
    doc = parse(pdf, "ledger.pdf", ParseLimits(ocr_max_pages=1))
    assert time.monotonic() - began < 120
    assert [s.page for s in doc.sections] == [1] and "ledger" in doc.sections[0].text.lower()
    assert doc.metadata["ocr"].startswith("OCR read 1 of 500 pages")
    assert doc.metadata["ocr"].endswith("pages 2–500 not read (over the 1 page limit of OCR_MAX_PAGES)")

    began = time.monotonic()
    with pytest.raises(ParseError, match=r"no extractable text.*OCR_TIME_BUDGET_S ran out") as info:
        parse(pdf, "ledger.pdf", ParseLimits(ocr_time_budget_s=0.001))
    assert "not read (the 0.001 s OCR_TIME_BUDGET_S ran out)" in str(info.value)
    assert time.monotonic() - began < 60


def test_the_page_timeout_stops_recognition_and_says_so() -> None:
    page = ocr.recognise(scans.text_page(LINES, width=700), budget_s=0.0)
    assert page.cut_short and page.text == ""
    with pytest.raises(ParseError, match=r"not read: the 1e-06 s OCR_PAGE_TIMEOUT_S ran out"):
        parse(scans.png(scans.text_page(LINES, width=700)), "slow.png", ParseLimits(ocr_page_timeout_s=0.000001))


def test_a_mixed_pdf_keeps_its_text_pages() -> None:
    text = "This page has a real text layer, long enough to be kept exactly as it is."
    doc = parse(scans.scanned_pdf([text, scans.text_page(LINES, width=700)]), "mixed.pdf")
    assert (doc.sections[0].page, doc.sections[0].location) == (1, None)
    assert doc.sections[0].text == text
    assert doc.sections[1].page == 2 and "westernpier" in squash(doc.sections[1].text)
    assert doc.metadata["ocr"].startswith("OCR read 1 of 1 page")


def _box(x0: float, y0: float, x1: float, y1: float, text: str) -> ocr._Box:
    return ocr._Box(x0, y0, x1, y1, text, 0.99)


def test_reading_order_two_columns_under_a_title_and_a_table_by_rows() -> None:
    title = _box(40, 10, 900, 50, "Title")
    left = [_box(40, 100 + 40 * i, 700, 130 + 40 * i, f"L{i}") for i in range(4)]
    right = [_box(800, 100 + 40 * i, 1480, 130 + 40 * i, f"R{i}") for i in range(4)]
    lines = ocr.reading_order([*right, title, *left], 1500)
    assert [" ".join(b.text for b in line) for line in lines] == [
        "Title",
        "L0",
        "L1",
        "L2",
        "L3",
        "R0",
        "R1",
        "R2",
        "R3",
    ]
    cells = [
        _box(40 + 300 * c, 100 + 50 * r, 200 + 300 * c, 130 + 50 * r, f"{r}{c}") for r in range(4) for c in range(3)
    ]
    lines = ocr.reading_order(cells, 1000)
    assert [" ".join(b.text for b in line) for line in lines] == ["00 01 02", "10 11 12", "20 21 22", "30 31 32"]


def test_the_confidence_is_part_of_the_location_label() -> None:
    assert Location(ocr_confidence=0.934).label == "OCR 93% confidence"
    assert Location(slide=2, ocr_confidence=0.5).label == "Slide 2, OCR 50% confidence"
