"""A fetched HTML page's main content as Markdown (trafilatura): headings kept, navigation, footers and
comments dropped; title, date and author from the page's metadata."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import httpx

from ragchat.core.errors import BadRequest, PayloadTooLarge

_TAG_START = re.compile(rb"<[A-Za-z]")
# trafilatura's time grows faster than the page: on 2 busy cores 10k paragraphs took 3 s, 30k 17 s (+120 MB),
# 50k 36 s (+190 MB), 190k six minutes (+600 MB); one 8 MB paragraph 8 s. Bigger pages are refused before it runs.
MAX_PAGE_ELEMENTS = 30_000
MAX_PAGE_MB = 10


@dataclass(frozen=True)
class Page:
    title: str
    markdown: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _count_tags(html: bytes, limit: int) -> int:
    """Element starts in `html`, counting no further than `limit` + 1."""
    count = 0
    for _ in _TAG_START.finditer(html):
        count += 1
        if count > limit:
            break
    return count


def _decode(html: bytes, charset: str | None) -> str | bytes:
    """Text in the charset the server named; the bytes (trafilatura guesses) when it named none or a bad one."""
    if charset:
        try:
            return html.decode(charset, errors="replace")
        except LookupError:
            pass
    return html


def extract_page(html: bytes, charset: str | None, url: httpx.URL, max_elements: int) -> Page:
    """The page's main content as Markdown under a `# title` heading; BadRequest when there is none."""
    import trafilatura  # ~0.4 s of imports, paid by the first page rather than by every process start

    if len(html) > MAX_PAGE_MB * 1024 * 1024:
        raise PayloadTooLarge(f"{url}: the page is over {MAX_PAGE_MB} MB of HTML, the limit for extracting a web page")
    if max_elements < MAX_PAGE_ELEMENTS and _count_tags(html, max_elements) > max_elements:
        raise PayloadTooLarge(f"{url}: the page has more than {max_elements:,} HTML elements (MAX_ELEMENTS)")
    if _count_tags(html, MAX_PAGE_ELEMENTS) > MAX_PAGE_ELEMENTS:
        raise PayloadTooLarge(
            f"{url}: the page has more than {MAX_PAGE_ELEMENTS:,} HTML elements, the limit for extracting a web page"
        )
    doc = trafilatura.bare_extraction(
        _decode(html, charset),
        url=str(url),
        with_metadata=True,
        include_comments=False,
        include_formatting=True,
        include_tables=True,
        favor_precision=True,  # a nav-only page gives nothing rather than its menu
    )
    text = (getattr(doc, "text", None) or "").strip()
    if not text:
        raise BadRequest(
            f"{url}: no main content found (the page may be only navigation, or built by JavaScript in the browser)"
        )
    title = " ".join((getattr(doc, "title", None) or "").split())[:300] or url.host
    heading = f"# {title}"
    markdown = text if text.splitlines()[0].strip() == heading else f"{heading}\n\n{text}"
    metadata = {
        key: value
        for key, attr in (("published", "date"), ("author", "author"), ("site_name", "sitename"))
        if isinstance(value := getattr(doc, attr, None), str) and value.strip()
    }
    return Page(title, markdown + "\n", metadata)
