"""Unit tests for ragchat.documents.parsing.parsers (fixtures are generated with real libraries)."""

from __future__ import annotations

import json
from io import BytesIO

import docx
import pytest
from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from ragchat.documents.parsing.parsers import (
    CONTENT_TYPES,
    SUPPORTED_EXTENSIONS,
    BeirRecord,
    ParsedDocument,
    ParseError,
    Section,
    UnsupportedFormat,
    content_type_for,
    iter_beir_jsonl,
    parse,
)

# --------------------------------------------------------------------------- fixture builders


def make_pdf(pages: list[list[str]], *, title: str | None = None, author: str | None = None) -> bytes:
    """A PDF with one page per entry, each entry being lines of text (empty list = no text)."""
    buf = BytesIO()
    pdf = canvas.Canvas(buf, pagesize=A4)
    if title:
        pdf.setTitle(title)
    if author:
        pdf.setAuthor(author)
    for lines in pages:
        y = 800
        for line in lines:
            pdf.drawString(72, y, line)
            y -= 14
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def image_only_pdf() -> bytes:
    """A page with only a drawn (filled) rectangle: nothing to extract."""
    buf = BytesIO()
    pdf = canvas.Canvas(buf, pagesize=A4)
    pdf.rect(100, 100, 300, 200, fill=1)
    pdf.showPage()
    pdf.save()
    return buf.getvalue()


def encrypt_pdf(data: bytes, password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(BytesIO(data)))
    writer.encrypt(password)
    out = BytesIO()
    writer.write(out)
    return out.getvalue()


