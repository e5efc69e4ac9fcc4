"""OCR of scanned pages and images: RapidOCR (PP-OCRv4 detection + recognition ONNX models shipped in the
`rapidocr-onnxruntime` wheel, Apache-2.0), run on the CPU with onnxruntime, bounded.

Bounds: the caller refuses images over OCR_MAX_PIXELS before decoding them; here a page is scaled so its long
side is at most `MAX_SIDE` pixels (what the detector is tuned for, and a cap on memory and time per page), and
recognition stops once OCR_PAGE_TIMEOUT_S has passed on a page (what was read so far is kept, and said so).
One page at a time per process: onnxruntime already uses every core, two pages at once would only thrash.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

MAX_SIDE = 2000  # the long side of a page given to the detector (RapidOCR's own max_side_len)
MIN_CONFIDENCE = 0.6  # a recognised line under this is dropped (noise reads as short, unsure lines)
_REC_BATCH = 12  # lines recognised between two looks at the clock
ENGINE_NAME = "RapidOCR 1.4.4 (PP-OCRv4, onnxruntime)"
_BLANK_SIDE = 512  # a page is looked at this small to tell whether it is one colour
_BLANK_RANGE = 16  # grey levels (0..255) a one-colour page may span (scanner and JPEG noise, averaged)
MAX_LINES = 2000  # recognised lines kept with their boxes per page (the viewer's highlights); the text keeps all

_lock = threading.Lock()
_engine: Any = None


@cache
def available() -> str | None:
    """None when the OCR engine imports; else why not (shown to people when a scan or image comes in)."""
    try:
        import rapidocr_onnxruntime  # noqa: F401
    except Exception as exc:  # ImportError, or OSError from a missing system library (cv2 and libGL)
        log.warning("OCR is off: rapidocr-onnxruntime does not import (%s)", exc)
        return f"the OCR engine (rapidocr-onnxruntime) is not installed or does not load: {exc}"
    return None


def _get_engine() -> Any:
    global _engine
    if _engine is None:
        from rapidocr_onnxruntime import RapidOCR

        # the detector sees the page as it is (at most MAX_SIDE): RapidOCR's default enlarges a small image
        # until its short side is 736 px, which split lines into overlapping boxes read twice ("western 1 pier")
        _engine = RapidOCR(print_verbose=False, det_limit_type="max", det_limit_side_len=MAX_SIDE)
    return _engine


@dataclass(frozen=True)
class OcrLine:
    """One recognised line: its text, its box (pixels of the page image OCR read, origin top left) and its
    confidence (0..1)."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    confidence: float


@dataclass(frozen=True)
class PageLayout:
    """Where OCR read what on one page: the page image's size (what the boxes are in: the image `fit` made,
    the one the viewer is shown) and the lines in reading order (at most MAX_LINES)."""

    width: int
    height: int
    lines: tuple[OcrLine, ...]


@dataclass(frozen=True)
class PageText:
    """What OCR read on one page: text in reading order, mean confidence (0..1, per character) of the lines
    kept, whether the time budget cut it short, and the lines with their boxes (`layout`)."""

    text: str
    confidence: float | None
    lines: int
    seconds: float
    cut_short: bool = False
    layout: PageLayout | None = None


@dataclass
class _Box:
    x0: float
    y0: float
    x1: float
    y1: float
    text: str = ""
    score: float = 0.0

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2


