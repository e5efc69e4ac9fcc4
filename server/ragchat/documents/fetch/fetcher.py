"""Fetching a web page (or a document file) by URL for ingestion: safe, bounded, and ready to register.

Every hop (the URL and each redirect, at most MAX_REDIRECTS) is checked by `UrlGuard` before any connection and
the connection goes to the address that was checked (the Host header and TLS SNI name the host). The whole
fetch is bounded by URL_FETCH_TIMEOUT_S, the body by MAX_UPLOAD_MB (counted while streaming, after a bounded
gzip/deflate decoding). HTML and XHTML become Markdown of the page's main content (trafilatura: headings kept,
navigation and footers dropped); PDF, text, Markdown and the other types the parsers read are stored as files.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import unicodedata
import zlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

import httpx

from ragchat import __version__
from ragchat.core.errors import BadRequest, PayloadTooLarge, RagchatError, UnsupportedMediaType
from ragchat.documents.fetch.urlguard import Resolver, Target, UrlGuard
from ragchat.documents.fetch.webpage import extract_page
from ragchat.documents.parsing.parsers import CONTENT_TYPES
from ragchat.settings import IngestionSettings

MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
HTML_TYPES = ("text/html", "application/xhtml+xml")
# types a server sends when it does not know better: the URL path's extension decides
GENERIC_TYPES = ("application/octet-stream", "binary/octet-stream", "application/x-download", "text/plain", "")
# a BEIR corpus is a bulk import; HTML is extracted, not stored; images (OCR) are uploaded, not fetched
NOT_FROM_URLS = (".jsonl", ".html", ".htm", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp")
_EXTENSIONS = {
    "text/x-markdown": ".md",
    "application/x-pdf": ".pdf",
    **{mime: ext for ext, mime in reversed(CONTENT_TYPES.items()) if ext not in NOT_FROM_URLS},
}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_READ_CHUNK = 1 << 20  # inflated bytes produced per step of the gzip/deflate decoder


class FetchFailed(RagchatError):
    """The site could not be reached or answered with an error (502)."""

    status_code = 502
    code = "fetch_failed"


class FetchTimeout(RagchatError):
    status_code = 504
    code = "fetch_timeout"


@dataclass(frozen=True)
class FetchedPage:
    """What to register: the stored file's name, its bytes, the document's title and metadata."""

    filename: str
    title: str
    data: bytes
    metadata: dict[str, Any]


def safe_stem(text: str, limit: int = 80) -> str:
    """A filename stem of safe ASCII characters (accents folded, anything else a hyphen); may be empty."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _UNSAFE.sub("-", folded).strip("-._")[:limit].strip("-._")


def _media_type(response: httpx.Response) -> tuple[str, str | None]:
    """The Content-Type's media type (lower case) and charset."""
    media, *params = response.headers.get("content-type", "").split(";")
    charsets = [p.split("=", 1)[1].strip(" \"'") for p in params if p.strip().lower().startswith("charset=")]
    return media.strip().lower(), charsets[0] if charsets else None


def extension_for(media: str, url: httpx.URL) -> str | None:
    """The stored file's extension for a response of `media` type from `url` (".md" for HTML), or None."""
    if media in HTML_TYPES:
        return ".md"
    path_ext = PurePosixPath(url.path).suffix.lower()
    usable = path_ext if path_ext in CONTENT_TYPES and path_ext not in NOT_FROM_URLS else None
    if media in GENERIC_TYPES:
        if usable:
            return usable
        return ".txt" if media == "text/plain" else None
    return _EXTENSIONS.get(media)


class _Inflater:
    """gzip/deflate decoding in steps of at most _READ_CHUNK bytes, so a size check runs between steps (no zip
    bomb inflates in one call)."""

    def __init__(self, encoding: str, url: httpx.URL) -> None:
        if encoding in ("", "identity"):
            self._decoder = None
        elif encoding in ("gzip", "x-gzip", "deflate"):
            self._decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)  # a gzip or zlib header
        else:
            raise FetchFailed(f"{url} sent a body encoded as {encoding!r} (only gzip and deflate are decoded)")
        self.url = url

    def pieces(self, raw: bytes) -> Iterator[bytes]:
        if self._decoder is None:
            yield raw
            return
        data = raw
        try:
            while data:
                yield self._decoder.decompress(data, _READ_CHUNK)
                data = self._decoder.unconsumed_tail
        except zlib.error as exc:
            raise FetchFailed(f"{self.url} sent a body that does not decode ({exc})") from exc


