"""OCR keeps each line's box in the page image's pixels (issue 46, item 6): the boxes fall on the drawn lines,
also for a wide strip the engine pads before detection, and a page keeps at most MAX_LINES of them."""

from __future__ import annotations

import pytest

from ragchat.documents.parsing import ocr
from tests.support import scans

LINES = ["Quarterly tide tables for the harbour", "Pilot boarding at the western pier", "Dredging resumes in May"]


def _drawn_centre(i: int, size: int) -> float:
    """The vertical centre of line `i` as scans.text_page draws it (top at 20 + size + i * step)."""
    return 20 + size + i * int(size * 1.7) + size * 0.6


def test_boxes_are_in_the_page_image_pixels_in_reading_order() -> None:
    if ocr.available():
        pytest.skip("the OCR engine does not load here")
    size = 34
    page = scans.text_page(LINES, size=size, width=1000)
    read = ocr.recognise(page, 60)
    assert read.layout is not None
    assert (read.layout.width, read.layout.height) == page.size
    texts = [line.text.lower() for line in read.layout.lines]
    assert len(texts) == 3 and "tide tables" in texts[0] and "western pier" in texts[1] and "may" in texts[2]
    for i, line in enumerate(read.layout.lines):
        assert 0 <= line.x0 < line.x1 <= page.width and 0 <= line.y0 < line.y1 <= page.height
        assert line.y0 <= _drawn_centre(i, size) <= line.y1, (i, line)
        assert abs(line.x0 - 40) < 15  # drawn from x = 40
        assert 0.6 <= line.confidence <= 1.0
    assert read.text.split("\n") == [line.text for line in read.layout.lines]  # one box a line here


def test_a_wide_strip_padded_by_the_engine_keeps_its_boxes_on_the_line() -> None:
    """RapidOCR letterboxes an image wider than 8:1 (padding on top): the boxes are taken back to the image."""
    if ocr.available():
        pytest.skip("the OCR engine does not load here")
    size = 40
    strip = scans.text_page(["Northern quay fender replacement approved, budget 48,000 EUR in March"], size=size)
    strip = strip.crop((0, 0, max(strip.width, 1700), strip.height))
    assert strip.width / strip.height > 8
    read = ocr.recognise(strip, 60)
    assert read.layout is not None and read.layout.lines
    line = read.layout.lines[0]
    assert line.y0 <= _drawn_centre(0, size) <= line.y1 <= strip.height, (line, strip.size)


def test_a_page_keeps_at_most_max_lines_boxes() -> None:
    boxes = [ocr._Box(10, 20 * i, 200, 20 * i + 15, f"line {i}", 0.9) for i in range(ocr.MAX_LINES + 500)]
    layout = ocr._layout(ocr.reading_order(boxes, 400), 400, 20 * len(boxes), (1.0, 1.0), (0, 0))
    assert len(layout.lines) == ocr.MAX_LINES
    assert [line.text for line in layout.lines[:3]] == ["line 0", "line 1", "line 2"]
