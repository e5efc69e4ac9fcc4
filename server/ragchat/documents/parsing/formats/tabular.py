"""Tables: CSV (stdlib csv, streamed, sniffed dialect) and Excel .xlsx (openpyxl, read-only, values only).

Rows are grouped into sections of at most about `SECTION_CHARS` characters, and the header row (a sheet's first
non-empty row) starts every section, so a group of rows still says what its columns are. Cells are joined by
" | ", rows by a blank line (a paragraph each, so chunks keep them apart). A section is located by
`{"sheet", "row_start", "row_end"}` in the spreadsheet's own 1-based row numbers (a CSV's sheet is its file
name's stem). At most MAX_ELEMENTS cells (and rows) per file: an .xlsx is counted before openpyxl reads it.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import warnings
from collections.abc import Iterable, Sequence
from io import BytesIO
from typing import Any

from ragchat.documents.parsing.document import ParsedDocument, Section, make_document
from ragchat.documents.parsing.formats.common import Grouper, open_container, scan_xml
from ragchat.documents.parsing.limits import Deadline, ParseError, ParseLimits, mislabelled, too_many_elements
from ragchat.documents.parsing.text import decode_text, one_line, short_error

HEADER_CHARS = 1000  # a header row repeated in every section is cut to this
_SNIFF_CHARS = 64 * 1024
_NOT_CSV = (
    (re.compile(r"\s*<(?:!doctype|html|\?xml|svg|rss|feed)\b", re.I), "an HTML or XML file"),
    (re.compile(r"WEBVTT(?:[ \t]|$)", re.M), "a WebVTT subtitle file (.vtt)"),
    (re.compile(r"\{\\rtf"), "an RTF document"),
    (re.compile(r"%!PS"), "a PostScript file"),
)


def cell_text(value: Any) -> str:
    """A cell value as text: whole floats without ".0", dates in ISO form, booleans as TRUE/FALSE."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return one_line(str(value))


def rows_to_sections(
    rows: Iterable[tuple[int, Sequence[Any]]],
    sheet: str,
    limits: ParseLimits,
    deadline: Deadline,
    *,
    heading: str | None = None,
    seen: list[int] | None = None,
) -> list[Section]:
    """(row number, values) -> sections led by the header row. `seen` ([cells, rows]) carries the counts across
    the sheets of one file."""
    counts = seen if seen is not None else [0, 0]
    header: str | None = None
    header_row = 0
    grouper: Grouper | None = None
    for number, values in rows:
        counts[1] += 1
        if counts[1] > limits.max_elements:
            raise too_many_elements(limits, "rows")
        counts[0] += len(values)
        if counts[0] > limits.max_elements:
            raise too_many_elements(limits, "cells")
        if counts[1] % 1024 == 0:
            deadline.check(f"row {number:,} of {sheet!r}")
        texts = [cell_text(v) for v in values]
        while texts and not texts[-1]:
            texts.pop()
        if not texts:
            continue
        line = " | ".join(texts)
        if grouper is None:
            header, header_row = line, number
            head = line if len(line) <= HEADER_CHARS else line[: HEADER_CHARS - 1] + "…"
            grouper = Grouper(lambda a, b: {"sheet": sheet, "row_start": a, "row_end": b}, heading=heading, head=head)
            continue
        grouper.add(line, number)
    if grouper is None or header is None:
        return []
    sections = grouper.finish()
    if not sections:  # a header alone is still what the sheet says
        location = {"sheet": sheet, "row_start": header_row, "row_end": header_row}
        sections = [Section(text=header, heading=heading, location=location)]
    return sections


def parse_csv(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    text, encoding = decode_text(data, ".csv")
    text = text.lstrip("\ufeff")
    for pattern, kind in _NOT_CSV:
        if pattern.match(text):
            raise ParseError(mislabelled(kind, ".csv"))
    try:
        dialect: Any = csv.Sniffer().sniff(text[:_SNIFF_CHARS], delimiters=",;\t|")
    except csv.Error:  # one column, or too irregular to tell: plain commas
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    try:
        sections = rows_to_sections(enumerate(reader, start=1), stem, limits, deadline)
    except csv.Error as exc:
        raise ParseError(f"not a valid CSV file: line {reader.line_num:,}: {short_error(exc)}") from exc
    if not sections:
        raise ParseError("the CSV file has no cell with text")
    return make_document(stem, sections, {"encoding": encoding, "delimiter": dialect.delimiter})


def parse_xlsx(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    label = "the .xlsx file"
    zf = open_container(data, limits, ".xlsx", "xl/workbook.xml", label)
    scan_xml(zf, limits, deadline, label, count_tags={"c": "cells", "si": "shared strings"})  # before openpyxl
    from openpyxl import load_workbook

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # openpyxl warns about extensions it does not read
            workbook = load_workbook(BytesIO(data), read_only=True, data_only=True)
    except ParseError:
        raise
    except Exception as exc:  # openpyxl raises many types on malformed parts
        raise ParseError(f"not a valid .xlsx file: {short_error(exc)}") from exc
    sections: list[Section] = []
    seen = [0, 0]
    names: list[str] = []
    try:
        for sheet in workbook.worksheets:
            if not hasattr(sheet, "reset_dimensions"):  # a chart sheet
                continue
            title = one_line(sheet.title) or f"Sheet{len(names) + 1}"
            names.append(title)
            sheet.reset_dimensions()  # the declared size may lie; rows are only as long as their cells
            rows = enumerate(sheet.iter_rows(values_only=True), start=1)
            sections += rows_to_sections(rows, title, limits, deadline, heading=title, seen=seen)
    except ParseError:
        raise
    except Exception as exc:
        raise ParseError(f"not a valid .xlsx file: {short_error(exc)}") from exc
    finally:
        workbook.close()
    if not sections:
        raise ParseError("the workbook has no cell with a value")
    return make_document(stem, sections, {"sheets": names})