def make_docx(*, core_title: str | None = None, author: str | None = None) -> bytes:
    document = docx.Document()
    if core_title:
        document.core_properties.title = core_title
    if author:
        document.core_properties.author = author
    document.add_heading("User Guide", level=0)  # style "Title"
    document.add_paragraph("Welcome to the guide.")
    document.add_heading("Install", level=1)
    document.add_paragraph("Install steps overview.")
    document.add_heading("Linux", level=2)
    document.add_paragraph("Use apt-get install ragchat.")
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([("Distro", "Command"), ("Debian", "apt")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_heading("Windows", level=2)
    document.add_paragraph("Run the installer.")
    out = BytesIO()
    document.save(out)
    return out.getvalue()


# --------------------------------------------------------------------------- API surface


def test_supported_extensions_and_content_types() -> None:
    assert {".txt", ".md", ".markdown", ".html", ".htm", ".pdf", ".docx", ".jsonl"} | {
        ".vtt",
        ".srt",
        ".csv",
        ".xlsx",
        ".pptx",
        ".epub",
    } | {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"} == SUPPORTED_EXTENSIONS
    assert set(CONTENT_TYPES) == SUPPORTED_EXTENSIONS
    assert content_type_for("Report.PDF") == "application/pdf"
    assert content_type_for("notes.md") == "text/markdown"
    assert content_type_for("dir/page.HTM") == "text/html"
    assert content_type_for("a.docx").startswith("application/vnd.openxmlformats")


@pytest.mark.parametrize("name", ["image.gif", "archive.zip", "README", "old.doc"])
def test_unsupported_extension(name: str) -> None:
    with pytest.raises(UnsupportedFormat, match=r"supported types: .*\.pdf"):
        content_type_for(name)
    with pytest.raises(UnsupportedFormat):
        parse(b"whatever", name)


def test_unsupported_is_a_parse_error() -> None:
    assert issubclass(UnsupportedFormat, ParseError)


def test_jsonl_not_parsed_as_document() -> None:
    with pytest.raises(UnsupportedFormat, match="iter_beir_jsonl"):
        parse(b'{"_id": "1", "title": "", "text": "x"}\n', "corpus.jsonl")


@pytest.mark.parametrize("name", ["a.txt", "a.md", "a.html", "a.pdf", "a.docx"])
def test_empty_file(name: str) -> None:
    with pytest.raises(ParseError, match="file is empty"):
        parse(b"", name)


# --------------------------------------------------------------------------- plain text


def test_txt_utf8_paragraphs_and_newlines() -> None:
    data = "Title line\r\n\r\nFirst para   with  spaces \r\nsecond line\r\n\r\n\r\nNext ✓\x07 para\n".encode()
    doc = parse(data, "notes.txt")
    assert doc.title == "Title line"
    assert doc.sections == [Section(text="Title line\n\nFirst para with spaces\nsecond line\n\nNext ✓ para")]
    assert doc.metadata["encoding"] == "utf-8"


def test_txt_utf8_bom() -> None:
    doc = parse(b"\xef\xbb\xbfHello BOM world", "bom.txt")
    assert doc.sections[0].text == "Hello BOM world"
    assert not doc.title.startswith("\ufeff")


def test_txt_utf16_with_bom() -> None:
    doc = parse("Grüße aus UTF-16".encode("utf-16"), "u16.txt")
    assert doc.sections[0].text == "Grüße aus UTF-16"


@pytest.mark.parametrize(
    "text", ["café", "Le café est très bon.", "Hyvää päivää! Tämä on testi.", "naïve façade über Größe — “quoted”"]
)
def test_txt_latin1_and_cp1252(text: str) -> None:
    encoding = "cp1252" if "“" in text else "latin-1"
    doc = parse(text.encode(encoding), "legacy.txt")
    assert doc.sections[0].text == text


def test_txt_cyrillic_cp1251() -> None:
    text = "Привет, как дела? Это тестовый документ на русском языке."
    assert parse(text.encode("cp1251"), "ru.txt").sections[0].text == text


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00" + bytes(range(256)) * 4,
        bytes((i * 37 + 11) % 256 for i in range(4096)),
    ],
)
def test_txt_binary_garbage_rejected(data: bytes) -> None:
    with pytest.raises(ParseError, match="does not look like text"):
        parse(data, "binary.txt")


def test_txt_long_first_line_falls_back_to_stem() -> None:
    doc = parse(("word " * 60).encode(), "my-notes.txt")
    assert doc.title == "my-notes"


@pytest.mark.parametrize("name", ["blank.txt", "blank.md", "blank.html"])
def test_whitespace_only_document_has_no_sections(name: str) -> None:
    doc = parse(b"  \n\n\t  \r\n   ", name)
    assert isinstance(doc, ParsedDocument)
    assert doc.sections == []
    assert doc.title == "blank"


# --------------------------------------------------------------------------- markdown

MARKDOWN = """Intro before any heading.

# Install

General *install* notes with `inline code`.

## Linux

- apt-get install ragchat
- configure the **service**

```bash
sudo systemctl   enable ragchat
    indented line
```

### Debian

> Quoted tip.

## Windows

| Step | Action |
|------|--------|
| 1    | Download |

    indented code block

# FAQ

Question text <span>with html</span>.
"""


def test_markdown_heading_paths_and_blocks() -> None:
    doc = parse(MARKDOWN.encode(), "guide.MD")
    assert doc.title == "Install"
    by_heading = {s.heading: s.text for s in doc.sections}
    assert [s.heading for s in doc.sections] == [
        None,
        "Install",
        "Install > Linux",
        "Install > Linux > Debian",
        "Install > Windows",
        "FAQ",
    ]
    assert by_heading[None] == "Intro before any heading."
    assert by_heading["Install"] == "General install notes with inline code."
    linux = by_heading["Install > Linux"]
    assert "apt-get install ragchat\n\nconfigure the service" in linux
    assert "sudo systemctl   enable ragchat\n    indented line" in linux  # code kept verbatim
    assert by_heading["Install > Linux > Debian"] == "Quoted tip."
    windows = by_heading["Install > Windows"]
    assert "Step | Action\n1 | Download" in windows
    assert "indented code block" in windows
    assert by_heading["FAQ"] == "Question text with html."
    assert all(s.page is None for s in doc.sections)


def test_markdown_title_falls_back_to_stem() -> None:
    doc = parse(b"## Only H2\n\nBody text.", "readme.markdown")
    assert doc.title == "readme"
    assert doc.sections == [Section(text="Body text.", heading="Only H2")]


# --------------------------------------------------------------------------- HTML

HTML = """<!DOCTYPE html>
<html><head><title>  My   Page </title><meta name="author" content="Ada">
<style>body { color: red }</style><script>var secret = 1;</script></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<p>Lead paragraph.</p>
<h1>Install</h1>
<div>Div text <b>bold</b> inline<br>after break
  <p>Nested para</p>
  tail text
</div>
<script>alert("no")</script><noscript>Enable JS</noscript>
<h2>Linux</h2>
<ul><li>Step one</li><li>Step <em>two</em></li></ul>
<pre>code   line 1
    code line 2</pre>
<table><tr><th>Distro</th><th>Cmd</th></tr><tr><td>Debian</td><td>apt</td></tr></table>
<!-- a comment -->
<h2>Windows</h2>
<blockquote>Quoted text</blockquote>
<svg><title>icon</title><text>svg text</text></svg>
<footer>Copyright footer</footer>
</body></html>
"""


def test_html_structure_title_and_removed_tags() -> None:
    doc = parse(HTML.encode(), "page.html")
    assert doc.title == "My Page"
    assert doc.metadata["author"] == "Ada"
    assert [s.heading for s in doc.sections] == [None, "Install", "Install > Linux", "Install > Windows"]
    texts = {s.heading: s.text for s in doc.sections}
    assert texts[None] == "Lead paragraph."
    assert texts["Install"] == "Div text bold inline\nafter break\n\nNested para\n\ntail text"
    linux = texts["Install > Linux"]
    assert linux.startswith("Step one\n\nStep two\n\n")
    assert "code   line 1\n    code line 2" in linux
    assert "Distro | Cmd\n\nDebian | apt" in linux
    assert texts["Install > Windows"] == "Quoted text"
    everything = "\n".join(s.text for s in doc.sections)
    for hidden in ("secret", "alert", "Enable JS", "color: red", "Home", "Copyright", "svg text", "comment"):
        assert hidden not in everything
    assert everything.count("Nested para") == 1


def test_html_title_from_h1_then_stem_and_encoding() -> None:
    html = '<html><head><meta charset="windows-1252"></head><body><h1>Caf\xe9 menu</h1><p>cr\xe8me</p>'
    doc = parse(html.encode("cp1252"), "menu.htm")
    assert doc.title == "Café menu"
    assert doc.sections == [Section(text="crème", heading="Café menu")]
    assert parse(b"<p>just text</p>", "plain.html").title == "plain"


def test_html_layout_table_keeps_blocks() -> None:
    html = b"<table><tr><td><h2>Side</h2><p>One</p><p>Two</p></td></tr></table>"
    doc = parse(html, "layout.html")
    assert doc.sections == [Section(text="One\n\nTwo", heading="Side")]


def test_html_deep_nesting_does_not_crash() -> None:
    html = b"<div>" * 3000 + b"deep" + b"</div>" * 3000
    doc = parse(html, "deep.html")
    assert "deep" in "".join(s.text for s in doc.sections)


# --------------------------------------------------------------------------- PDF


def test_pdf_pages_and_metadata() -> None:
    data = make_pdf(
        [["Alpha page one text."], ["Bravo page two text.", "second line"], [], ["Delta page four."]],
        title="Quarterly Report",
        author="Grace Hopper",
    )
    doc = parse(data, "report.pdf")
    assert doc.title == "Quarterly Report"
    assert doc.metadata == {"page_count": 4, "title": "Quarterly Report", "author": "Grace Hopper"}
    assert [s.page for s in doc.sections] == [1, 2, 4]  # empty page 3 omitted
    assert "Alpha page one" in doc.sections[0].text
    assert "Bravo page two" in doc.sections[1].text and "second line" in doc.sections[1].text
    assert "Delta" in doc.sections[2].text and "Alpha" not in doc.sections[2].text
    assert all(s.heading is None for s in doc.sections)
    json.dumps(doc.metadata)


@pytest.mark.parametrize("placeholder", ["(anonymous)", "Untitled", "[unknown]", "  ", "--"])
def test_pdf_placeholder_title_gives_the_file_name(placeholder: str) -> None:
    doc = parse(make_pdf([["Alpha page one text."]], title=placeholder, author="(anonymous)"), "q3-budget.pdf")
    assert doc.title == "q3-budget"
    assert "title" not in doc.metadata and "author" not in doc.metadata


def test_pdf_title_falls_back_to_stem_and_dehyphenates() -> None:
    doc = parse(make_pdf([["A worked exam-", "ple of hyphen-", "Ation and self-", "and more"]]), "Scan 01.PDF")
    assert doc.title == "Scan 01"
    text = doc.sections[0].text
    assert "worked example of" in text
    assert "hyphen-\nAtion" in text  # capitalized continuation: not clearly a hyphenation


@pytest.mark.parametrize(
    "data",
    [
        b"this is definitely not a pdf" * 10,
        b"%PDF-1.7\n" + bytes((i * 91 + 7) % 256 for i in range(5000)),
        b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF",
    ],
)
def test_pdf_garbage_rejected(data: bytes) -> None:
    with pytest.raises(ParseError, match=r"not a valid PDF file|no extractable text"):
        parse(data, "broken.pdf")


def test_pdf_truncated_rejected() -> None:
    data = make_pdf([["Some text here."]])
    with pytest.raises(ParseError):
        parse(data[: len(data) // 3], "truncated.pdf")


def test_pdf_encrypted_with_password_rejected() -> None:
    data = encrypt_pdf(make_pdf([["Top secret text."]]), "secret")
    with pytest.raises(ParseError, match="encrypted/password-protected"):
        parse(data, "locked.pdf")


def test_pdf_encrypted_with_empty_user_password_is_read() -> None:
    data = encrypt_pdf(make_pdf([["Readable despite encryption."]]), "")
    doc = parse(data, "owner-locked.pdf")
    assert "Readable despite encryption." in doc.sections[0].text


def test_pdf_image_only_has_no_extractable_text() -> None:
    with pytest.raises(ParseError, match="no extractable text") as info:
        parse(image_only_pdf(), "scan.pdf")
    assert "OCR" in str(info.value)


# --------------------------------------------------------------------------- DOCX


def test_docx_headings_table_and_title() -> None:
    doc = parse(make_docx(author="Linus"), "guide.docx")
    assert doc.title == "User Guide"  # first Title-style paragraph
    assert doc.metadata == {"author": "Linus"}
    assert [(s.heading, s.text) for s in doc.sections] == [
        ("User Guide", "Welcome to the guide."),
        ("User Guide > Install", "Install steps overview."),
        ("User Guide > Install > Linux", "Use apt-get install ragchat.\n\nDistro | Command\nDebian | apt"),
        ("User Guide > Install > Windows", "Run the installer."),
    ]


def test_docx_core_title_wins() -> None:
    assert parse(make_docx(core_title="Official Title"), "g.DOCX").title == "Official Title"


def test_docx_title_falls_back_to_stem() -> None:
    document = docx.Document()
    document.add_paragraph("Just a paragraph.")
    out = BytesIO()
    document.save(out)
    doc = parse(out.getvalue(), "memo.docx")
    assert doc.title == "memo"
    assert doc.sections == [Section(text="Just a paragraph.")]


@pytest.mark.parametrize("data", [b"not a zip file at all", b"PK\x03\x04" + b"\x00" * 200, make_pdf([["x"]])])
def test_docx_garbage_rejected(data: bytes) -> None:
    with pytest.raises(ParseError, match="not a valid DOCX file"):
        parse(data, "broken.docx")


# --------------------------------------------------------------------------- BEIR jsonl


def test_iter_beir_jsonl() -> None:
    lines = [
        json.dumps({"_id": "doc1", "title": "First", "text": "Alpha text."}),
        "",
        "   ",
        json.dumps({"_id": 2, "title": "", "text": "Beta\x00 text.", "metadata": {}}),
        json.dumps({"_id": "doc3", "text": "No title field."}),
    ]
    data = ("\ufeff" + "\r\n".join(lines) + "\n").encode()
    assert list(iter_beir_jsonl(data)) == [
        BeirRecord(source_id="doc1", title="First", text="Alpha text."),
        BeirRecord(source_id="2", title="", text="Beta text."),
        BeirRecord(source_id="doc3", title="", text="No title field."),
    ]


def test_iter_beir_jsonl_is_lazy_and_names_bad_line() -> None:
    data = b'{"_id": "a", "title": "", "text": "ok"}\n\n{"_id": "b", "text": \n'
    records = iter_beir_jsonl(data)
    assert next(records).source_id == "a"
    with pytest.raises(ParseError, match="line 3"):
        next(records)


@pytest.mark.parametrize("line", [b"[1, 2]", b'{"title": "no id", "text": "x"}', b'{"_id": "x", "text": 5}'])
def test_iter_beir_jsonl_wrong_shape(line: bytes) -> None:
    with pytest.raises(ParseError, match="line 2"):
        list(iter_beir_jsonl(b'{"_id": "a", "text": "ok"}\n' + line))


def test_iter_beir_jsonl_empty() -> None:
    with pytest.raises(ParseError, match="file is empty"):
        list(iter_beir_jsonl(b""))
