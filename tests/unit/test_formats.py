"""The formats that keep where a passage came from (issue 17 item 5): .vtt/.srt, .csv/.xlsx, .pptx, .epub, and
docx table cells. Every fixture is a real file made by its library (or written as text), and every format has
hostile twins: bombs, element floods, a file whose content is not its extension. Each must fail with a reason
naming its limit, in bounded time."""

from __future__ import annotations

import datetime as dt
import time
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path
from typing import Any

import docx
import openpyxl
import pytest
from pptx import Presentation
from pptx.util import Inches

from ragchat.core.errors import BadRequest
from ragchat.core.search import ChunkHit, Location
from ragchat.documents.chunking.sentences import chunk_sections
from ragchat.documents.parsing.formats.common import SECTION_CHARS
from ragchat.documents.parsing.parsers import (
    SUPPORTED_EXTENSIONS,
    ParseError,
    ParseLimits,
    Section,
    content_type_for,
    parse,
)
from ragchat.retrieval.filters import location_sql, parse_location_filters
from tests.support.hostile_files import (
    entity_bomb_xml,
    many_cues_vtt,
    parts_of,
    rezip,
    sheet_xml,
    write_cell_bomb_csv,
    write_zip_bomb,
)
from tests.unit.test_parsers import make_docx, make_pdf

NO_RATIO = ParseLimits(max_compression_ratio=1e9)  # to reach the checks behind the compression-ratio one


