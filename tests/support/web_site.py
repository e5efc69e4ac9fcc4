"""A real local web site for the URL-ingestion tests: threaded http.server on 127.0.0.1 (optionally TLS with a
self-signed certificate for made-up names), counting every request it gets."""

from __future__ import annotations

import datetime as dt
import functools
import ipaddress
import ssl
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.unit.test_parsers import make_pdf

ARTICLE_FACT = "The Vatnajokull outlet glacier retreated 412 metres between 1995 and 2020"
BOILERPLATE = "Quixotic zebra newsletter: subscribe for marmalade discounts"
ARTICLE = f"""<!doctype html>
<html><head><title>Retreat of the Vatnajokull glaciers | Ice Weekly</title>
<meta name="author" content="Sigrun Jonsdottir"><meta name="date" content="2021-04-12"></head>
<body>
<nav><a href="/">Home</a> <a href="/about">About</a> <a href="/shop">Shop</a> {BOILERPLATE}</nav>
<div class="sidebar"><p>{BOILERPLATE}. Follow us on social media.</p></div>
<article>
<h1>Retreat of the Vatnajokull glaciers</h1>
<p>{ARTICLE_FACT}, according to repeated surveys of its terminus by the Icelandic Meteorological Office.</p>
<h2>Measuring the terminus</h2>
<p>Surveyors walk the ice margin with satellite receivers each autumn, after the melt season ends, and compare
the line with aerial photographs taken since the middle of the twentieth century.</p>
<h2>What the meltwater does</h2>
<p>Meltwater carries fine glacial flour into the lagoons, which turns them a milky turquoise and feeds the
braided rivers that cross the outwash plain on their way to the sea.</p>
</article>
<footer>Copyright 2021 Ice Weekly. {BOILERPLATE}. Cookie policy. Terms of use.</footer>
</body></html>"""
NAV_ONLY = (
    "<html><head><title>Menu</title></head><body><nav><a href='/'>Home</a> <a href='/shop'>Shop</a></nav>"
    f"<footer>{BOILERPLATE}</footer></body></html>"
)
LATIN1_PAGE = (
    "<html><head><title>Gletscher für Anfänger</title></head><body><article><h1>Gletscher für Anfänger</h1>"
    "<p>Ein Überblick über Gletscherzungen, Moränen und Schmelzwasser, mit Beispielen aus den Ötztaler Alpen "
    "und dem Großglockner, wo die Pasterze jedes Jahr weiter zurückweicht.</p></article></body></html>"
)
PDF_TEXT = "Ablation zones lose more ice each summer than the winter snow replaces"


