"""Pages without text, read by OCR: one section per page that gave text (its page number kept, its OCR
confidence in the section's location), under the OCR limits, with a plain account of what was done.

The limits: at most OCR_MAX_PAGES pages, OCR_PAGE_TIMEOUT_S of recognition per page, OCR_TIME_BUDGET_S for
the whole document, and pixels decoded within OCR_MAX_MEGAPIXELS (and the owner's OCR_USER_MEGAPIXELS_PER_DAY),
checked from a page's size before it is decoded. A cancel is noticed between pages. Pages past a limit are not
read, and the account (`OcrReport.summary`, kept in the document's metadata as `ocr`) says which; a page where
nothing was read (a blank page, noise) is skipped and named, never an error for the document.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ragchat.documents.parsing import ocr
from ragchat.documents.parsing.document import Section
from ragchat.documents.parsing.limits import Deadline, OverBudget, ParseError, ParseLimits

#: A page to read: its number, and a function giving its image (a PIL image) or raising ParseError (too big,
#: undecodable: that page is skipped with the reason; OverBudget: it and the pages after it are not read).
PageSource = tuple[int, Callable[[], Any]]

PDFIUM_LOCK = threading.Lock()  # PDFium is not thread-safe: one rendering at a time per process


def ocr_unavailable(limits: ParseLimits) -> str | None:
    """Why OCR cannot run (OCR_ENABLED off, or the engine does not import), or None."""
    if not limits.ocr_enabled:
        return "OCR is off (OCR_ENABLED=false)"
    return ocr.available()


@dataclass
class OcrReport:
    """What OCR did on a document's pages."""

    total: int  # pages that needed OCR
    read: list[int] = field(default_factory=list)
    empty: list[int] = field(default_factory=list)  # nothing recognised: skipped
    cut_short: list[int] = field(default_factory=list)  # the page's time ran out: partly read
    failed: dict[int, str] = field(default_factory=dict)  # could not be decoded or was too big
    not_read: list[int] = field(default_factory=list)  # past the page cap or the time budget
    stopped_by: str = ""
    confidences: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        """One line for people: "OCR read 12 of 14 pages (mean confidence 0.94); page 3: no text (skipped)..."."""
        mean = f" (mean confidence {sum(self.confidences) / len(self.confidences):.2f})" if self.confidences else ""
        parts = [f"OCR read {len(self.read)} of {self.total} {_pages(self.total)}{mean} in {self.seconds:.0f} s"]
        if self.empty:
            parts.append(f"{_pages(len(self.empty))} {_spans(self.empty)}: no text found (skipped)")
        if self.cut_short:
            parts.append(
                f"{_pages(len(self.cut_short))} {_spans(self.cut_short)}: partly read "
                "(OCR_PAGE_TIMEOUT_S ran out on the page)"
            )
        for number, reason in sorted(self.failed.items())[:5]:
            parts.append(f"page {number}: {reason}")
        if len(self.failed) > 5:
            parts.append(f"{len(self.failed) - 5} more pages could not be read")
        if self.not_read:
            parts.append(f"{_pages(len(self.not_read))} {_spans(self.not_read)} not read ({self.stopped_by})")
        return "; ".join(parts)


def _pages(n: int) -> str:
    return "page" if n == 1 else "pages"


def _spans(numbers: list[int]) -> str:
    """[1, 2, 3, 7, 9, 10] -> "1–3, 7, 9–10" (at most 8 spans shown)."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    shown = [f"{a}" if a == b else f"{a}–{b}" for a, b in spans[:8]]
    return ", ".join(shown) + (", …" if len(spans) > 8 else "")


def read_pages(
    pages: Iterable[PageSource], total: int, limits: ParseLimits, deadline: Deadline
) -> tuple[list[Section], OcrReport]:
    """OCR `pages` (in order; `total` of them) within the OCR limits; sections of the pages that gave text."""
    report = OcrReport(total=total)
    sections: list[Section] = []
    started = time.monotonic()
    budget_end = started + limits.ocr_time_budget_s
    done = 0
    for number, image_of in pages:
        deadline.stop_if_cancelled()
        if report.stopped_by and report.not_read:  # a budget ran out: no page after it is decoded
            report.not_read.append(number)
            continue
        if done >= limits.ocr_max_pages:
            report.not_read.append(number)
            report.stopped_by = f"over the {limits.ocr_max_pages:,} page limit of OCR_MAX_PAGES"
            continue
        if time.monotonic() > budget_end:
            report.not_read.append(number)
            report.stopped_by = f"the {limits.ocr_time_budget_s:g} s OCR_TIME_BUDGET_S ran out"
            continue
        done += 1
        deadline.note(f"OCR page {done} of {min(total, limits.ocr_max_pages)}")
        try:
            image = image_of()
        except OverBudget as exc:
            done -= 1
            report.not_read.append(number)
            report.stopped_by = str(exc)
            continue
        except ParseError as exc:
            report.failed[number] = str(exc)
            continue
        budget = min(limits.ocr_page_timeout_s, max(budget_end - time.monotonic(), 0.0))
        page = ocr.recognise(image, budget)
        del image
        if page.cut_short and not page.text.strip():
            report.failed[number] = f"not read: the {limits.ocr_page_timeout_s:g} s OCR_PAGE_TIMEOUT_S ran out"
            continue
        if page.cut_short:
            report.cut_short.append(number)
        if not page.text.strip():
            report.empty.append(number)
            continue
        report.read.append(number)
        assert page.confidence is not None
        report.confidences.append(page.confidence)
        location = {"ocr_confidence": page.confidence}
        sections.append(Section(text=page.text, page=number, location=location, ocr=page.layout))
    report.seconds = time.monotonic() - started
    return sections, report