def fit(image: Any, max_side: int = MAX_SIDE) -> Any:
    """A PIL image scaled down (never up) so its long side is at most `max_side`, as 8-bit RGB (scaled in its
    own mode first: a bilevel or grey page is not made three times bigger before it is made smaller)."""
    from PIL import Image

    if image.mode not in ("RGB", "L"):
        image = image.convert("L" if image.mode in ("1", "LA", "I", "I;16", "F") else "RGB")
    long_side = max(image.size)
    if long_side > max_side:
        if long_side >= 2 * max_side:  # a box reduce by a whole factor first: ~15× cheaper than LANCZOS all the way
            image = image.reduce(long_side // max_side)
            long_side = max(image.size)
        scale = max_side / long_side
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        image = image.resize(size, Image.Resampling.LANCZOS)
    return image.convert("RGB") if image.mode != "RGB" else image


def blank(image: Any) -> bool:
    """Whether a page is one colour (blank paper, a filled rectangle): the grey levels of a copy at most
    `_BLANK_SIDE` pixels on its long side span at most `_BLANK_RANGE`. A line of text, even small or faint, spans
    more; so does noise (which OCR then reads as nothing). Costs milliseconds, where OCR of a blank 2,000 px page
    took 5-7 s."""
    factor = max(1, -(-max(image.size) // _BLANK_SIDE))
    small = (image.reduce(factor) if factor > 1 else image).convert("L")
    low, high = small.getextrema()
    return high - low <= _BLANK_RANGE


def recognise(image: Any, budget_s: float) -> PageText:
    """OCR one page (a PIL image, already within OCR_MAX_PIXELS) within `budget_s` seconds of recognition."""
    started = time.monotonic()
    image = fit(image)
    if blank(image):  # nothing to read: the detector would spend seconds to find no line
        return PageText("", None, 0, time.monotonic() - started)
    pixels = np.asarray(image)[:, :, ::-1].copy()  # RGB -> BGR, what the engine's OpenCV code expects
    with _lock:
        engine = _get_engine()
        end = time.monotonic() + budget_s
        img, ratio_h, ratio_w = engine.preprocess(pixels)
        img, steps = engine.maybe_add_letterbox(img, {})
        boxes, _ = engine.auto_text_det(img)
        if boxes is None or len(boxes) == 0:
            return PageText("", None, 0, time.monotonic() - started)
        # no 180° line classifier: on upright English lines it turned a third of them over (and read nothing)
        crops = [_enlarged(c, _scale_for(boxes)) for c in engine.get_crop_img_list(img, boxes)]
        read: list[tuple[str, float]] = []
        cut = False
        for start in range(0, len(crops), _REC_BATCH):
            if time.monotonic() > end:
                cut = True
                break
            got, _ = engine.text_rec(crops[start : start + _REC_BATCH])
            read.extend((str(t), float(s)) for t, s in got)
    kept = []
    for points, (text, score) in zip(boxes, read, strict=False):
        text = text.strip()
        if text and score >= MIN_CONFIDENCE:
            xs, ys = points[:, 0], points[:, 1]
            kept.append(_Box(float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max()), text, score))
    seconds = time.monotonic() - started
    if not kept:
        return PageText("", None, 0, seconds, cut)
    chars = sum(len(b.text) for b in kept)
    confidence = sum(b.score * len(b.text) for b in kept) / chars
    ordered = reading_order(kept, img.shape[1])
    text = "\n".join(" ".join(b.text for b in line) for line in ordered)
    pad = steps.get("padding_1") or {}
    layout = _layout(ordered, image.width, image.height, (ratio_w, ratio_h), (pad.get("left", 0), pad.get("top", 0)))
    return PageText(text, round(confidence, 4), len(kept), seconds, cut, layout)


def _layout(
    ordered: list[list[_Box]], width: int, height: int, ratio: tuple[float, float], pad: tuple[float, float]
) -> PageLayout:
    """The boxes taken back from the engine's working image (padded on top, resized to multiples of 32) to the
    page image's pixels, as RapidOCR's own `_get_origin_points` does; the first MAX_LINES in reading order."""

    def px(value: float, offset: float, scale: float, limit: int) -> float:
        return round(min(max((value - offset) * scale, 0.0), float(limit)), 1)

    lines = [
        OcrLine(
            b.text,
            px(b.x0, pad[0], ratio[0], width),
            px(b.y0, pad[1], ratio[1], height),
            px(b.x1, pad[0], ratio[0], width),
            px(b.y1, pad[1], ratio[1], height),
            round(b.score, 4),
        )
        for line in ordered
        for b in line
    ]
    return PageLayout(width, height, tuple(lines[:MAX_LINES]))


def _scale_for(boxes: Any) -> float:
    """How much to enlarge the line images before recognition: small print (lines under 48 px high, the
    recogniser's input height) read with its spaces dropped ("Tidetablesfor"); enlarged up to 2× they come back
    (bench/ocr.py: CER 0.105 -> 0.0 on 18 px text). The recogniser scales every line to 48 px anyway: no cost."""
    heights = sorted(float(b[:, 1].max() - b[:, 1].min()) for b in boxes)
    median = heights[len(heights) // 2] if heights else 48.0
    return min(2.0, max(1.0, 48.0 / max(median, 1.0)))


def _enlarged(crop: Any, scale: float) -> Any:
    import cv2

    if scale <= 1.0:
        return crop
    return cv2.resize(crop, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC)


def _lines(boxes: list[_Box]) -> list[list[_Box]]:
    """Boxes grouped into lines (centres within half a line height), top to bottom, each left to right."""
    lines: list[list[_Box]] = []
    for box in sorted(boxes, key=lambda b: b.cy):
        if lines:
            last = lines[-1]
            cy = sum(b.cy for b in last) / len(last)
            height = sum(b.height for b in last) / len(last)
            if abs(box.cy - cy) <= max(height, box.height) / 2:
                last.append(box)
                continue
        lines.append([box])
    return [sorted(line, key=lambda b: b.x0) for line in lines]


def reading_order(boxes: list[_Box], width: float) -> list[list[_Box]]:
    """Lines in reading order: a page set in two columns (a vertical gutter no box crosses, with at least three
    wide lines on each side; a heading across both above them) reads the left column, then the right one. A
    table's narrow cells do not make columns: its rows stay rows."""
    for x in np.linspace(width * 0.3, width * 0.7, 41):
        across = [b for b in boxes if b.x0 < x < b.x1]
        left = [b for b in boxes if b.x1 <= x]
        right = [b for b in boxes if b.x0 >= x]
        if not left or not right:
            continue
        top = min(b.y0 for b in left + right)
        if any(b.y1 > top for b in across):
            continue
        wide = width * 0.2
        if sum(b.x1 - b.x0 >= wide for b in left) >= 3 and sum(b.x1 - b.x0 >= wide for b in right) >= 3:
            return _lines(across) + _lines(left) + _lines(right)
    return _lines(boxes)
