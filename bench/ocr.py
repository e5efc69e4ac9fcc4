"""OCR quality and cost on pages drawn here (issue 32): character error rate and seconds per page, per kind.

Kinds: body text at 18, 28 and 40 px in four fonts, rotated 2°, with 3 % noise and blur, a table, two columns,
a scanned PDF page (rendered by PDFium as ingestion does), and one big 6,000 × 6,000 image (36 megapixels,
under OCR_MAX_PIXELS) for memory. Each page goes through the production parser (`parsing.parsers.parse`:
decode, cap, scale, OCR, reading order). CER is the edit distance over the reference's length, whitespace
runs made one space; `CER no-space` ignores spaces too (PP-OCR's recogniser sometimes drops the space
between English words). Prints a table and writes JSON with the load average and the peak RSS.

    nice .venv/bin/python bench/ocr.py [--pages 2] [--json bench/results/ocr.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image

from bench.common import ROOT  # noqa: F401  (puts the repository on sys.path)
from ragchat.documents.parsing import ocr
from ragchat.documents.parsing.parsers import parse
from tests.support import scans


def distance(a: str, b: str) -> int:
    """Levenshtein distance (two rows)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def cer(reference: str, hypothesis: str, *, spaces: bool = True) -> float:
    norm = (lambda s: re.sub(r"\s+", " ", s).strip()) if spaces else (lambda s: re.sub(r"\s+", "", s))
    ref, hyp = norm(reference), norm(hypothesis)
    return distance(ref, hyp) / max(len(ref), 1)


Page = tuple[bytes, str, str]  # file bytes, file name, reference text


def kinds(seed: int) -> dict[str, Callable[[], Page]]:
    body = scans.sentences(14, seed)

    def text(size: int, font: str, **kw: Any) -> Callable[[], Page]:
        return lambda: (scans.png(scans.text_page(body, size=size, font_name=font, **kw)), "page.png", "\n".join(body))

    def table() -> Page:
        rows = [["Pier", "Permits", "Inspected"]] + [
            [f"Quay {n}", str(10 + n * 7), f"{n + 1:02d} May 2026"] for n in range(1, 9)
        ]
        ref = "\n".join(" ".join(r) for r in rows)
        return scans.png(scans.table_page(rows)), "table.png", ref

    def columns() -> Page:
        left, right = scans.sentences(12, seed + 1, words=5), scans.sentences(12, seed + 2, words=5)
        title = "Harbour Authority Quarterly Notes"
        ref = "\n".join([title, *left, *right])
        return scans.png(scans.two_columns(left, right, title=title)), "columns.png", ref

    def pdf() -> Page:
        page = scans.text_page(body, size=28, width=1400)
        return scans.scanned_pdf([page], dpi=170), "scan.pdf", "\n".join(body)

    def big() -> Page:
        page = scans.text_page(body, size=120, width=6000)
        canvas = Image.new("L", (6000, 6000), 255)
        canvas.paste(page, (0, 0))
        return scans.png(canvas), "big.png", "\n".join(body)

    return {
        "text 18px DejaVu Sans": text(18, scans.FONTS[0]),
        "text 28px DejaVu Serif": text(28, scans.FONTS[1]),
        "text 40px Liberation Sans": text(40, scans.FONTS[2]),
        "text 28px Liberation Serif": text(28, scans.FONTS[3]),
        "rotated 2°": text(28, scans.FONTS[0], angle=2.0),
        "noise 3% + blur": text(28, scans.FONTS[0], noise=0.03, seed=seed),
        "table 9×3": table,
        "two columns + title": columns,
        "scanned PDF page": pdf,
        "6000×6000 image (36 MP)": big,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=2, help="pages per kind (each with other sentences)")
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "ocr.json", help="output")
    args = ap.parse_args()
    if ocr.available():
        raise SystemExit(ocr.available())
    scans.png(scans.text_page(["warm up"], width=300))
    parse(scans.png(scans.text_page(["Warm up the engine"], width=600)), "warm.png")  # model load not timed
    load_before = os.getloadavg()
    rows = []
    for name in kinds(0):
        seconds, cers, nospace, confidences, rss = [], [], [], [], []
        for n in range(args.pages):
            data, filename, reference = kinds(100 + n)[name]()
            began = time.monotonic()
            doc = parse(data, filename)
            seconds.append(time.monotonic() - began)
            got = "\n".join(s.text for s in doc.sections)
            cers.append(cer(reference, got))
            nospace.append(cer(reference, got, spaces=False))
            confidences += [s.location["ocr_confidence"] for s in doc.sections if s.location]
            rss.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        rows.append(
            {
                "kind": name,
                "pages": args.pages,
                "cer": round(statistics.mean(cers), 4),
                "cer_no_space": round(statistics.mean(nospace), 4),
                "s_per_page": round(statistics.mean(seconds), 2),
                "confidence": round(statistics.mean(confidences), 3) if confidences else None,
                "peak_rss_mb": round(max(rss)),
            }
        )
        print(rows[-1], flush=True)
    load_after = os.getloadavg()
    print(f"\nOCR: {ocr.ENGINE_NAME}; load average before {load_before[0]:.1f}, after {load_after[0]:.1f}\n")
    print("| kind | pages | CER | CER no-space | s/page | confidence | peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['kind']} | {r['pages']} | {r['cer']:.3f} | {r['cer_no_space']:.3f} | {r['s_per_page']:.1f} "
            f"| {r['confidence']} | {r['peak_rss_mb']} |"
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "engine": ocr.ENGINE_NAME,
                "pages_per_kind": args.pages,
                "cpus": os.cpu_count(),
                "load_before": load_before,
                "load_after": load_after,
                "rows": rows,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
