"""OpenID Connect, the relying party's protocol side (no database): the provider's discovery document and keys,
the authorization request (state, nonce, PKCE S256), the code exchange, and the ID token's verification.

Every request to the provider is bounded by OIDC_TIMEOUT_S in total. A discovery failure is remembered for
`FAILURE_TTL_S`, so a provider that is down costs the login page one timeout, not one per visit. The keys are
fetched again once when an ID token names a key id they do not have (the provider rotated its keys).
ID tokens come from the token endpoint over the back channel, never from the browser; they are still checked in
full: signature (asymmetric algorithms only), issuer, audience (and `azp`), expiry, issue time and nonce.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from authlib.common.security import generate_token, is_secure_transport
from authlib.integrations.base_client import OAuthError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.errors import BadSignatureError, JoseError
from joserfc.jwk import Key, KeySet

from ragchat.core.errors import SsoFailed, SsoUnavailable
from ragchat.settings import OidcSettings

log = logging.getLogger(__name__)

ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
LEEWAY_S = 60  # clock skew allowed on exp / iat / nbf
DISCOVERY_TTL_S = 3600.0
FAILURE_TTL_S = 15.0
MAX_DOCUMENT_BYTES = 512 * 1024  # a discovery document, a key set, a token answer
MAX_ID_TOKEN_CHARS = 32 * 1024
MAX_KEYS = 50


@dataclass(frozen=True)
class Provider:
    """What the discovery document says (only the parts ragchat uses)."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None
    algorithms: tuple[str, ...]


@dataclass(frozen=True)
class Authorization:
    """A started sign-in: the URL to send the browser to, and the secrets to keep until the callback."""

    url: str
    state: str
    nonce: str
    code_verifier: str


@dataclass
class _Keys:
    keys: list[Key] = field(default_factory=list)
    fetched_at: float = 0.0


def _secure(url: object) -> bool:
    """https, or http to a loopback address (a provider on this machine; Authlib's own rule)."""
    return isinstance(url, str) and url.startswith(("https://", "http://")) and is_secure_transport(url)


def parse_discovery(doc: dict[str, Any], issuer: str) -> Provider:
    """The discovery document, checked: its issuer is the configured one, its endpoints are https URLs."""
    said = doc.get("issuer")
    if not isinstance(said, str) or said.rstrip("/") != issuer.rstrip("/"):
        raise SsoUnavailable(f"the provider's discovery document names the issuer {said!r}, not {issuer!r}")
    urls: dict[str, str] = {}
    for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        value = doc.get(name)
        if not _secure(value):
            raise SsoUnavailable(f"the provider's {name} is missing or not an https URL ({value!r})")
        urls[name] = str(value)
    userinfo = doc.get("userinfo_endpoint")
    offered = doc.get("id_token_signing_alg_values_supported") or ["RS256"]
    algorithms = tuple(a for a in ASYMMETRIC if isinstance(offered, list) and a in offered)
    if not algorithms:
        raise SsoUnavailable(f"the provider signs ID tokens only with {offered!r}; ragchat needs one of {ASYMMETRIC}")
    return Provider(
        issuer=said,
        authorization_endpoint=urls["authorization_endpoint"],
        token_endpoint=urls["token_endpoint"],
        jwks_uri=urls["jwks_uri"],
        userinfo_endpoint=str(userinfo) if _secure(userinfo) else None,
        algorithms=algorithms,
    )


