"""Parsing under limits (issue 17): zip and element bombs, page and time caps, sniffing, JSONL bounds."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ragchat.documents.parsing.limits import ParseLimits
from ragchat.documents.parsing.parsers import ParseError, Section, iter_beir_jsonl, parse
from ragchat.settings import IngestionSettings, Settings
from tests.support.hostile_files import (
    MB,
    docx_with_body,
    many_pages_pdf,
    paragraph_bomb_docx,
    write_zip_bomb_docx,
    zip_bytes,
)
from tests.unit.test_parsers import make_docx, make_pdf


def test_limits_defaults_are_the_settings_defaults() -> None:
    fields = IngestionSettings.model_fields
    defaults = ParseLimits()
    per_job = {"ocr_user_megapixels_left"}  # not a setting: what the owner has left today, filled in per job
    for name in ParseLimits.__dataclass_fields__:
        if name in per_job:
            assert getattr(defaults, name) is None and name not in fields, name
            continue
        assert getattr(defaults, name) == fields[name].default, name
    custom = Settings.model_validate({"max_pdf_pages": 7, "max_elements": 9})
    assert ParseLimits.from_settings(custom.ingestion) == ParseLimits(max_pdf_pages=7, max_elements=9)


# --------------------------------------------------------------------------- zip containers


def test_zip_bomb_refused_before_inflating(tmp_path: Path) -> None:
    path = tmp_path / "bomb.docx"
    write_zip_bomb_docx(path, 120 * MB)
    data = path.read_bytes()
    assert len(data) < MB
    started = time.monotonic()
    with pytest.raises(ParseError, match=r"inflates to 120 MB, over the 100 MB limit per part \(MAX_ZIP_MEMBER_MB\)"):
        parse(data, "bomb.docx")
    assert time.monotonic() - started < 1


def test_zip_total_inflated_cap(tmp_path: Path) -> None:
    path = tmp_path / "parts.docx"
    write_zip_bomb_docx(path, 2 * MB, members=3)
    limits = ParseLimits(max_inflated_mb=5, max_compression_ratio=10_000)
    with pytest.raises(ParseError, match=r"inflates to \d+ MB, over the 5 MB limit \(MAX_INFLATED_MB\)"):
        parse(path.read_bytes(), "parts.docx", limits)


def test_zip_compression_ratio_cap(tmp_path: Path) -> None:
    path = tmp_path / "ratio.docx"
    write_zip_bomb_docx(path, 2 * MB)
    with pytest.raises(ParseError, match=r"compressed [\d,]+:1, over the 200:1 limit \(MAX_COMPRESSION_RATIO\)"):
        parse(path.read_bytes(), "ratio.docx")


def test_zip_member_count_cap() -> None:
    data = docx_with_body("<w:p><w:r><w:t>hi</w:t></w:r></w:p>")
    with pytest.raises(ParseError, match=r"more than 3 parts \(MAX_ZIP_MEMBERS\)"):
        parse(data, "a.docx", ParseLimits(max_zip_members=3))
    assert parse(data, "a.docx").sections == [Section(text="hi")]


# --------------------------------------------------------------------------- element bombs


def test_docx_paragraph_bomb_refused() -> None:
    data = paragraph_bomb_docx(900_000)
    assert len(data) < 100_000
    with pytest.raises(ParseError, match="MAX_COMPRESSION_RATIO"):
        parse(data, "paras.docx")
    limits = ParseLimits(max_compression_ratio=1e9, max_elements=50_000)
    with pytest.raises(ParseError, match=r"more than 50,000 paragraphs and table cells \(MAX_ELEMENTS\)"):
        parse(data, "paras.docx", limits)


def test_docx_under_the_element_cap_streams() -> None:
    body = "".join(f"<w:p><w:r><w:t>p{i}</w:t></w:r></w:p>" for i in range(3000))
    doc = parse(docx_with_body(body), "many.docx", ParseLimits(max_elements=3000))
    assert doc.sections[0].text.split("\n\n") == [f"p{i}" for i in range(3000)]
    with pytest.raises(ParseError, match="MAX_ELEMENTS"):
        parse(docx_with_body(body), "many.docx", ParseLimits(max_elements=2999))


def test_docx_runs_tabs_breaks_and_nested_table() -> None:
    body = (
        '<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr>'
        "<w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/><w:t>c</w:t></w:r></w:p>"
        "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Per diem Berlin</w:t></w:r></w:p></w:tc>"
        "<w:tc><w:p><w:r><w:t>EUR 150</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
    )
    doc = parse(docx_with_body(body), "t.docx")
    assert doc.sections == [Section(text="a\tb\nc\n\nPer diem Berlin | EUR 150")]


def test_docx_time_cap() -> None:
    body = "<w:p><w:r><w:t>x</w:t></w:r></w:p>" * 5000
    with pytest.raises(ParseError, match=r"longer than 1e-09 s \(PARSE_TIMEOUT_S\)"):
        parse(docx_with_body(body), "slow.docx", ParseLimits(parse_timeout_s=1e-9))


def test_docx_entities_are_not_expanded() -> None:
    body = "<w:p><w:r><w:t>safe</w:t></w:r></w:p><w:p><w:r><w:t>&amp;</w:t></w:r></w:p>"
    assert parse(docx_with_body(body), "e.docx").sections == [Section(text="safe\n\n&")]


def test_html_element_cap() -> None:
    html = b"<p>x</p>" * 1001
    with pytest.raises(ParseError, match=r"more than 1,000 HTML elements \(MAX_ELEMENTS\)"):
        parse(html, "big.html", ParseLimits(max_elements=1000))
    assert parse(html, "big.html", ParseLimits(max_elements=1001)).sections


def test_html_deep_nesting_capped() -> None:
    html = b"<div>" * 300_000 + b"deep" + b"</div>" * 300_000
    with pytest.raises(ParseError, match="MAX_ELEMENTS"):
        parse(html, "deep.html")


def test_markdown_block_cap() -> None:
    text = "\n\n".join(f"para {i}" for i in range(400)).encode()
    with pytest.raises(ParseError, match=r"Markdown blocks \(MAX_ELEMENTS\)"):
        parse(text, "big.md", ParseLimits(max_elements=1000))
    assert len(parse(text, "big.md", ParseLimits(max_elements=1200)).sections[0].text.split("\n\n")) == 400


def test_markdown_parsed_in_batches_keeps_fences_and_headings() -> None:
    filler = "\n\n".join(f"line {i}" for i in range(1500))  # 2999 lines: the fence below spans a batch cut
    code = "```\n" + "\n\n".join(f"code {i}" for i in range(600)) + "\n```"
    text = f"# Top\n\n{filler}\n\n{code}\n\n## Sub\n\n{filler}\n".encode()
    doc = parse(text, "long.md")
    assert doc.title == "Top"
    assert [s.heading for s in doc.sections] == ["Top", "Top > Sub"]
    assert "\n\n".join(f"code {i}" for i in range(600)) in doc.sections[0].text
    assert doc.sections[1].text == "\n\n".join(f"line {i}" for i in range(1500))


# --------------------------------------------------------------------------- PDF


def test_pdf_page_cap() -> None:
    data = many_pages_pdf(5)
    with pytest.raises(ParseError, match=r"5 pages, over the 4 page limit \(MAX_PDF_PAGES\)"):
        parse(data, "long.pdf", ParseLimits(max_pdf_pages=4))
    assert parse(data, "long.pdf", ParseLimits(max_pdf_pages=5)).metadata["page_count"] == 5


def test_pdf_time_cap() -> None:
    with pytest.raises(ParseError, match=r"PARSE_TIMEOUT_S\), stopped at page 1 of 3"):
        parse(many_pages_pdf(3), "slow.pdf", ParseLimits(parse_timeout_s=1e-9))


# --------------------------------------------------------------------------- content is not the extension


@pytest.mark.parametrize(
    ("data", "name", "looks_like"),
    [
        (make_pdf([["hello"]]), "notes.txt", "a PDF, not .txt"),
        (make_docx(), "notes.txt", r"a Word document \(.docx\), not .txt"),
        (make_docx(), "readme.md", r"a Word document \(.docx\), not .md"),
        (b"\x7fELF\x02\x01\x01" + bytes(200), "run.md", "a Linux executable, not .md"),
        (b"MZ\x90\x00\x03" + bytes(200), "setup.txt", "a Windows executable, not .txt"),
        (b"\x89PNG\r\n\x1a\n" + bytes(100), "page.html", "a PNG image, not .html"),
        (zip_bytes({"a.txt": b"x"}), "notes.txt", "a ZIP archive"),
        (make_pdf([["hello"]]), "report.docx", "a PDF, not .docx"),
        (zip_bytes({"xl/workbook.xml": b"<x/>"}), "sheet.docx", r"an Excel workbook \(.xlsx\), not .docx"),
        (make_docx(), "report.pdf", r"a Word document \(.docx\), not .pdf"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500), "old.docx", r"an old Office file \(.doc/.xls/.ppt\)"),
    ],
)
def test_mislabelled_file_named(data: bytes, name: str, looks_like: str) -> None:
    with pytest.raises(ParseError, match=f"this file looks like {looks_like}"):
        parse(data, name)


def test_zip_without_document_part_named() -> None:
    with pytest.raises(ParseError, match=r"not a valid DOCX file \(no word/document.xml inside\)"):
        parse(zip_bytes({"a.txt": b"x"}), "a.docx")


@pytest.mark.parametrize("text", [b"MZ is a name.\n", b"PK: primary key\n", b"GIF87a was a format"])
def test_text_starting_like_a_signature_still_parses(text: bytes) -> None:
    assert parse(text, "notes.txt").sections[0].text == text.decode().strip()


# --------------------------------------------------------------------------- JSONL


def _jsonl(n: int, text: str = "x") -> bytes:
    return "\n".join(json.dumps({"_id": str(i), "text": text}) for i in range(n)).encode()


def test_jsonl_record_count_cap() -> None:
    assert len(list(iter_beir_jsonl(_jsonl(10), ParseLimits(max_jsonl_records=10)))) == 10
    with pytest.raises(ParseError, match=r"line 11: more than 10 records \(MAX_JSONL_RECORDS\)"):
        list(iter_beir_jsonl(_jsonl(11), ParseLimits(max_jsonl_records=10)))


def test_jsonl_record_size_cap() -> None:
    with pytest.raises(ParseError, match=r"line 1: a record of 3 KB is over the 2 KB limit \(MAX_JSONL_RECORD_KB\)"):
        list(iter_beir_jsonl(_jsonl(1, "y" * 3000), ParseLimits(max_jsonl_record_kb=2)))


def test_jsonl_mislabelled_and_deep_nesting() -> None:
    with pytest.raises(ParseError, match=r"this file looks like a PDF, not \.jsonl"):
        list(iter_beir_jsonl(make_pdf([["x"]])))
    with pytest.raises(ParseError, match=r"line 1: (JSON nested too deeply|invalid JSON)"):
        list(iter_beir_jsonl(b"[" * 100_000 + b"]" * 100_000))


def test_markdown_long_lists_and_lines_are_batched() -> None:
    items = "".join(f"- item {i}\n" for i in range(5000)).encode()  # no blank line: cut mid-list
    doc = parse(items, "list.md")
    assert doc.sections[0].text.split("\n\n") == [f"item {i}" for i in range(5000)]
    words = " ".join(f"w{i}" for i in range(100_000))  # one 600 KB line
    assert " ".join(parse(words.encode(), "line.md").sections[0].text.split()) == words  # nothing dropped
    code = "```\n" + "\n".join(f"c{i}" for i in range(5000)) + "\n```\n"  # a fence longer than two batches
    assert parse(code.encode(), "code.md").sections[0].text.split() == [f"c{i}" for i in range(5000)]