class Site:
    """Serves `routes` (path → handler name or callable) on 127.0.0.1; `hits` lists the paths requested."""

    def __init__(self, *, tls: ssl.SSLContext | None = None) -> None:
        self.hits: list[str] = []
        self.hosts: list[str] = []  # the Host header of each request
        self.sni: list[str | None] = []
        self.sent = 0  # body bytes written by the streaming routes
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                site.hits.append(self.path)
                site.hosts.append(self.headers.get("Host", ""))
                try:
                    site.route(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            tls.sni_callback = lambda sock, name, ctx: self.sni.append(name)  # type: ignore[assignment]
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = int(self.server.server_address[1])
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ---- routes -------------------------------------------------------------------------------------------
    def route(self, h: BaseHTTPRequestHandler) -> None:
        path = h.path.split("?", 1)[0]
        if path.startswith("/redirect/"):  # /redirect/N → N-1 … → /article
            n = int(path.rsplit("/", 1)[1])
            return self.redirect(h, f"/redirect/{n - 1}" if n > 1 else "/article")
        if path.startswith("/go"):  # /go?to=URL: a redirect anywhere
            return self.redirect(h, h.path.split("to=", 1)[1])
        match path:
            case "/article":
                self.send(h, 200, "text/html; charset=utf-8", ARTICLE.encode())
            case "/xhtml":
                self.send(h, 200, "application/xhtml+xml", ARTICLE.encode())
            case "/nav-only":
                self.send(h, 200, "text/html", NAV_ONLY.encode())
            case "/papers/ablation.pdf":
                self.send(h, 200, "application/pdf", make_pdf([[PDF_TEXT]], title="Ablation"))
            case "/download":  # a PDF sent as octet-stream under a name without extension: refused
                self.send(h, 200, "application/octet-stream", make_pdf([[PDF_TEXT]]))
            case "/notes.md":
                self.send(h, 200, "text/plain", b"# Field notes\n\nCrevasses open where the ice bends.\n")
            case "/blob":
                self.send(h, 200, "application/octet-stream", bytes(range(256)) * 64)
            case "/photo":
                self.send(h, 200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
            case "/missing":
                self.send(h, 404, "text/html", b"<h1>Not here</h1>")
            case "/broken":
                self.send(h, 500, "text/plain", b"boom")
            case "/loop":
                self.redirect(h, "/loop")
            case "/latin1":
                self.send(h, 200, "text/html; charset=iso-8859-1", LATIN1_PAGE.encode("iso-8859-1"))
            case "/tag-bomb":
                self.send(h, 200, "text/html", b"<html><body><article>" + b"<b>x</b>" * 50_000 + b"</article></body>")
            case "/long-page":  # 8,000 paragraphs: seconds of extraction
                self.send(h, 200, "text/html", long_page(8000))
            case "/bad-redirect":
                self.redirect(h, "http://[::1/")
            case "/huge":
                self.stream(h, "text/plain", chunk=b"ice " * 16384, pause_s=0.0)
            case "/huge-declared":
                h.send_response(200)
                h.send_header("Content-Type", "text/plain")
                h.send_header("Content-Length", str(10 * 1024**3))
                h.end_headers()
            case "/slow":
                self.stream(h, "text/plain", chunk=b"drip ", pause_s=0.2)
            case "/gzip-bomb":
                h.send_response(200)
                h.send_header("Content-Type", "text/plain")
                h.send_header("Content-Encoding", "gzip")
                h.end_headers()
                h.wfile.write(gzip_bomb())
            case _:
                self.send(h, 404, "text/plain", b"no such page")

    def send(self, h: BaseHTTPRequestHandler, status: int, content_type: str, body: bytes) -> None:
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def redirect(self, h: BaseHTTPRequestHandler, location: str) -> None:
        h.send_response(302)
        h.send_header("Location", location)
        h.send_header("Content-Length", "0")
        h.end_headers()

    def stream(self, h: BaseHTTPRequestHandler, content_type: str, *, chunk: bytes, pause_s: float) -> None:
        """A body without a length that never ends (until the client hangs up or 10 minutes pass)."""
        h.send_response(200)
        h.send_header("Content-Type", content_type)
        h.end_headers()
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            h.wfile.write(chunk)
            h.wfile.flush()
            self.sent += len(chunk)
            if pause_s:
                time.sleep(pause_s)


@functools.cache
def long_page(paragraphs: int) -> bytes:
    """A plain long article: extracting it takes seconds."""
    body = "".join(f"<p>Paragraph {i}: valley {i * 7} was carved by ice ({i % 13}).</p>" for i in range(paragraphs))
    return f"<html><head><title>Long</title></head><body><article><h1>Long</h1>{body}</article></body></html>".encode()


@functools.cache
def gzip_bomb() -> bytes:
    """~200 KB of gzip that inflates to 200 MB of zeros (compressed a megabyte at a time)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\0" * (1024 * 1024)
    out = b"".join(packer.compress(zeros) for _ in range(200)) + packer.flush()
    assert len(out) < 300 * 1024
    return out


def self_signed(names: list[str], directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for `names` and a client context that trusts only it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = dt.datetime.now(dt.UTC)
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in names]
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_path, key_path)
    client = ssl.create_default_context(cafile=str(cert_path))
    return server, client


def loopback(port: int) -> set[tuple[str, int]]:
    return {(str(ipaddress.ip_address("127.0.0.1")), port)}


def running(tls: ssl.SSLContext | None = None) -> Iterator[Site]:
    site = Site(tls=tls)
    try:
        yield site
    finally:
        site.close()