def words(texts: Sequence[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def loc(section: Section) -> dict[str, Any]:
    assert section.location is not None
    return section.location


@contextmanager
def within(seconds: float) -> Iterator[None]:
    started = time.monotonic()
    yield
    assert time.monotonic() - started < seconds


# --------------------------------------------------------------------------- fixtures (real files)

TALK_VTT = """WEBVTT - budget meeting

NOTE recorded in Berlin

intro
00:12:31.000 --> 00:12:35.500 align:start
<v.loud Alice>We should budget <b>EUR 150</b> per diem &amp; travel.

00:12:35.500 --> 00:12:58.250
<v Bob>Agreed, <i>per diem</i> Berlin is EUR 150.
<c.yellow>Next item.</c>
"""

FILM_SRT = """1
00:00:01,000 --> 00:00:04,000
<i>Hello</i> there {\\an8}

2
00:00:05,000 --> 00:00:07,500
<font color="red">ALICE:</font> General Kenobi.
"""


def make_xlsx() -> bytes:
    workbook = openpyxl.Workbook()
    q1 = workbook.active
    assert q1 is not None
    q1.title = "Q1"
    q1.append(["Region", "Revenue", "Closed"])
    for i in range(1, 81):
        q1.append([f"Region {i}", i * 1000.0, dt.date(2024, 1, 1) + dt.timedelta(days=i)])
    q2 = workbook.create_sheet("Q2")
    q2.append(["City", "Per diem"])
    q2.append(["Berlin", "EUR 150"])
    q2.append([None, None])
    q2.append(["Paris", 0.5])
    out = BytesIO()
    workbook.save(out)
    return out.getvalue()


def make_pptx() -> bytes:
    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    assert first.shapes.title is not None
    first.shapes.title.text = "Travel budget"
    first.placeholders[1].text_frame.text = "Per diem Berlin\nTrains, not planes"  # pyright: ignore[reportAttributeAccessIssue]
    notes = first.notes_slide.notes_text_frame
    assert notes is not None
    notes.text = "Mention the EUR 150 cap"
    second = deck.slides.add_slide(deck.slide_layouts[5])
    assert second.shapes.title is not None
    second.shapes.title.text = "Rates"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(5), Inches(1)).table
    for (r, c), text in {(0, 0): "City", (0, 1): "Rate", (1, 0): "Per diem Berlin", (1, 1): "EUR 150"}.items():
        table.cell(r, c).text = text
    group = second.shapes.add_group_shape()
    box = group.shapes.add_textbox(Inches(1), Inches(4), Inches(3), Inches(1))
    box.text_frame.text = "Grouped remark"
    deck.slides.add_slide(deck.slide_layouts[6])  # blank: no section
    out = BytesIO()
    deck.save(out)
    return out.getvalue()


def make_epub(chapters: list[tuple[str, str | None, str]] | None = None) -> bytes:
    """(file name, TOC title or None, body HTML) per chapter, in spine order: an EPUB 3 book (nav document in
    the spine, an EPUB 2 NCX beside it) laid out as e-book tools write them (package in EPUB/)."""
    chapters = chapters or [
        ("intro.xhtml", "Chapter 1: Departure", "<h1>Departure</h1><p>The train left Berlin at dawn.</p>"),
        ("middle.xhtml", "Arrival", "<h2>Arrival</h2><p>Paris smelled of bread.</p><p>Per diem: EUR 150.</p>"),
        ("notoc.xhtml", None, "<h1>Epilogue</h1><p>Nobody listed this one.</p>"),
    ]
    xhtml = '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml" ' + (
        'xmlns:epub="http://www.idpf.org/2007/ops"><head><title></title></head><body>{}</body></html>'
    )
    items = "".join(
        f'<item id="c{i}" href="{name}" media-type="application/xhtml+xml"/>' for i, (name, _, _) in enumerate(chapters)
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    listed = [(name, title) for name, title, _ in chapters if title]
    nav_links = "".join(f'<li><a href="{name}">{title}</a></li>' for name, title in listed)
    points = "".join(
        f'<navPoint id="p{i}"><navLabel><text>{title}</text></navLabel><content src="{name}"/></navPoint>'
        for i, (name, title) in enumerate(listed)
    )
    files = {
        "mimetype": b"application/epub+zip",
        "META-INF/container.xml": b'<?xml version="1.0"?><container version="1.0" '
        b'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        b'<rootfile full-path="EPUB/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
        "EPUB/content.opf": (
            '<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
            'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            '<dc:identifier id="id">book-1</dc:identifier><dc:title>A Journey</dc:title>'
            "<dc:creator>Ann Author</dc:creator></metadata><manifest>"
            f'{items}<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
            '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/></manifest>'
            f'<spine toc="ncx"><itemref idref="nav"/>{spine}</spine></package>'
        ).encode(),
        "EPUB/nav.xhtml": xhtml.format(f'<nav epub:type="toc"><ol>{nav_links}</ol></nav>').encode(),
        "EPUB/toc.ncx": (
            '<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">'
            f"<navMap>{points}</navMap></ncx>"
        ).encode(),
    }
    for name, _, body in chapters:
        files[f"EPUB/{name}"] = xhtml.format(body).encode()
    out = BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return out.getvalue()


def test_epub_2_book_titles_from_its_ncx() -> None:
    parts = parts_of(make_epub())
    opf = parts["EPUB/content.opf"].replace(b' properties="nav"', b"")  # no EPUB 3 nav: the NCX names chapters
    doc = parse(rezip(parts, {"EPUB/content.opf": opf}), "journey.epub")
    assert [s.heading for s in doc.sections][-3:] == ["Chapter 1: Departure", "Arrival", "Epilogue"]


@pytest.mark.parametrize(
    ("part", "content", "message"),
    [
        ("META-INF/container.xml", b"<container/>", "names no package document"),
        ("EPUB/content.opf", b"<package><unclosed></package>", "not well-formed XML"),
        ("EPUB/content.opf", None, "EPUB/content.opf is missing"),
        ("EPUB/intro.xhtml", None, "the chapter EPUB/intro.xhtml is missing"),
    ],
)
def test_epub_broken_package_refused(part: str, content: bytes | None, message: str) -> None:
    parts = parts_of(make_epub())
    if content is None:
        del parts[part]
        data = rezip(parts, {})
    else:
        data = rezip(parts, {part: content})
    with within(2), pytest.raises(ParseError, match=message):
        parse(data, "broken.epub")


# --------------------------------------------------------------------------- surface


def test_new_extensions_are_supported() -> None:
    assert {".vtt", ".srt", ".csv", ".xlsx", ".pptx", ".epub"} <= SUPPORTED_EXTENSIONS
    assert content_type_for("a.xlsx").endswith("spreadsheetml.sheet")
    assert content_type_for("a.VTT") == "text/vtt"


def test_every_chunk_of_a_section_inherits_its_location() -> None:
    long = " ".join(f"word{i}." for i in range(400))
    sections = [Section(text=long, location={"slide": 4}), Section(text="plain", location=None)]
    chunks = chunk_sections(sections, words, max_tokens=50, overlap=5)
    assert len(chunks) > 5
    assert all(c.location == {"slide": 4} for c in chunks[:-1])
    assert chunks[-1].location is None


@pytest.mark.parametrize(
    ("location", "label"),
    [
        (Location(start_s=751.2, end_s=778.9), "00:12:31–00:12:58"),
        (Location(start_s=3600, end_s=3600.4), "01:00:00"),
        (Location(slide=3), "Slide 3"),
        (Location(sheet="Q1", row_start=2, row_end=41), "Sheet Q1, rows 2–41"),
        (Location(sheet="Q1", row_start=7, row_end=7), "Sheet Q1, row 7"),
        (Location(chapter="Chapter 4: Title"), "Chapter 4: Title"),
        (Location(chapter="Arrival"), "Chapter: Arrival"),
        (Location(), ""),
    ],
)
def test_location_labels(location: Location, label: str) -> None:
    assert location.label == label
    assert location.model_dump()["label"] == label  # the API shows it


def test_passage_url_is_only_a_web_address() -> None:
    base = {"id": 1, "document_id": "0" * 32, "filename": "a", "title": "a", "chunk_index": 0, "content": "x"}
    assert ChunkHit(**base, score=1, url="https://example.org/p").public().url == "https://example.org/p"
    assert ChunkHit(**base, score=1, url="javascript:alert(1)").public().url is None
    assert ChunkHit(**base, score=1, url=None, location=Location(slide=2)).public().location == Location(slide=2)


def test_location_filters_are_checked() -> None:
    assert parse_location_filters(["sheet=Q1", "row=12"]) == {"sheet": "Q1", "row": "12"}
    assert parse_location_filters(None) is None
    where, params = location_sql({"slide": "03", "t": "751.5"}, "c.location")
    assert params == {"loc_slide": "3", "loc_t": 751.5}
    text = where.as_string()
    assert """"c"."location"->>'slide' = %(loc_slide)s""" in text and "'start_s'" in text
    for bad, message in (
        (["page=3"], "unknown location filter 'page'"),
        (["slide=three"], "must be a number"),
        (["t=nan"], "must be a number from 0"),
        (["sheet"], "must be key=value"),
    ):
        with pytest.raises(BadRequest, match=message):
            parse_location_filters(bad)


# --------------------------------------------------------------------------- transcripts


def test_vtt_cues_voices_and_time_span() -> None:
    doc = parse(TALK_VTT.encode(), "talk.vtt")
    assert doc.title == "talk"
    assert doc.metadata["cues"] == 2
    [section] = doc.sections
    assert section.text == (
        "Alice: We should budget EUR 150 per diem & travel.\n\nBob: Agreed, per diem Berlin is EUR 150. Next item."
    )
    assert section.location == {"start_s": 751.0, "end_s": 778.25}


def test_srt_strips_markup_keeps_speaker_text() -> None:
    [section] = parse(FILM_SRT.encode(), "film.srt").sections
    assert section.text == "Hello there\nALICE: General Kenobi."
    assert section.location == {"start_s": 1.0, "end_s": 7.5}


@pytest.mark.parametrize("ext", [".vtt", ".srt"])
def test_cues_are_grouped_into_bounded_sections_in_order(ext: str) -> None:
    data = many_cues_vtt(1500)
    if ext == ".srt":  # the same cues as SubRip
        blocks = data.decode().split("\n\n")[1:]
        data = "\n\n".join(f"{i}\n{b.replace('.000', ',000')}" for i, b in enumerate(blocks, 1) if b).encode()
    doc = parse(data, "long" + ext)
    assert len(doc.sections) > 50
    assert all(len(s.text) <= SECTION_CHARS for s in doc.sections)
    spans = [loc(s)["start_s"] for s in doc.sections]
    assert spans == sorted(spans) and spans[0] == 0.0
    assert loc(doc.sections[-1])["end_s"] == 3000.0
    text = " ".join(s.text for s in doc.sections)
    positions = [text.index(f"line {i} of") for i in (0, 511, 512, 1024, 1499)]  # across webvtt batches
    assert positions == sorted(positions)


def test_50k_cue_vtt_stays_bounded() -> None:
    data = many_cues_vtt(50_000)
    with within(20):
        doc = parse(data, "huge.vtt")
    assert doc.metadata["cues"] == 50_000
    assert max(len(s.text) for s in doc.sections) <= SECTION_CHARS


def test_too_many_cues_are_refused_before_parsing() -> None:
    with within(2), pytest.raises(ParseError, match=r"more than 1,000 cues \(MAX_ELEMENTS\)"):
        parse(many_cues_vtt(1001), "a.vtt", ParseLimits(max_elements=1000))


@pytest.mark.parametrize(
    ("data", "name", "message"),
    [
        (FILM_SRT.encode(), "film.vtt", "looks like a SubRip subtitle file"),
        (TALK_VTT.encode(), "talk.srt", "looks like a WebVTT subtitle file"),
        (b"Just some notes about the meeting.\n", "notes.vtt", "first line must be WEBVTT"),
        (b"Just some notes about the meeting.\n", "notes.srt", "not a SubRip"),
        (make_pdf([["A page."]]), "talk.vtt", "looks like a PDF"),
        (b"WEBVTT\n\nNOTE nothing else\n", "empty.vtt", "no cue with text"),
        (
            b"1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\n00:00:0x,000 --> 00:00:04,000\nbad\n\n"
            b"3\n00:00:05,000 --> 00:00:06,000\nfine\n",
            "bad.srt",
            "not a valid SubRip .*unmatched content",
        ),
    ],
)
def test_transcripts_refuse_what_they_are_not(data: bytes, name: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse(data, name)


# --------------------------------------------------------------------------- tables


def test_csv_header_repeated_in_every_section_with_row_numbers() -> None:
    rows = ["City;Per diem;Note"] + [f'City {i};{100 + i};"line one\nline two"' for i in range(1, 41)]
    doc = parse("\n".join(rows).encode(), "rates.csv")
    assert doc.metadata["delimiter"] == ";"
    assert len(doc.sections) > 2
    expected_start = 2
    for section in doc.sections:
        assert section.text.startswith("City | Per diem | Note\n\n")
        assert len(section.text) <= SECTION_CHARS
        where = loc(section)
        assert where["sheet"] == "rates" and where["row_start"] == expected_start
        first_row = section.text.split("\n\n")[1]
        assert first_row == f"City {expected_start - 1} | {100 + expected_start - 1} | line one line two"
        expected_start = where["row_end"] + 1
    assert expected_start == 42


def test_csv_legacy_encoding_and_header_only() -> None:
    doc = parse("Stadt,Tagegeld\nMünchen,€ 150\n".encode("cp1252"), "de.csv")
    assert doc.sections[0].text == "Stadt | Tagegeld\n\nMünchen | € 150"
    [only] = parse(b"a,b,c\n", "h.csv").sections
    assert only.text == "a | b | c" and only.location == {"sheet": "h", "row_start": 1, "row_end": 1}


def test_million_cell_csv_fails_fast(tmp_path: Path) -> None:
    path = tmp_path / "cells.csv"
    write_cell_bomb_csv(path, rows=100_000, cols=10)
    with within(5), pytest.raises(ParseError, match=r"more than 200,000 cells \(MAX_ELEMENTS\)"):
        parse(path.read_bytes(), "cells.csv")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"<!DOCTYPE html><html><body><table><tr><td>1</td></tr></table></body></html>", "an HTML or XML file"),
        (make_pdf([["A page."]]), "looks like a PDF"),
        (b"a,b\n" + b'"' + b"x" * 200_000 + b'"\n', "not a valid CSV file: line"),
        (b"\n\n , \n", "no cell with text"),
    ],
)
def test_csv_refuses_what_it_is_not(data: bytes, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse(data, "data.csv")


def test_xlsx_sheets_rows_and_values() -> None:
    doc = parse(make_xlsx(), "sales.xlsx")
    assert doc.metadata == {"sheets": ["Q1", "Q2"]}
    q1 = [s for s in doc.sections if s.heading == "Q1"]
    assert len(q1) > 3 and all(s.text.startswith("Region | Revenue | Closed\n\n") for s in q1)
    assert loc(q1[0]) == {"sheet": "Q1", "row_start": 2, "row_end": loc(q1[0])["row_end"]}
    assert "Region 1 | 1000 | 2024-01-02" in q1[0].text
    assert loc(q1[-1])["row_end"] == 81
    [q2] = [s for s in doc.sections if s.heading == "Q2"]
    assert q2.text == "City | Per diem\n\nBerlin | EUR 150\n\nParis | 0.5"
    assert q2.location == {"sheet": "Q2", "row_start": 2, "row_end": 4}


def test_xlsx_declared_size_is_not_trusted() -> None:
    parts = parts_of(make_xlsx())
    sheet = parts["xl/worksheets/sheet2.xml"].replace(b'<dimension ref="A1:B4"/>', b'<dimension ref="A1:XFD1048576"/>')
    assert b"XFD1048576" in sheet
    with within(5):
        doc = parse(rezip(parts, {"xl/worksheets/sheet2.xml": sheet}), "lying.xlsx")
    assert [s.text for s in doc.sections if s.heading == "Q2"] == ["City | Per diem\n\nBerlin | EUR 150\n\nParis | 0.5"]


def test_xlsx_million_cells_refused_before_openpyxl() -> None:
    bomb = rezip(parts_of(make_xlsx()), {"xl/worksheets/sheet1.xml": sheet_xml(100_000, 10)})
    with within(10), pytest.raises(ParseError, match=r"more than 200,000 cells \(MAX_ELEMENTS\)"):
        parse(bomb, "cells.xlsx")


def test_xlsx_far_row_fails_fast() -> None:
    parts = parts_of(make_xlsx())
    far = (
        parts["xl/worksheets/sheet2.xml"]
        .replace(b'<row r="4"', b'<row r="1048576"')
        .replace(b'r="A4"', b'r="A1048576"')
    )
    with within(5), pytest.raises(ParseError, match=r"more than 200,000 rows \(MAX_ELEMENTS\)"):
        parse(rezip(parts, {"xl/worksheets/sheet2.xml": far}), "far.xlsx")


def test_xlsx_entity_bomb_refused() -> None:
    bomb = rezip(parts_of(make_xlsx()), {"xl/worksheets/sheet1.xml": entity_bomb_xml()})
    with within(2), pytest.raises(ParseError, match="declares a DTD"):
        parse(bomb, "lol.xlsx")


# --------------------------------------------------------------------------- slides


def test_pptx_one_section_per_slide() -> None:
    doc = parse(make_pptx(), "deck.pptx")
    assert doc.title == "Travel budget"
    assert doc.metadata["slides"] == 3
    first, second = doc.sections
    assert first.heading == "Travel budget" and first.location == {"slide": 1}
    assert first.text == "Travel budget\n\nPer diem Berlin\n\nTrains, not planes\n\nNotes: Mention the EUR 150 cap"
    assert second.location == {"slide": 2}
    assert second.text == "Rates\n\nCity | Rate\n\nPer diem Berlin | EUR 150\n\nGrouped remark"


def test_pptx_element_flood_refused_past_the_ratio_check() -> None:
    parts = parts_of(make_pptx())
    slide = parts["ppt/slides/slide1.xml"]
    flood = slide.replace(b"</p:spTree>", b"<a:p/>" * 2_100_000 + b"</p:spTree>")
    bomb = rezip(parts, {"ppt/slides/slide1.xml": flood}, compresslevel=1)
    with pytest.raises(ParseError, match="MAX_COMPRESSION_RATIO"):
        parse(bomb, "flood.pptx")
    with within(15), pytest.raises(ParseError, match=r"more than 2,000,000 XML elements"):
        parse(bomb, "flood.pptx", NO_RATIO)


def test_pptx_zip_bomb_refused_before_inflating(tmp_path: Path) -> None:
    path = tmp_path / "bomb.pptx"
    write_zip_bomb(path, parts_of(make_pptx()), "ppt/slides/slide1.xml", 150 * 1024 * 1024)
    with within(2), pytest.raises(ParseError, match="MAX_ZIP_MEMBER_MB"):
        parse(path.read_bytes(), "bomb.pptx")


# --------------------------------------------------------------------------- e-books


def test_epub_chapters_in_spine_order_with_titles() -> None:
    doc = parse(make_epub(), "journey.epub")
    assert doc.title == "A Journey" and doc.metadata["author"] == "Ann Author"
    assert [(s.heading, s.location, s.text) for s in doc.sections] == [
        ("Chapter 1: Departure", {"chapter": "Chapter 1: Departure"}, "The train left Berlin at dawn."),
        ("Arrival", {"chapter": "Arrival"}, "Paris smelled of bread.\n\nPer diem: EUR 150."),
        ("Epilogue", {"chapter": "Epilogue"}, "Nobody listed this one."),
    ]


def test_epub_element_flood_refused() -> None:
    parts = parts_of(make_epub())
    name = next(n for n in parts if n.endswith("intro.xhtml"))
    flood = parts[name].replace(b"</body>", b"<i/>" * 2_100_000 + b"</body>")
    with within(15), pytest.raises(ParseError, match=r"more than 2,000,000 XML elements"):
        parse(rezip(parts, {name: flood}, compresslevel=1), "flood.epub", NO_RATIO)


def test_epub_entity_bomb_refused() -> None:
    parts = parts_of(make_epub())
    name = next(n for n in parts if n.endswith("middle.xhtml"))
    with within(2), pytest.raises(ParseError, match="declares XML entities"):
        parse(rezip(parts, {name: entity_bomb_xml("html")}), "lol.epub")


def test_epub_zip_bomb_refused(tmp_path: Path) -> None:
    parts = parts_of(make_epub())
    path = tmp_path / "bomb.epub"
    write_zip_bomb(path, parts, next(n for n in parts if n.endswith("intro.xhtml")), 150 * 1024 * 1024)
    with within(2), pytest.raises(ParseError, match="MAX_ZIP_MEMBER_MB"):
        parse(path.read_bytes(), "bomb.epub")


# --------------------------------------------------------------------------- containers that are something else


@pytest.mark.parametrize(
    ("maker", "name", "message"),
    [
        (make_docx, "deck.pptx", "looks like a Word document"),
        (make_xlsx, "book.epub", "looks like an Excel workbook"),
        (make_pptx, "sheet.xlsx", "looks like a PowerPoint presentation"),
        (make_epub, "deck.pptx", "looks like an EPUB e-book"),
        (lambda: make_pdf([["A page."]]), "sheet.xlsx", "looks like a PDF"),
        (lambda: b"just text", "book.epub", "not a valid .epub file: it is not a ZIP container"),
        (lambda: rezip({"a.txt": b"x"}, {}), "deck.pptx", "no ppt/presentation.xml inside"),
    ],
)
def test_zip_formats_refuse_what_they_are_not(maker: object, name: str, message: str) -> None:
    data = maker()  # type: ignore[operator]
    with pytest.raises(ParseError, match=message):
        parse(data, name)


# --------------------------------------------------------------------------- docx tables


def test_docx_table_cells_keep_their_boundaries() -> None:
    document = docx.Document()
    document.add_paragraph("Travel rates.")
    table = document.add_table(rows=3, cols=2)
    rows = [("City", "Rate"), ("Per diem Berlin", "EUR 150"), ("Per diem Paris", "EUR 170")]
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(2, 0).add_paragraph("(weekdays)")
    out = BytesIO()
    document.save(out)
    [section] = parse(out.getvalue(), "rates.docx").sections
    assert "City | Rate\nPer diem Berlin | EUR 150\nPer diem Paris (weekdays) | EUR 170" in section.text
    [chunk] = chunk_sections([section], words)
    assert "Per diem Berlin | EUR 150" in chunk.content
    assert make_docx()  # the existing fixture still builds
