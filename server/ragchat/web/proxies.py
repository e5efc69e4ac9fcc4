"""The client's address behind reverse proxies: `X-Forwarded-For` / `X-Forwarded-Proto` from trusted peers only.

uvicorn's own handling is off (`ragchat serve` passes `proxy_headers=False`): its default trusts 127.0.0.1, so a
local client could pick any address for the per-IP login limit. Here TRUSTED_PROXIES (alias
FORWARDED_ALLOW_IPS; addresses or networks, comma-separated) names the proxies, and nobody is trusted by default.
When the connecting peer is one of them, the client is the first address in `X-Forwarded-For`, read from the
right, that is not itself a trusted proxy; the scheme is the last `X-Forwarded-Proto`. Anyone else's headers are
ignored: the peer's own address is the client.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from litestar.types import ASGIApp, Receive, Scope, Send

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(entries: Iterable[str]) -> list[Network]:
    """`10.0.0.1`, `10.0.0.0/8`, `::1`, or `*` (everyone: only when nothing else can reach the server)."""
    networks: list[Network] = []
    for entry in entries:
        entry = entry.strip()
        if entry == "*":
            networks += [ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")]
        elif entry:
            networks.append(ipaddress.ip_network(entry, strict=False))
    return networks


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip().strip('"')
    if text.startswith("["):  # [v6]:port
        text = text[1:].split("]", 1)[0]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address | None, networks: list[Network]) -> bool:
    return address is not None and any(address in network for network in networks)


def forwarded_client(peer: str, forwarded_for: list[str], networks: list[Network]) -> str:
    """The client's address: `peer` unless it is a trusted proxy, else walked back through `forwarded_for`."""
    if not _trusted(_address(peer), networks):
        return peer
    chain = [part for header in forwarded_for for part in header.split(",") if part.strip()]
    client = peer
    for hop in reversed(chain):
        address = _address(hop)
        if address is None:  # garbage from the hop before: the last trusted proxy is all we know
            return client
        client = str(address)
        if not _trusted(address, networks):
            return client
    return client


class ProxyHeadersMiddleware:
    def __init__(self, app: ASGIApp, *, trusted: list[str]) -> None:
        self.app = app
        self.networks = parse_networks(trusted)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.networks and scope["type"] in ("http", "websocket") and scope.get("client"):
            host, port = scope["client"]  # type: ignore[misc]
            if _trusted(_address(host), self.networks):
                headers = scope["headers"]
                forwarded = [v.decode("latin-1") for k, v in headers if k == b"x-forwarded-for"]
                client = forwarded_client(host, forwarded, self.networks)
                protos = [
                    v.decode("latin-1").split(",")[-1].strip().lower() for k, v in headers if k == b"x-forwarded-proto"
                ]
                scope = dict(scope)  # type: ignore[assignment]
                scope["client"] = (client, port if client == host else 0)  # type: ignore[typeddict-item]
                if protos and protos[-1] in ("http", "https", "ws", "wss"):
                    proto = protos[-1]
                    if scope["type"] == "websocket":
                        proto = {"http": "ws", "https": "wss"}.get(proto, proto)
                    scope["scheme"] = proto  # type: ignore[typeddict-item]
        await self.app(scope, receive, send)
