"""HTML (.html, .htm): sections by heading path, boilerplate tags dropped."""

from __future__ import annotations

import re
from typing import Any

from ragchat.documents.parsing.document import ParsedDocument, SectionBuilder, make_document
from ragchat.documents.parsing.limits import (
    Deadline,
    ParseError,
    ParseLimits,
    mislabelled,
    sniff,
    too_many_elements,
)
from ragchat.documents.parsing.text import (
    one_line,
)

TAG_START_RE = re.compile(rb"<[A-Za-z]")
_DROP_TAGS = ["script", "style", "noscript", "template", "nav", "footer", "svg", "head", "iframe"]
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BLOCK_TAGS = {
    *"address article aside blockquote body caption center dd details dialog div dl dt fieldset".split(),
    *"figcaption figure form header hr html legend li main menu ol p section summary table".split(),
    *"tbody td tfoot th thead tr ul".split(),
}


def html_fragment_text(html: str) -> str:
    from bs4 import BeautifulSoup

    return " ".join(BeautifulSoup(html, "lxml").stripped_strings)


def _simple_row(tr: Any) -> str | None:
    """Cells of a table row joined by " | ", or None if a cell holds block content (layout table)."""
    cells = tr.find_all(["td", "th"], recursive=False)
    if any(c.find(list(_BLOCK_TAGS | set(_HEADINGS) | {"pre"})) for c in cells):
        return None
    return " | ".join(t for t in (one_line(" ".join(c.stripped_strings)) for c in cells) if t)


def _check_markup_count(count: int, limits: ParseLimits, what: str) -> None:
    """An upper bound of the elements a markup parser will build, checked before it builds them."""
    if count > limits.max_elements:
        raise too_many_elements(limits, what)


def parse_html(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    from bs4 import BeautifulSoup, CData, Tag
    from bs4.element import NavigableString

    kind = sniff(data)
    if kind:
        raise ParseError(f"{mislabelled(kind, '.html')} (the file does not look like text)")
    # every element starts with "<" + a letter: an upper bound known before BeautifulSoup builds the tree
    _check_markup_count(len(TAG_START_RE.findall(data)), limits, "HTML elements")
    soup = BeautifulSoup(data, "lxml")
    deadline.check("the HTML tree")
    metadata: dict[str, Any] = {"encoding": soup.original_encoding} if soup.original_encoding else {}
    title_tag = soup.head.find("title") if soup.head else None
    title = one_line(title_tag.get_text(" ")) if isinstance(title_tag, Tag) else ""
    author = soup.find("meta", attrs={"name": re.compile(r"^author$", re.I)})
    if isinstance(author, Tag) and one_line(str(author.get("content") or "")):
        metadata["author"] = one_line(str(author.get("content")))
    for tag in soup(_DROP_TAGS):
        tag.decompose()

    out, buf = SectionBuilder(), []
    stack: list[tuple[Any, bool]] = [(soup, False)]
    steps = 0
    while stack:  # iterative walk: deep nesting cannot hit the recursion limit
        node, closing = stack.pop()
        steps += 1
        if steps % 4096 == 0:
            deadline.check(f"HTML node {steps:,}")
        if closing:
            out.add("".join(buf))
            buf = []
        elif type(node) in (NavigableString, CData):  # skips comments, doctypes, etc.
            buf.append(re.sub(r"\s+", " ", str(node)))
        elif isinstance(node, Tag):
            name = node.name
            row = _simple_row(node) if name == "tr" else None
            if name in _HEADINGS or name == "pre" or row is not None:
                out.add("".join(buf))
                buf = []
                if name == "pre":
                    out.add(node.get_text(), code=True)
                elif row is not None:
                    out.add(row)
                else:
                    heading = " ".join(node.stripped_strings)
                    title = title or (one_line(heading) if name == "h1" else "")
                    out.heading(_HEADINGS[name], heading)
            elif name == "br":
                buf.append("\n")
            else:
                if name in _BLOCK_TAGS:
                    out.add("".join(buf))
                    buf = []
                    stack.append((node, True))
                stack.extend((child, False) for child in reversed(node.contents))
    out.add("".join(buf))
    return make_document(title or stem, out.finish(), metadata)