def _b64_json(segment: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


def token_header(id_token: str) -> dict[str, Any]:
    """The JWS header of a compact JWT, unverified (to pick the algorithm and the key)."""
    parts = id_token.split(".")
    if len(parts) != 3 or len(id_token) > MAX_ID_TOKEN_CHARS:
        raise SsoFailed("the provider's ID token is not a signed JWT")
    try:
        header = _b64_json(parts[0])
    except ValueError:
        raise SsoFailed("the provider's ID token has an unreadable header") from None
    if not isinstance(header, dict):
        raise SsoFailed("the provider's ID token has an unreadable header")
    return header


def check_claims(claims: dict[str, Any], *, issuer: str, client_id: str, nonce: str, now: float) -> None:
    """The ID token's claims (OpenID Connect Core 3.1.3.7), each failure in words."""
    if claims.get("iss") != issuer:
        raise SsoFailed(f"the ID token was issued by {claims.get('iss')!r}, not by {issuer!r}")
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if client_id not in audiences:
        raise SsoFailed("the ID token was issued for another client (its audience is not this ragchat)")
    azp = claims.get("azp")
    if (len(audiences) > 1 or azp is not None) and azp != client_id:
        raise SsoFailed("the ID token was issued to another client (azp)")
    exp, iat, nbf = claims.get("exp"), claims.get("iat"), claims.get("nbf")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        raise SsoFailed("the ID token has no expiry (exp)")
    if exp <= now - LEEWAY_S:
        raise SsoFailed("the ID token has expired: sign in again")
    if not isinstance(iat, int | float) or isinstance(iat, bool) or iat > now + LEEWAY_S:
        raise SsoFailed("the ID token's issue time (iat) is missing or in the future")
    if isinstance(nbf, int | float) and nbf > now + LEEWAY_S:
        raise SsoFailed("the ID token is not valid yet (nbf)")
    got = claims.get("nonce")
    if not isinstance(got, str) or not hmac.compare_digest(got.encode(), nonce.encode()):
        raise SsoFailed("the ID token's nonce does not match this sign-in (a replayed or substituted token)")
    sub = claims.get("sub")
    if not isinstance(sub, str) or not 0 < len(sub) <= 255 or "\x00" in sub:
        raise SsoFailed("the ID token has no usable subject (sub)")


class OidcClient:
    """One identity provider, as OIDC_ISSUER and the client settings name it."""

    def __init__(self, settings: OidcSettings) -> None:
        self.settings = settings
        self.timeout_s = settings.oidc_timeout_s
        self._http: httpx.AsyncClient | None = None  # made at first use (most servers never sign in this way)
        self._provider: Provider | None = None
        self._provider_at = 0.0
        self._failure: tuple[str, float] | None = None
        self._keys = _Keys()
        self._lock = asyncio.Lock()

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self.timeout_s, follow_redirects=False, trust_env=False)
        return self._http

    @property
    def issuer(self) -> str:
        assert self.settings.oidc_issuer is not None
        return self.settings.oidc_issuer

    @property
    def client_id(self) -> str:
        assert self.settings.oidc_client_id is not None
        return self.settings.oidc_client_id

    # ---- the provider's documents -----------------------------------------------------------------------------
    async def get_json(self, url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        """GET a JSON object, bounded in time and size; SsoUnavailable with the reason otherwise."""
        try:
            async with asyncio.timeout(self.timeout_s):
                async with self.http.stream("GET", url, headers=headers) as response:
                    body = b""
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > MAX_DOCUMENT_BYTES:
                            raise SsoUnavailable(f"{url} answered more than {MAX_DOCUMENT_BYTES} bytes")
                    status = response.status_code
        except TimeoutError:
            raise SsoUnavailable(f"{url} did not answer within {self.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise SsoUnavailable(f"{url} is unreachable ({type(exc).__name__}: {exc})") from None
        if status != 200:
            raise SsoUnavailable(f"{url} answered HTTP {status}")
        try:
            doc = json.loads(body)
        except ValueError:
            raise SsoUnavailable(f"{url} did not answer JSON") from None
        if not isinstance(doc, dict):
            raise SsoUnavailable(f"{url} did not answer a JSON object")
        return doc

    async def provider(self) -> Provider:
        """The discovery document (cached for an hour; a failure is remembered for FAILURE_TTL_S)."""
        now = time.monotonic()
        if self._provider is not None and now - self._provider_at < DISCOVERY_TTL_S:
            return self._provider
        if self._failure is not None and now - self._failure[1] < FAILURE_TTL_S:
            raise SsoUnavailable(self._failure[0])
        async with self._lock:  # one discovery at a time; the others wait for its answer
            now = time.monotonic()
            if self._provider is not None and now - self._provider_at < DISCOVERY_TTL_S:
                return self._provider
            if self._failure is not None and now - self._failure[1] < FAILURE_TTL_S:
                raise SsoUnavailable(self._failure[0])
            url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
            try:
                provider = parse_discovery(await self.get_json(url), self.issuer)
            except SsoUnavailable as exc:
                if self._provider is not None:  # keep the last good one while the provider is away
                    log.warning("OIDC discovery failed, using the previous document: %s", exc.message)
                    return self._provider
                self._failure = (exc.message, time.monotonic())
                log.warning("OIDC discovery failed: %s", exc.message)
                raise
            self._provider, self._provider_at, self._failure = provider, time.monotonic(), None
            return provider

    async def _fetch_keys(self, provider: Provider) -> list[Key]:
        doc = await self.get_json(provider.jwks_uri)
        raw = doc.get("keys")
        if not isinstance(raw, list):
            raise SsoUnavailable(f"{provider.jwks_uri} is not a JSON Web Key Set")
        keys: list[Key] = []
        for item in raw[:MAX_KEYS]:
            if not isinstance(item, dict) or item.get("use", "sig") != "sig" or item.get("kty") == "oct":
                continue
            try:
                keys.append(KeySet.import_key_set({"keys": [item]}).keys[0])  # type: ignore[list-item]
            except (JoseError, ValueError, TypeError, KeyError):
                log.info("OIDC: skipped a key the provider publishes that cannot be read: %s", item.get("kid"))
        self._keys = _Keys(keys, time.monotonic())
        return keys

    async def keys_for(self, provider: Provider, kid: object, alg: str) -> list[Key]:
        """The provider's keys that may have signed a token with this `kid`; fetched again once for a kid not
        seen yet (key rotation)."""
        fresh = not self._keys.keys
        found = _candidates(self._keys.keys or await self._fetch_keys(provider), kid, alg)
        if not found and not fresh:
            found = _candidates(await self._fetch_keys(provider), kid, alg)
        return found

    # ---- the flow -----------------------------------------------------------------------------------------------
    def authorization(self, provider: Provider, redirect_uri: str) -> Authorization:
        state, nonce, verifier = generate_token(43), generate_token(43), generate_token(64)
        url = prepare_grant_uri(
            provider.authorization_endpoint,
            client_id=self.client_id,
            response_type="code",
            redirect_uri=redirect_uri,
            scope=self.settings.oidc_scopes,
            state=state,
            nonce=nonce,
            code_challenge=create_s256_code_challenge(verifier),
            code_challenge_method="S256",
        )
        return Authorization(url=url, state=state, nonce=nonce, code_verifier=verifier)

    def _oauth(self) -> AsyncOAuth2Client:
        """A token endpoint client: client secret basic, or a public client (PKCE only)."""
        secret = self.settings.oidc_secret
        return AsyncOAuth2Client(
            client_id=self.client_id,
            client_secret=secret,
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
            timeout=self.timeout_s,
            trust_env=False,
        )

    async def exchange(self, provider: Provider, *, code: str, redirect_uri: str, code_verifier: str) -> dict[str, Any]:
        """The code for tokens at the token endpoint (client secret basic, or a public client with PKCE only)."""
        client = self._oauth()
        try:
            async with asyncio.timeout(self.timeout_s):
                token = await client.fetch_token(
                    provider.token_endpoint,
                    grant_type="authorization_code",
                    code=code,
                    redirect_uri=redirect_uri,
                    code_verifier=code_verifier,
                )
        except OAuthError as exc:
            said = f"{exc.error}: {exc.description}" if exc.description else str(exc.error)
            raise SsoFailed(f"the identity provider refused the sign-in code ({said})") from None
        except TimeoutError:
            raise SsoUnavailable(
                f"the identity provider's token endpoint did not answer within {self.timeout_s:g} s"
            ) from None
        except Exception as exc:  # transport errors (httpx2), an answer that is not JSON: the provider's fault
            raise SsoUnavailable(f"the identity provider's token endpoint failed ({type(exc).__name__})") from None
        finally:
            await client.aclose()  # pyright: ignore[reportAttributeAccessIssue]  (an httpx2 AsyncClient)
        if not isinstance(token.get("id_token"), str):
            raise SsoFailed("the identity provider answered no ID token (is 'openid' in OIDC_SCOPES?)")
        return dict(token)

    async def verify_id_token(self, provider: Provider, id_token: str, *, nonce: str) -> dict[str, Any]:
        header = token_header(id_token)
        alg = header.get("alg")
        if alg not in provider.algorithms:
            raise SsoFailed(f"the ID token is signed with {alg!r}; the provider announces {list(provider.algorithms)}")
        assert isinstance(alg, str)
        claims: dict[str, Any] | None = None
        for key in await self.keys_for(provider, header.get("kid"), alg):
            try:
                claims = jwt.decode(id_token, key, algorithms=[alg]).claims
                break
            except BadSignatureError:
                continue
            except (JoseError, ValueError, TypeError):
                raise SsoFailed("the ID token cannot be read") from None
        if claims is None:
            raise SsoFailed("the ID token's signature does not verify with the provider's published keys")
        check_claims(claims, issuer=provider.issuer, client_id=self.client_id, nonce=nonce, now=time.time())
        return claims

    async def userinfo(self, provider: Provider, access_token: object, subject: str) -> dict[str, Any]:
        """The userinfo endpoint's claims (when the ID token lacks the email or groups), or {} on any failure."""
        if provider.userinfo_endpoint is None or not isinstance(access_token, str):
            return {}
        try:
            info = await self.get_json(provider.userinfo_endpoint, {"Authorization": f"Bearer {access_token}"})
        except SsoUnavailable as exc:
            log.warning("OIDC userinfo failed: %s", exc.message)
            return {}
        return info if info.get("sub") == subject else {}

    async def recheck(
        self, provider: Provider, *, subject: str, refresh_token: str | None, access_token: str | None
    ) -> Recheck:
        """Does the provider still accept this user? A refresh grant with the refresh token it issued (its
        `invalid_grant` is a no), else the userinfo endpoint with the access token (401/403 or another subject is
        a no). Timeouts, transport errors and other answers are "not asked" (the caller retries)."""
        if refresh_token:
            client = self._oauth()
            try:
                async with asyncio.timeout(self.timeout_s):
                    token = await client.refresh_token(provider.token_endpoint, refresh_token=refresh_token)
            except OAuthError as exc:
                said = f"{exc.error}: {exc.description}" if exc.description else str(exc.error)
                if exc.error == "invalid_grant":
                    return Recheck(refused=f"the identity provider refused to renew the sign-in ({said[:300]})")
                return Recheck(unavailable=f"the token endpoint answered {said[:300]}")
            except TimeoutError:
                return Recheck(unavailable=f"the token endpoint did not answer within {self.timeout_s:g} s")
            except Exception as exc:  # transport errors, an answer that is not JSON
                return Recheck(unavailable=f"the token endpoint failed ({type(exc).__name__})")
            finally:
                await client.aclose()  # pyright: ignore[reportAttributeAccessIssue]
            return Recheck(tokens=dict(token))
        if not access_token or provider.userinfo_endpoint is None:
            return Recheck(unavailable="the provider issued no refresh token and has no userinfo endpoint")
        try:
            async with asyncio.timeout(self.timeout_s):
                answer = await self.http.get(
                    provider.userinfo_endpoint, headers={"Authorization": f"Bearer {access_token}"}
                )
        except (TimeoutError, httpx.HTTPError) as exc:
            return Recheck(unavailable=f"the userinfo endpoint failed ({type(exc).__name__})")
        if answer.status_code in (401, 403):
            return Recheck(
                refused=f"the identity provider no longer accepts the sign-in (userinfo HTTP {answer.status_code})"
            )
        try:
            info = answer.json() if answer.status_code == 200 and len(answer.content) <= MAX_DOCUMENT_BYTES else None
        except ValueError:
            info = None
        if not isinstance(info, dict):
            return Recheck(
                unavailable=f"the userinfo endpoint answered HTTP {answer.status_code} without a JSON object"
            )
        if info.get("sub") != subject:
            return Recheck(refused="the identity provider's userinfo names another subject")
        return Recheck(tokens={})


@dataclass(frozen=True)
class Recheck:
    """The provider's answer about a signed-in user: yes (with any tokens it renewed), refused (why), or not asked
    (why: it was down or answered something else)."""

    tokens: dict[str, Any] | None = None
    refused: str | None = None
    unavailable: str | None = None


_KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


def _candidates(keys: list[Key], kid: object, alg: str) -> list[Key]:
    kty = _KEY_TYPES.get(alg[:2])
    usable = [k for k in keys if k.key_type == kty and k.get("alg") in (None, alg)]
    if isinstance(kid, str):
        return [k for k in usable if k.kid == kid]
    return usable  # no kid in the header: try each key of the right type
