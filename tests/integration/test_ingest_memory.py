"""Hostile files parse in bounded memory and time (issue 17).

Each file is parsed in its own subprocess through `pipeline.parse_document` (what the workers call). Its peak
memory is the process's high-water mark (VmHWM, reset through /proc/self/clear_refs after the imports and the
read, so import-time peaks do not hide it) minus the resident size just before parsing. Run with -s for the table.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.hostile_files import (
    MB,
    many_pages_pdf,
    paragraph_bomb_docx,
    write_long_run_text,
    write_zip_bomb_docx,
)
from tests.unit.test_parsers import make_pdf

pytestmark = pytest.mark.slow  # minutes: `make test-slow` (CI runs it)

PEAK_MB = 300
SECONDS = 20  # of CPU time (the parse's work; a busy machine stretches its wall time, not its work)

_MEASURE = """
import json, sys, time
from ragchat.documents.parsing.parsers import content_type_for
from ragchat.documents.ingest.pipeline import parse_document

def status(key):
    line = next(l for l in open("/proc/self/status") if l.startswith(key + ":"))
    return int(line.split()[1]) / 1024

path = sys.argv[1]
data = open(path, "rb").read()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets VmHWM to the current resident size
base = status("VmRSS")
started = time.monotonic()
cpu_started = time.process_time()
try:
    doc = parse_document(content_type_for(path), path, data)
    result = f"ok: {len(doc.sections)} sections, {sum(len(s.text) for s in doc.sections):,} chars"
except Exception as exc:
    result = f"{type(exc).__name__}: {exc}"
