"""E-books: .epub (zipfile + lxml, after the zip checks and an XML element count) -> sections per chapter.

An EPUB is a ZIP: `META-INF/container.xml` names the package document (OPF), whose manifest lists the files,
whose spine gives the reading order, and whose metadata has the title and author. Chapters are the spine's
XHTML documents in reading order (the EPUB 3 navigation document left out); each one's title comes from the
table of contents (the EPUB 3 nav, else the EPUB 2 NCX), else from its own <title>/<h1>, else its file name. Its
text is read by the HTML parser of `ragchat.documents.parsing.parsers` (headings, tables, element cap), and every
section is headed and located by the chapter's title: `{"chapter": title}`.

The zip checks bound every member's inflated bytes (MAX_INFLATED_MB) and the element count bounds the trees
lxml builds of the package document and the navigation; an internal DTD declaring entities is refused, and lxml
resolves no entity, loads no DTD and fetches nothing.
"""

from __future__ import annotations

import posixpath
import warnings
import zipfile
from collections.abc import Iterator
from urllib.parse import unquote

from lxml import etree  # pyright: ignore[reportAttributeAccessIssue]  (no stubs for the C module)

from ragchat.documents.parsing.document import ParsedDocument, Section, make_document
from ragchat.documents.parsing.formats.common import XML_ELEMENTS_PER_UNIT, open_container, scan_xml
from ragchat.documents.parsing.formats.html import TAG_START_RE, parse_html
from ragchat.documents.parsing.limits import Deadline, ParseError, ParseLimits
from ragchat.documents.parsing.text import one_line, short_error

_MAX_CHAPTER_TITLE = 200
_DOCUMENT_TYPES = {"application/xhtml+xml", "text/html", "application/xml"}
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, recover=False)
_NS = {
    "c": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "dc": "http://purl.org/dc/elements/1.1/",
    "ncx": "http://www.daisy.org/z3986/2005/ncx/",
    "x": "http://www.w3.org/1999/xhtml",
    "epub": "http://www.idpf.org/2007/ops",
}


def _xml(zf: zipfile.ZipFile, name: str) -> etree._Element:
    try:
        return etree.fromstring(zf.read(name), _PARSER)
    except KeyError:
        raise ParseError(f"not a valid .epub file: {name} is missing") from None
    except etree.XMLSyntaxError as exc:
        raise ParseError(f"not a valid .epub file: {name} is not well-formed XML ({short_error(exc)})") from exc


def _resolve(base: str, href: str) -> str:
    """A manifest or TOC href (relative to the file naming it, maybe %-escaped, maybe with #fragment) → zip path."""
    path = unquote(href.partition("#")[0])
    return posixpath.normpath(posixpath.join(posixpath.dirname(base), path)) if path else ""


def _text(element: etree._Element) -> str:
    return one_line("".join(element.itertext()))


def _nav_entries(zf: zipfile.ZipFile, nav: str) -> Iterator[tuple[str, str]]:
    """(zip path, title) of the EPUB 3 navigation document's table of contents, in order."""
    root = _xml(zf, nav)
    navs = root.findall(".//x:nav", _NS)
    toc = next((n for n in navs if n.get(f"{{{_NS['epub']}}}type") == "toc"), navs[0] if navs else None)
    if toc is None:
        return
    for link in toc.iterfind(".//x:a[@href]", _NS):
        yield _resolve(nav, link.get("href") or ""), _text(link)


def _ncx_entries(zf: zipfile.ZipFile, ncx: str) -> Iterator[tuple[str, str]]:
    """(zip path, title) of the EPUB 2 NCX's navigation points, in document order (nesting included)."""
    root = _xml(zf, ncx)
    for point in root.iterfind(".//ncx:navPoint", _NS):
        content = point.find("ncx:content", _NS)
        label = point.find("ncx:navLabel/ncx:text", _NS)
        if content is not None and content.get("src"):
            yield _resolve(ncx, content.get("src") or ""), _text(label) if label is not None else ""


