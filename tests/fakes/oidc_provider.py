"""A scriptable OpenID Connect provider over real HTTP, for the ID tokens `oidc-provider-mock` will not make:
another client's audience, an expired token, a bad signature, a wrong nonce, rotated keys.

It serves discovery, a key set, an authorization endpoint that approves at once (redirecting to the client with a
code and the state), a userinfo endpoint (401 once `revoke()` disabled the user), and a token endpoint that checks
the PKCE verifier (S256) and the client's credentials, then answers an ID token built from `claims` with `tamper`
applied (and an access token, no refresh token). `rotate()` replaces the signing key (a new kid).
Fakes only at the identity provider's edge: ragchat talks to it as to any provider.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from joserfc import jwt
from joserfc.jwk import RSAKey


def _new_key() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": secrets.token_hex(6), "use": "sig", "alg": "RS256"})


@dataclass
class Issued:
    code: str
    nonce: str | None
    challenge: str | None
    method: str | None
    redirect_uri: str
    client_id: str


@dataclass
class FakeProvider:
    """`claims`: the ID token's identity claims (sub, email…). `tamper(claims) -> claims` changes the token's
    claims last (aud, exp, nonce…); `sign_with` another key makes a bad signature."""

    url: str = ""
    claims: dict[str, Any] = field(default_factory=lambda: {"sub": "fake-1"})
    tamper: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    sign_with: RSAKey | None = None
    signer_kid: bool = False  # the header names `sign_with`'s own kid (one the key set does not publish)
    token_delay_s: float = 0.0  # the token endpoint answers this late (a provider that hangs mid-sign-in)
    discovery_issuer: str | None = None  # the discovery document names this issuer instead of its own URL
    key: RSAKey = field(default_factory=_new_key)
    old_keys: list[RSAKey] = field(default_factory=list)
    codes: dict[str, Issued] = field(default_factory=dict)
    token_requests: list[dict[str, Any]] = field(default_factory=list)
    jwks_fetches: int = 0
    closing: threading.Event = field(default_factory=threading.Event)  # ends a delay when the fake stops
    access_tokens: set[str] = field(default_factory=set)  # live ones: /userinfo answers them, 401 otherwise
    userinfo_requests: int = 0

    def revoke(self) -> None:
        """The user is disabled here: every access token issued so far is refused by /userinfo."""
        self.access_tokens.clear()

    def rotate(self) -> None:
        """A new signing key; the key set publishes only it from now on."""
        self.old_keys.append(self.key)
        self.key = _new_key()

    def id_token(self, issued: Issued) -> str:
        now = int(time.time())
        claims = {"iss": self.url, "aud": issued.client_id, "iat": now, "exp": now + 300, **self.claims}
        if issued.nonce is not None:
            claims["nonce"] = issued.nonce
        if self.tamper is not None:
            claims = self.tamper(claims)
        key = self.sign_with or self.key
        kid = key.kid if self.signer_kid else self.key.kid
        return jwt.encode({"alg": "RS256", "kid": kid}, claims, key)


def _handler(provider: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path == "/.well-known/openid-configuration":
                self._json(
                    200,
                    {
                        "issuer": provider.discovery_issuer or provider.url,
                        "authorization_endpoint": provider.url + "/authorize",
                        "token_endpoint": provider.url + "/token",
                        "jwks_uri": provider.url + "/jwks",
                        "userinfo_endpoint": provider.url + "/userinfo",
                        "id_token_signing_alg_values_supported": ["RS256"],
                        "response_types_supported": ["code"],
                        "subject_types_supported": ["public"],
                    },
                )
            elif parts.path == "/jwks":
                provider.jwks_fetches += 1
                self._json(200, {"keys": [provider.key.as_dict(private=False)]})
            elif parts.path == "/authorize":
                code = secrets.token_urlsafe(16)
                provider.codes[code] = Issued(
                    code,
                    query.get("nonce"),
                    query.get("code_challenge"),
                    query.get("code_challenge_method"),
                    query["redirect_uri"],
                    query["client_id"],
                )
                target = query["redirect_uri"] + "?" + urlencode({"code": code, "state": query.get("state", "")})
                self.send_response(302)
                self.send_header("location", target)
                self.send_header("content-length", "0")
                self.end_headers()
            elif parts.path == "/userinfo":
                provider.userinfo_requests += 1
                bearer = (self.headers.get("authorization") or "").removeprefix("Bearer ")
                if bearer in provider.access_tokens:
                    self._json(200, {"sub": provider.claims.get("sub")})
                else:
                    self._json(401, {"error": "invalid_token"})
            else:
                self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            provider.token_requests.append({**form, "authorization": self.headers.get("authorization")})
            provider.closing.wait(provider.token_delay_s)
            if urlsplit(self.path).path != "/token":
                self._json(404, {"error": "not_found"})
                return
            issued = provider.codes.pop(form.get("code", ""), None)
            if issued is None or form.get("redirect_uri") != issued.redirect_uri:
                self._json(400, {"error": "invalid_grant", "error_description": "unknown or used code"})
                return
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if issued.method != "S256" or digest != issued.challenge:
                self._json(400, {"error": "invalid_grant", "error_description": "PKCE verification failed"})
                return
            access = secrets.token_urlsafe(16)
            provider.access_tokens.add(access)
            self._json(200, {"access_token": access, "token_type": "Bearer", "id_token": provider.id_token(issued)})

    return Handler


@contextmanager
def fake_provider(**options: Any) -> Iterator[FakeProvider]:
    provider = FakeProvider(**options)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(provider))
    provider.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        provider.closing.set()
        server.shutdown()
        server.server_close()