seconds = time.monotonic() - started
cpu = time.process_time() - cpu_started
peak = status("VmHWM") - base
print(json.dumps({"result": result, "peak_mb": peak, "seconds": seconds, "cpu_s": cpu}))
"""


@dataclass(frozen=True)
class Case:
    name: str
    expect: str  # a substring of the result


CASES = [
    Case("paragraph-bomb.docx", "MAX_COMPRESSION_RATIO"),
    Case("zip-bomb.docx", "MAX_ZIP_MEMBER_MB"),
    Case("long-run.txt", "ok: 1 sections, 41,943,040 chars"),
    Case("3000-pages.pdf", "MAX_PDF_PAGES"),
    Case("list-bomb.md", "MAX_ELEMENTS"),
    Case("report-is-a-pdf.txt", "this file looks like a PDF, not .txt"),
    Case("ordinary.pdf", "ok: 1 sections"),
]


def _build(case: Case, path: Path) -> None:
    match case.name:
        case "paragraph-bomb.docx":
            path.write_bytes(paragraph_bomb_docx(900_000))
        case "zip-bomb.docx":
            write_zip_bomb_docx(path, 1024 * MB)
        case "long-run.txt":
            write_long_run_text(path, 40 * MB)
        case "3000-pages.pdf":
            path.write_bytes(many_pages_pdf(3000))
        case "list-bomb.md":
            path.write_bytes(b"- item\n" * 300_000)
        case "report-is-a-pdf.txt" | "ordinary.pdf":
            path.write_bytes(make_pdf([["An ordinary page of text."]]))
        case _:
            raise AssertionError(case.name)


def test_hostile_files_parse_in_bounded_memory_and_time(tmp_path: Path) -> None:
    rows: list[tuple[str, str, float, float, float]] = []
    for case in CASES:
        path = tmp_path / case.name
        started = time.monotonic()
        _build(case, path)
        built = time.monotonic() - started
        proc = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, timeout=120, check=False
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append(
            (f"{case.name} ({path.stat().st_size / MB:.2f} MB)", out["result"], out["peak_mb"], out["cpu_s"], built)
        )
    print(f"\n{'file':34} {'peak MB':>8} {'parse CPU s':>12} {'build s':>8}  result")
    for name, result, peak, seconds, built in rows:
        print(f"{name:34} {peak:8.1f} {seconds:12.2f} {built:8.2f}  {result[:110]}")
    for case, (name, result, peak, seconds, _) in zip(CASES, rows, strict=True):
        assert case.expect in result, (name, result)
        assert peak < PEAK_MB, (name, peak)
        assert seconds < SECONDS, (name, seconds)


@pytest.mark.parametrize("name", ["paragraph-bomb.docx"])
def test_paragraph_bomb_streams_when_the_ratio_check_is_off(tmp_path: Path, name: str) -> None:
    """Past the zip checks, the 900k-paragraph body is streamed: the element cap stops it, memory stays flat."""
    path = tmp_path / name
    path.write_bytes(paragraph_bomb_docx(900_000))
    script = _MEASURE.replace(
        "parse_document(content_type_for(path), path, data)",
        "__import__('importlib').import_module('ragchat.documents.parsing.parsers').parse(data, path, "
        "__import__('importlib').import_module('ragchat.documents.parsing.limits').ParseLimits(max_compression_ratio=1e9))",
    )
    proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\n{name} with MAX_COMPRESSION_RATIO off: {out}")
    assert "MAX_ELEMENTS" in out["result"]
    assert out["peak_mb"] < 50
    assert out["cpu_s"] < SECONDS


# --------------------------------------------------------------------------- formats with locations (issue 17 item 5)

FORMAT_CASES = [
    Case("zip-bomb.xlsx", "MAX_ZIP_MEMBER_MB"),
    Case("million-cells.xlsx", "200,000 cells (MAX_ELEMENTS)"),
    Case("million-cells.csv", "200,000 cells (MAX_ELEMENTS)"),
    Case("199k-cells.xlsx", "ok: "),
    Case("199k-cells.csv", "ok: "),
    Case("50k-cues.vtt", "ok: "),
    Case("100k-cues.vtt", "ok: "),
    Case("element-flood.pptx", "MAX_COMPRESSION_RATIO"),
    Case("zip-bomb.pptx", "MAX_ZIP_MEMBER_MB"),
    Case("zip-bomb.epub", "MAX_ZIP_MEMBER_MB"),
    Case("deck-is-a-pptx.epub", "looks like a PowerPoint presentation"),
]


def _build_format(case: Case, path: Path) -> None:
    from tests.support.hostile_files import (
        many_cues_vtt,
        parts_of,
        rezip,
        sheet_xml,
        write_cell_bomb_csv,
        write_zip_bomb,
    )
    from tests.unit.test_formats import make_epub, make_pptx, make_xlsx

    xlsx = parts_of(make_xlsx())
    match case.name:
        case "zip-bomb.xlsx":
            write_zip_bomb(path, xlsx, "xl/worksheets/sheet1.xml", 1024 * MB)
        case "million-cells.xlsx":
            path.write_bytes(rezip(xlsx, {"xl/worksheets/sheet1.xml": sheet_xml(100_000, 10)}))
        case "199k-cells.xlsx":
            path.write_bytes(rezip(xlsx, {"xl/worksheets/sheet1.xml": sheet_xml(19_900, 10)}))
        case "million-cells.csv":
            write_cell_bomb_csv(path, rows=100_000, cols=10)
        case "199k-cells.csv":
            write_cell_bomb_csv(path, rows=19_899, cols=10)
        case "50k-cues.vtt":
            path.write_bytes(many_cues_vtt(50_000))
        case "100k-cues.vtt":
            path.write_bytes(many_cues_vtt(100_000))
        case "element-flood.pptx":
            parts = parts_of(make_pptx())
            flood = parts["ppt/slides/slide1.xml"].replace(b"</p:spTree>", b"<a:p/>" * 2_100_000 + b"</p:spTree>")
            path.write_bytes(rezip(parts, {"ppt/slides/slide1.xml": flood}))
        case "zip-bomb.pptx":
            write_zip_bomb(path, parts_of(make_pptx()), "ppt/slides/slide1.xml", 1024 * MB)
        case "zip-bomb.epub":
            parts = parts_of(make_epub())
            write_zip_bomb(path, parts, next(n for n in parts if n.endswith("intro.xhtml")), 1024 * MB)
        case "deck-is-a-pptx.epub":
            path.write_bytes(make_pptx())
        case _:
            raise AssertionError(case.name)


def test_new_formats_parse_in_bounded_memory_and_time(tmp_path: Path) -> None:
    """Every hostile twin of the new formats, and the largest files they accept, one process each."""
    rows: list[tuple[str, str, float, float]] = []
    for case in FORMAT_CASES:
        path = tmp_path / case.name
        _build_format(case, path)
        proc = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, timeout=120, check=False
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append((f"{case.name} ({path.stat().st_size / MB:.2f} MB)", out["result"], out["peak_mb"], out["cpu_s"]))
    print(f"\n{'file':34} {'peak MB':>8} {'parse CPU s':>12}  result")
    for name, result, peak, seconds in rows:
        print(f"{name:34} {peak:8.1f} {seconds:12.2f}  {result[:110]}")
    for case, (name, result, peak, seconds) in zip(FORMAT_CASES, rows, strict=True):
        assert case.expect in result, (name, result)
        assert peak < PEAK_MB, (name, peak)
        assert seconds < SECONDS, (name, seconds)