def _chapter_title(toc: dict[str, str], name: str, parsed_title: str) -> str:
    title = toc.get(name) or parsed_title or name.rsplit("/", 1)[-1]
    return title[:_MAX_CHAPTER_TITLE]


def _book(zf: zipfile.ZipFile) -> tuple[list[str], dict[str, str], str, str]:
    """The spine's chapter paths, the TOC (path → title), the book's title and first author."""
    rootfile = _xml(zf, "META-INF/container.xml").find(".//c:rootfile", _NS)
    opf_path = rootfile.get("full-path") if rootfile is not None else None
    if not opf_path:
        raise ParseError("not a valid .epub file: META-INF/container.xml names no package document")
    opf = _xml(zf, opf_path)
    manifest: dict[str, tuple[str, str, str]] = {}  # id → (path, media type, properties)
    for item in opf.iterfind("opf:manifest/opf:item", _NS):
        if item.get("id") and item.get("href"):
            path = _resolve(opf_path, item.get("href") or "")
            manifest[item.get("id") or ""] = (path, item.get("media-type") or "", item.get("properties") or "")
    nav = next((p for p, _, props in manifest.values() if "nav" in props.split()), None)
    spine = opf.find("opf:spine", _NS)
    chapters: list[str] = []
    for ref in spine.iterfind("opf:itemref", _NS) if spine is not None else ():
        path, media, _ = manifest.get(ref.get("idref") or "", ("", "", ""))
        if path and media in _DOCUMENT_TYPES and path != nav and path not in chapters:
            chapters.append(path)
    toc: dict[str, str] = {}
    ncx_id = spine.get("toc") if spine is not None else None
    ncx = manifest.get(ncx_id or "", ("", "", ""))[0] or next(
        (p for p, media, _ in manifest.values() if media == "application/x-dtbncx+xml"), ""
    )
    entries = _nav_entries(zf, nav) if nav else _ncx_entries(zf, ncx) if ncx else iter(())
    for path, title in entries:
        if title:
            toc.setdefault(path, title)
    title_el = opf.find("opf:metadata/dc:title", _NS)
    creator = opf.find("opf:metadata/dc:creator", _NS)
    return (
        chapters,
        toc,
        _text(title_el) if title_el is not None else "",
        _text(creator) if creator is not None else "",
    )


def parse_epub(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    label = "the .epub file"
    zf = open_container(data, limits, ".epub", "META-INF/container.xml", label)
    scan_xml(zf, limits, deadline, label, allow_doctype=True)
    from bs4 import XMLParsedAsHTMLWarning

    try:
        chapters, toc, book_title, author = _book(zf)
    except ParseError:
        raise
    except Exception as exc:  # a malformed book: any failure reading it is the file's fault
        raise ParseError(f"not a valid .epub file: {short_error(exc)}") from exc

    sections: list[Section] = []
    tags = 0
    budget = limits.max_elements * XML_ELEMENTS_PER_UNIT
    for number, name in enumerate(chapters, start=1):
        deadline.check(f"chapter {number:,} of {len(chapters):,}")
        try:
            content = zf.read(name)
        except KeyError:
            raise ParseError(f"not a valid .epub file: the chapter {name} is missing") from None
        tags += len(TAG_START_RE.findall(content))
        if tags > budget:
            raise ParseError(
                f"{label} has more than {budget:,} HTML elements in its chapters ({XML_ELEMENTS_PER_UNIT} × "
                f"MAX_ELEMENTS {limits.max_elements:,}); split it into smaller files"
            )
        if not content.strip():
            continue
        with warnings.catch_warnings():  # XHTML read by the HTML parser is what we mean
            warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
            chapter = parse_html(content, "", limits, deadline)
        title = _chapter_title(toc, name, chapter.title)
        location = {"chapter": title}
        sections += [Section(text=s.text, heading=title, location=location) for s in chapter.sections if s.text]
    if not sections:
        raise ParseError("the e-book has no text in its chapters (images only, or DRM-protected?)")
    metadata = {"chapters": len(chapters)} | ({"author": author} if author else {})
    return make_document(book_title or stem, sections, metadata)