class WebFetcher:
    """Fetches URLs for ingestion under the settings' limits (see the module docstring).

    Tests pass `allow` (exact `(ip, port)` addresses allowed although private), `resolver` (made-up names) and
    `verify` (an SSL context trusting a test certificate).
    """

    def __init__(
        self,
        settings: IngestionSettings,
        *,
        allow: Collection[tuple[str, int]] = (),
        resolver: Resolver | None = None,
        verify: ssl.SSLContext | None = None,
    ) -> None:
        self.settings = settings
        self.guard = UrlGuard(settings.allow_private_urls, allow=allow, resolver=resolver)
        self._verify = verify
        self.connections = 0  # connections attempted (tests prove a refused URL opened none)

    def _ssl(self) -> ssl.SSLContext:
        if self._verify is None:  # built once: loading the CA bundle takes a while
            self._verify = httpx.create_ssl_context()
        return self._verify

    async def fetch(self, url: str) -> FetchedPage:
        """The page or file at `url`, ready to register; domain errors (400, 413, 415, 502, 504) otherwise.
        URL_FETCH_TIMEOUT_S bounds it all: lookups, connections, redirects, the body and the extraction."""
        limit = self.settings.url_fetch_timeout_s
        try:
            async with asyncio.timeout(limit):
                final, media, charset, body = await self._download(url)
                return await self._page(final, media, charset, body)
        except TimeoutError:
            raise FetchTimeout(f"fetching {url} took longer than {limit:g} s (URL_FETCH_TIMEOUT_S)") from None

    async def _page(self, final: httpx.URL, media: str, charset: str | None, body: bytes) -> FetchedPage:
        fetched = {"source_url": str(final), "fetched_at": datetime.now(UTC).isoformat(timespec="seconds")}
        ext = extension_for(media, final)
        if ext is None:
            shown = media or "no Content-Type"
            raise UnsupportedMediaType(
                f"{final} is {shown}: only web pages (HTML) and the document types ragchat reads can be ingested"
            )
        if media in HTML_TYPES:
            # in a thread, bounded by the page limits (webpage.py); a timeout answers at once, the thread ends later
            page = await asyncio.to_thread(extract_page, body, charset, final, self.settings.max_elements)
            stem = safe_stem(page.title) or _url_stem(final)
            return FetchedPage(f"{stem}.md", page.title, page.markdown.encode(), {**fetched, **page.metadata})
        if not body:
            raise BadRequest(f"{final} returned an empty body")
        stem = _url_stem(final)
        return FetchedPage(f"{stem}{ext}", stem, body, fetched)

    async def _download(self, url: str) -> tuple[httpx.URL, str, str | None, bytes]:
        headers = {
            "User-Agent": f"ragchat/{__version__} (document ingestion)",
            "Accept": "text/html,application/xhtml+xml,application/pdf,text/*;q=0.9,*/*;q=0.5",
            "Accept-Encoding": "gzip, deflate",
        }
        limits = httpx.Limits(max_keepalive_connections=0)
        timeout = httpx.Timeout(self.settings.url_fetch_timeout_s)
        async with httpx.AsyncClient(
            verify=self._ssl(), trust_env=False, follow_redirects=False, limits=limits, timeout=timeout
        ) as client:
            current: str | httpx.URL = url
            for hop in range(MAX_REDIRECTS + 1):
                target = await self.guard.check(current)
                response = await self._connect(client, target, headers)
                try:
                    if response.status_code in REDIRECTS and "location" in response.headers:
                        current = target.url.join(response.headers["location"])  # httpx checked it
                        if hop == MAX_REDIRECTS:
                            raise FetchFailed(f"{url}: too many redirects (more than {MAX_REDIRECTS})")
                        continue
                    if response.status_code >= 400:
                        status = f"{response.status_code} {response.reason_phrase}".strip()
                        extra = {"status": response.status_code}
                        raise FetchFailed(f"{target.url} answered HTTP {status}", extra=extra)
                    media, charset = _media_type(response)
                    if extension_for(media, target.url) is None:  # refused before the body is downloaded
                        return target.url, media, charset, b""
                    return target.url, media, charset, await self._read(response, target.url)
                finally:
                    await response.aclose()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _connect(self, client: httpx.AsyncClient, target: Target, headers: dict[str, str]) -> httpx.Response:
        """GET the target at its checked addresses in order (the next one when one refuses the connection)."""
        extensions = {"sni_hostname": target.host} if target.url.scheme == "https" else {}
        failure: Exception | None = None
        for address in target.addresses:
            request = client.build_request(
                "GET",
                target.request_url(address),
                headers={**headers, "Host": target.host_header},
                extensions=extensions,
            )
            self.connections += 1
            try:
                return await client.send(request, stream=True)
            except httpx.ConnectError as exc:
                failure = exc
            except httpx.TimeoutException as exc:
                raise TimeoutError from exc
            except httpx.HTTPError as exc:
                raise FetchFailed(f"fetching {target.url} failed: {exc or type(exc).__name__}") from exc
        raise FetchFailed(f"could not connect to {target.url}: {failure or 'no address'}")

    async def _read(self, response: httpx.Response, url: httpx.URL) -> bytes:
        """The body, decoded, refused (413) as soon as it passes MAX_UPLOAD_MB."""
        cap = self.settings.max_upload_bytes
        too_big = f"{url}: the body is over the {self.settings.max_upload_mb:g} MB limit (MAX_UPLOAD_MB)"
        declared = response.headers.get("content-length", "")
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if declared.isdigit() and not encoding and int(declared) > cap:
            raise PayloadTooLarge(too_big)
        inflater = _Inflater(encoding, url)
        parts: list[bytes] = []
        size = 0
        try:
            async for raw in response.aiter_raw():
                for piece in inflater.pieces(raw):
                    size += len(piece)
                    if size > cap:
                        raise PayloadTooLarge(too_big)
                    parts.append(piece)
        except httpx.TimeoutException as exc:
            raise TimeoutError from exc
        except httpx.HTTPError as exc:
            raise FetchFailed(f"reading {url} failed: {exc or type(exc).__name__}") from exc
        return b"".join(parts)


def _url_stem(url: httpx.URL) -> str:
    """A filename stem from the URL's last path segment, else its host."""
    name = PurePosixPath(url.path).name
    return safe_stem(PurePosixPath(name).stem if "." in name else name) or safe_stem(url.host) or "page"
