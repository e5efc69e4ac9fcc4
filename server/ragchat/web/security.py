"""Browser-facing protections, as one ASGI middleware in front of every route:

- **Host allowlist** (DNS rebinding): a `Host` that does not parse (`parse_host`: user-info, a bad port, over
  300 characters) or is outside ALLOWED_HOSTS (+ loopback names + HOST) gets a JSON 400, before any route.
  The operators' probes (`GET`/`HEAD` of `/livez`, `/readyz`, `/metrics`: PROBES) are the exception: a
  Kubernetes probe or a scrape names the pod's IP, and these paths hold nothing a rebinding page could use
  (/metrics still wants its token). Their Host must still parse.
- **Cross-origin writes** (CSRF): a state-changing request whose `Origin` is not this server's (or a
  TRUSTED_ORIGINS entry), or, with no Origin, whose `Sec-Fetch-Site` says another site sent it, gets 403.
  This holds with or without a session cookie (with AUTH=off the ambient credential is being on loopback).
  Clients that are not browsers (the CLI, scripts with an API token) send neither header and pass.
- **JSON only**: a body sent to a JSON route must be `application/json` (415 otherwise), so a form or a
  `text/plain` post, which a browser sends cross-site without a preflight, never reaches a handler.
  Uploads are the one multipart route.
- **No NUL** in the URL (path or query): 400.
- **Security headers** on every response: CSP without inline script, `frame-ancestors 'none'`, nosniff,
  a referrer policy.

The headers, with the request's id (`X-Request-ID`: the client's when it sends a sane one, else a new one,
as in the error body and the log), are added by the `response_headers` hook, which sees every response,
errors included. Errors use the API's one body (server/ragchat/httpapi/http.py).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from ragchat.core.errors import BadHost, BadRequest, CrossOrigin, RagchatError, UnsupportedMediaType
from ragchat.httpapi.http import error_body, scope_request_id

UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
#: Paths a probe or a scraper reads by the pod's address: outside the Host allowlist (GET and HEAD only).
PROBES = frozenset({"/livez", "/readyz", "/metrics"})
#: Routes whose body is not JSON: (method, path prefix, accepted media types).
NON_JSON = [("POST", "/api/documents", ("multipart/form-data",))]

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; "
    "object-src 'none'; worker-src 'self'"
)
#: The API docs page (Redoc, served locally) renders in a web worker made from a blob. (The page's own workers,
#: pdf.js's for the document viewer, are files of the app's assets: `worker-src 'self'`.)
DOCS_CSP = CSP.replace("worker-src 'self'", "worker-src 'self' blob:")
HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
]


#: A Host header longer than this is refused (a DNS name is at most 253 characters, plus a port).
MAX_HOST_CHARS = 300
_LABELS = re.compile(r"(?:[a-z0-9_-]{1,63}\.)*[a-z0-9_-]{1,63}")
_PORT = re.compile(r"[0-9]{1,5}")


@dataclass(frozen=True)
class HostHeader:
    """A `Host` header that parsed: a lower-case DNS name or IP address (IPv6 without its brackets), and a port."""

    name: str
    port: int | None

    @property
    def netloc(self) -> str:
        """As it goes back into a URL: `example.com:8000`, `[::1]:8000`."""
        name = f"[{self.name}]" if ":" in self.name else self.name
        return name if self.port is None else f"{name}:{self.port}"


def parse_host(raw: str) -> HostHeader:
    """The one parser of the `Host` header (RFC 9110 7.2: `uri-host [ ":" port ]`, no user-info), strict: a
    name of DNS labels or an IPv4 address, or an IPv6 address in brackets; an optional port of 1-5 digits,
    1-65535. Anything else (`user@host`, `host:abc`, `host:99999`, a path, spaces, 10,000 characters) is
    BadHost, a JSON 400."""
    if not raw:
        raise BadHost("the request has no Host header")
    if len(raw) > MAX_HOST_CHARS:
        raise BadHost(f"the Host header is over {MAX_HOST_CHARS} characters")
    host = raw.lower()
    if "@" in host:
        raise BadHost("the Host header may not hold user information ('@')")
    if host.startswith("["):
        name, bracket, rest = host[1:].partition("]")
        try:
            ok = bool(bracket) and ipaddress.ip_address(name).version == 6
        except ValueError:
            ok = False
        if not ok:
            raise BadHost(f"the Host header {_shown(raw)} is not a bracketed IPv6 address")
    else:
        name, colon, port = host.partition(":")
        rest = colon + port
        if not _LABELS.fullmatch(name):
            raise BadHost(f"the Host header {_shown(raw)} is not a host name")
    if not rest:
        return HostHeader(name, None)
    port = rest[1:]
    if not rest.startswith(":") or not _PORT.fullmatch(port) or not 0 < int(port) <= 65535:
        raise BadHost(f"the Host header {_shown(raw)} has no valid port (1-65535)")
    return HostHeader(name, int(port))


def _shown(raw: str) -> str:
    return repr(raw[:80] + ("…" if len(raw) > 80 else ""))


def host_name(host: str) -> str:
    """`example.com:8000` → `example.com`; `[::1]:8000` → `::1`; BadHost when it does not parse."""
    return parse_host(host.strip()).name


def host_allowed(host: str, allowlist: list[str]) -> bool:
    """Does `host` parse and name a host of `allowlist` (`*` any; `*.example.org` its subdomains)?"""
    try:
        name = host_name(host)
    except BadHost:
        return False
    for allowed in allowlist:
        if allowed == "*" or allowed == name:
            return True
        if allowed.startswith("*.") and name.endswith(allowed[1:]):
            return True
    return False


def request_origin(scheme: str, headers: Mapping[str, str]) -> str:
    """`scheme://host[:port]` from the request's `Host`, re-parsed here (the middleware refused it already if it
    does not parse or is not allowed): what the server calls itself when no URL is configured."""
    return f"{scheme}://{parse_host(headers.get('host', '').strip()).netloc}"


class SecurityMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: list[str],
        trusted_origins: list[str],
    ) -> None:
        self.app = app
        self.allowed_hosts = [h.lower() for h in allowed_hosts]
        self.trusted = {o.rstrip("/").lower() for o in trusted_origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            if "\x00" in scope["path"] or b"%00" in scope["query_string"]:
                raise BadRequest("the URL contains a NUL character")
            self.check(scope["method"], scope["path"], headers)  # type: ignore[typeddict-item]
            # what this server is called in this request, validated: routes read it (OIDC's redirect_uri)
            scope.setdefault("state", {})["origin"] = request_origin(scope["scheme"], headers)
        except RagchatError as exc:
            await _error(send, exc, scope_request_id(scope))
            return
        await self.app(scope, receive, send)

    def check(self, method: str, path: str, headers: dict[str, str]) -> None:
        host = headers.get("host", "")
        name = host_name(host)  # BadHost (400) when it does not parse, whatever ALLOWED_HOSTS says
        if path in PROBES and method in ("GET", "HEAD"):
            return  # a probe by the pod's IP (above)
        if not host_allowed(host, self.allowed_hosts):
            raise BadHost(
                f"the Host header {_shown(name)} is not allowed: add it to ALLOWED_HOSTS if this server is "
                "meant to be reached by that name"
            )
        if method not in UNSAFE:
            return
        origin = headers.get("origin")
        if origin is not None:
            if not self.same_origin(origin, host):
                raise CrossOrigin(f"a request from {origin!r} may not change anything here (cross-origin)")
        elif headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            raise CrossOrigin("a request sent by another site may not change anything here (cross-origin)")
        self.check_media_type(method, path, headers)

    def same_origin(self, origin: str, host: str) -> bool:
        origin = origin.strip().rstrip("/").lower()
        if origin in self.trusted:
            return True
        if origin == "null":
            return False
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc == host.strip().lower()

    @staticmethod
    def check_media_type(method: str, path: str, headers: dict[str, str]) -> None:
        has_body = headers.get("content-length", "0") not in ("", "0") or "transfer-encoding" in headers
        media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if not has_body and not media:
            return
        for m, prefix, accepted in NON_JSON:
            if method == m and path.rstrip("/") == prefix:
                if media not in accepted:
                    raise UnsupportedMediaType(f"send this as {' or '.join(accepted)} (got {media or 'no type'})")
                return
        if path.startswith(("/api/", "/v1/")) and media != "application/json":
            raise UnsupportedMediaType(f"this route accepts only application/json (got {media or 'no type'})")


def _security_headers(path: str, rid: str) -> list[tuple[bytes, bytes]]:
    csp = DOCS_CSP if path.startswith("/schema") else CSP
    return [(b"content-security-policy", csp.encode()), *HEADERS, (b"x-request-id", rid.encode())]


def response_headers(allow: Mapping[str, str]) -> Callable[[Message, Scope], None]:
    """A `before_send` hook: the security headers and X-Request-ID on every response, errors included (they are
    sent outside the route's middleware), and a right `Allow` on OPTIONS answers. `allow`: path template →
    the route's methods (Litestar's own OPTIONS answer can miss some)."""

    def hook(message: Message, scope: Scope) -> None:
        if message["type"] != "http.response.start" or scope["type"] != "http":
            return
        extra = _security_headers(scope["path"], scope_request_id(scope))
        own: list[Any] = list(message.get("headers", []))
        if scope["method"] == "OPTIONS" and (methods := allow.get(str(scope.get("path_template", "")))):
            own = [h for h in own if bytes(h[0]).lower() != b"allow"] + [(b"allow", methods.encode())]
        present = {bytes(k).lower() for k, _ in own}
        message["headers"] = [*own, *(h for h in extra if h[0] not in present)]

    return hook


async def _error(send: Send, exc: RagchatError, rid: str) -> None:
    body = json.dumps(error_body(exc.status_code, exc.code, exc.message, rid)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    start: Any = {"type": "http.response.start", "status": exc.status_code, "headers": headers}
    await send(start)  # the security headers are added by `response_headers`, as on every response
    await send({"type": "http.response.body", "body": body, "more_body": False})
