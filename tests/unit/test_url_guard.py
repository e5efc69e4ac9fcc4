"""The SSRF guard's address classification and the naming of fetched files: pure functions, no network."""

from __future__ import annotations

import ipaddress

import httpx
import pytest

from ragchat.documents.fetch.fetcher import extension_for, safe_stem
from ragchat.documents.fetch.urlguard import ip_literal, non_public


# ---- the guard's address classification ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("8.8.8.8", None),
        ("2606:4700::1111", None),
        ("::ffff:8.8.8.8", None),
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.5", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.254", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("100.64.0.1", "shared (CGNAT)"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("198.18.0.1", "private"),
        ("2001:db8::1", "private"),
        ("::ffff:127.0.0.1", "loopback (IPv4 127.0.0.1 inside IPv6)"),
        ("::ffff:169.254.169.254", "link-local (IPv4 169.254.169.254 inside IPv6)"),
        ("::127.0.0.1", "loopback (IPv4 127.0.0.1 inside IPv6)"),
        ("64:ff9b::7f00:1", "loopback (IPv4 127.0.0.1 inside IPv6)"),
        ("2002:a00:1::", "private (IPv4 10.0.0.1 inside IPv6)"),
    ],
)
def test_non_public_addresses_are_named(address: str, kind: str | None) -> None:
    assert non_public(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "0177.0.0.1", "127.1", "0x7f000001", "127.0.0.1"])
def test_numeric_host_forms_are_read_as_the_address_they_name(host: str) -> None:
    assert ip_literal(host) == ipaddress.IPv4Address("127.0.0.1")


def test_names_and_extensions() -> None:
    assert safe_stem("Über die Gletscher: eine Übersicht / 2021") == "Uber-die-Gletscher-eine-Ubersicht-2021"
    assert safe_stem("../../etc/passwd") == "etc-passwd"
    assert safe_stem("日本語") == ""
    assert len(safe_stem("x" * 500)) == 80
    url = httpx.URL("https://example.com/docs/notes.md")
    assert extension_for("text/html", url) == ".md"
    assert extension_for("text/plain", url) == ".md"
    assert extension_for("application/octet-stream", httpx.URL("https://e.com/a/report.pdf")) == ".pdf"
    assert extension_for("application/octet-stream", httpx.URL("https://e.com/download")) is None
    assert extension_for("application/pdf", httpx.URL("https://e.com/download")) == ".pdf"
    assert extension_for("text/plain", httpx.URL("https://e.com/readme")) == ".txt"
    assert extension_for("image/png", url) is None
    assert extension_for("application/octet-stream", httpx.URL("https://e.com/corpus.jsonl")) is None
