"""The SSRF guard of URL ingestion: which URLs may be fetched, and the addresses to connect to.

A URL is checked before any connection: http or https only, no credentials, and every address its host resolves
to must be public (`ipaddress`'s `is_global`, plus multicast, CGNAT 100.64/10, and IPv4 addresses embedded in IPv6:
mapped, compatible, 6to4, NAT64). The fetcher then connects to exactly the addresses checked here (no second DNS
lookup a rebinding attacker could answer differently). ALLOW_PRIVATE_URLS turns the address check off; tests
allow single `(ip, port)` addresses instead.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass

import httpx

from ragchat.core.errors import BadRequest

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

MAX_URL_CHARS = 2048
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NUMERIC_HOST = re.compile(r"^[0-9a-fA-FxX.]+$")  # what inet_aton may read as an IPv4 address: 2130706433, 0x7f.1


class Refused(BadRequest):
    """The URL, or an address its host resolves to, may not be fetched."""

    code = "url_refused"


async def system_resolver(host: str, port: int) -> list[str]:
    """The host's addresses from the system resolver (getaddrinfo, in a thread), in its order of preference."""
    infos = await asyncio.to_thread(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, 6to4, NAT64)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or int(ip) >> 32 == 0:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def non_public(ip: IPAddress) -> str | None:
    """What kind of non-public address `ip` is ("loopback", "private", ...), or None for a public one."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.is_unspecified or ip.is_loopback:
            return "unspecified" if ip.is_unspecified else "loopback"
        embedded = _embedded_v4(ip)
        if embedded is not None:
            kind = non_public(embedded)
            return f"{kind} (IPv4 {embedded} inside IPv6)" if kind else None
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("shared (CGNAT)", isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT),
        ("reserved", ip.is_reserved),
        ("private", ip.is_private),
        ("non-public", not ip.is_global),
    )
    return next((kind for kind, hit in checks if hit), None)


def ip_literal(host: str) -> IPAddress | None:
    """The address a host names literally, including the forms inet_aton reads (2130706433, 0x7f.1, 0177.1)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _NUMERIC_HOST.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


@dataclass(frozen=True)
class Target:
    """A checked URL and the addresses to connect to (all of them checked)."""

    url: httpx.URL
    host: str  # as sent in Host and SNI (IDNA-encoded)
    port: int
    addresses: tuple[str, ...]

    def request_url(self, address: str) -> httpx.URL:
        """The URL with its host replaced by `address`: the connection goes there, not to a new DNS answer."""
        return self.url.copy_with(host=address)

    @property
    def host_header(self) -> str:
        return self.url.netloc.decode("ascii")


def parse_url(url: str) -> httpx.URL:
    """An absolute http(s) URL without credentials (fragment dropped); BadRequest otherwise."""
    text = url.strip()
    if not text:
        raise BadRequest("the URL is empty")
    if len(text) > MAX_URL_CHARS:
        raise BadRequest(f"the URL is longer than {MAX_URL_CHARS} characters")
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise BadRequest(f"not a valid URL: {text[:200]!r} ({exc})") from exc
    if parsed.scheme not in ("http", "https"):
        shown = f"'{parsed.scheme}:'" if parsed.scheme else "no scheme"
        raise BadRequest(f"only http:// and https:// URLs can be fetched ({shown} in {text[:200]!r})")
    if not parsed.raw_host:
        raise BadRequest(f"the URL {text[:200]!r} has no host")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise BadRequest(f"not a valid URL: {text[:200]!r} (port {parsed.port} is out of range)")
    if parsed.userinfo:
        raise BadRequest("URLs with credentials (user:password@) are not fetched")
    return parsed.copy_with(fragment=None)


class UrlGuard:
    """Checks URLs (and every redirect) before any connection.

    `allow_private`: ALLOW_PRIVATE_URLS. `allow`: exact `(ip, port)` addresses allowed even when private (tests).
    `resolver`: the system resolver unless given (tests resolve made-up names).
    """

    def __init__(
        self,
        allow_private: bool = False,
        *,
        allow: Collection[tuple[str, int]] = (),
        resolver: Resolver | None = None,
    ) -> None:
        self.allow_private = allow_private
        self.allow = {(str(ipaddress.ip_address(ip)), int(port)) for ip, port in allow}
        self.resolver = resolver or system_resolver

    async def check(self, url: str | httpx.URL) -> Target:
        parsed = parse_url(str(url))
        host = parsed.raw_host.decode("ascii")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        literal = ip_literal(host)
        if literal is not None:
            addresses = [str(literal)]
        else:
            try:
                addresses = await self.resolver(host.rstrip("."), port)
            except (OSError, UnicodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise BadRequest(f"could not resolve the host {host!r} of {parsed}: {reason}") from exc
            if not addresses:
                raise BadRequest(f"could not resolve the host {host!r} of {parsed}: no addresses")
        checked = tuple(str(ipaddress.ip_address(a.split("%", 1)[0])) for a in addresses)
        for address in checked:
            self._check_address(parsed, host, address, port)
        return Target(parsed, host, port, checked)

    def _check_address(self, url: httpx.URL, host: str, address: str, port: int) -> None:
        if self.allow_private or (address, port) in self.allow:
            return
        kind = non_public(ipaddress.ip_address(address))
        if kind is None:
            return
        what = f"{address} is a {kind} address" if host.strip("[]") == address else f"{host} resolves to {address}"
        if host.strip("[]") != address:
            what += f", a {kind} address"
        raise Refused(f"refusing to fetch {url}: {what}; set ALLOW_PRIVATE_URLS=true to allow")
