"""Single sign-on through an OpenID Connect provider: start a sign-in, finish it, and sign the user in with the
same session a password login makes.

A sign-in under way is a row of `oidc_flows` keyed by the SHA-256 of its `state`, holding the nonce, the PKCE
verifier and the SHA-256 of a random cookie set on the browser that started it. The callback deletes the row
whatever happens next (a state works once), and needs the same browser's cookie (a callback URL sent to someone
else does nothing) within FLOW_TTL_S.

Who signs in (docs/ACCOUNTS.md, "Single sign-on"): the user linked to the token's (issuer, subject); else, with
OIDC_LINK_BY_EMAIL, the account whose username is the token's email when the provider vouches for it with the JSON
`true` and it parses as an address (`normal_email`: ASCII only, lower-cased; never a bare name like `admin`), and
that account is not linked to another subject of this provider (the link is stored); else, with OIDC_AUTO_CREATE,
a new user. The sign-in's refresh token is kept (server-side) for `ProviderRecheck`.
A disabled user cannot sign in this way either. With OIDC_ADMIN_GROUP set, the groups claim decides whether the
user is an admin (the last active admin is never demoted this way).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from dataclasses import dataclass
from typing import Any

import psycopg

from ragchat.accounts import oidc_repository as orepo
from ragchat.accounts import repository as repo
from ragchat.accounts.oidc import OidcClient, Provider
from ragchat.accounts.oidc_recheck import ProviderRecheck, token_text
from ragchat.accounts.service import USERNAME_RE, AccountService, LoggedIn, digest
from ragchat.core.errors import SsoFailed, SsoRefused, SsoUnavailable
from ragchat.db.pool import Conn, Pool
from ragchat.db.ratelimit import RateLimiter
from ragchat.settings import AccountSettings, OidcSettings

log = logging.getLogger(__name__)

FLOW_TTL_S = 600.0
#: The password hash of an account made by single sign-on: no password matches it (an admin can set one).
NO_PASSWORD = "!sso"
MAX_PARAM = 4096
_COOKIE_RE = re.compile(r"^[A-Za-z0-9_-]{32,64}$")
_ERROR_CODE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # an OAuth error code (shown without a bound flow)


@dataclass(frozen=True)
class Started:
    url: str  # the provider's authorization endpoint, with the request
    browser_secret: str  # the flow cookie's value


@dataclass(frozen=True)
class Identity:
    issuer: str
    subject: str
    email: str | None  # only when the provider says it is verified
    preferred_username: str | None
    groups: list[str]


def _h(value: str) -> bytes:
    return hashlib.sha256(value.encode()).digest()


def claim_at(claims: dict[str, Any], path: str) -> Any:
    """A claim by name, or by a dotted path into nested objects (`realm_access.roles`)."""
    if path in claims:
        return claims[path]
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def groups_of(claims: dict[str, Any], path: str) -> list[str]:
    value = claim_at(claims, path)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)][:1000]
    return []


#: An address as ragchat links it: ASCII only, `local@domain` with a dotted domain (RFC 5322's dot-atom local part).
EMAIL_RE = re.compile(
    r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
)
MAX_EMAIL = 254


def normal_email(value: object) -> str | None:
    """The one normalisation of an address (docs/ACCOUNTS.md, "Single sign-on"): ASCII letters lower-cased,
    nothing else changed; an address with any non-ASCII character (`\u212aate@…`, the Kelvin sign, which
    Unicode case folding turns into `kate@…`), spaces, or no `@domain` is None: it is never matched."""
    if not isinstance(value, str) or not value.isascii() or len(value) > MAX_EMAIL:
        return None
    email = value.lower()
    return email if EMAIL_RE.fullmatch(email) else None


def verified_email(claims: dict[str, Any]) -> str | None:
    """The address the provider vouches for: `email_verified` is the JSON boolean true (not 1, not "true",
    not missing) and the address parses (`normal_email`)."""
    return normal_email(claims.get("email")) if claims.get("email_verified") is True else None


def identity_of(claims: dict[str, Any], issuer: str, groups_claim: str) -> Identity:
    preferred = claims.get("preferred_username")
    return Identity(
        issuer=issuer,
        subject=str(claims["sub"]),
        email=verified_email(claims),
        preferred_username=preferred if isinstance(preferred, str) and "\x00" not in preferred else None,
        groups=groups_of(claims, groups_claim),
    )


def in_group(groups: list[str], group: str) -> bool:
    """Keycloak sends group paths ("/admins"): a leading slash does not matter."""
    return any(g == group or g.lstrip("/") == group.lstrip("/") for g in groups)


def username_candidates(identity: Identity) -> list[str]:
    """A new user's name: the verified email when it is a valid username; else the provider's username without
    an '@' (so it can never equal someone's email and be matched by a later sign-in); else a name from the
    subject."""
    names: list[str] = []
    if identity.email and USERNAME_RE.match(identity.email):
        names.append(identity.email)
    preferred = (identity.preferred_username or "").strip().lower().replace("@", "-")
    if preferred and USERNAME_RE.match(preferred):
        names += [preferred, *(f"{preferred[:60]}-{n}" for n in range(2, 6))]
    names.append("sso-" + hashlib.sha256(f"{identity.issuer}\n{identity.subject}".encode()).hexdigest()[:12])
    return names


class OidcService:
    def __init__(
        self,
        pool: Pool,
        settings: OidcSettings,
        limiter: RateLimiter,
        client: OidcClient | None = None,
        accounts: AccountService | None = None,
        *,
        account: AccountSettings,
        login_per_min: int,
    ) -> None:
        self.pool = pool
        self.accounts = accounts  # records sign-ins in the audit log (same transaction as the session)
        self.settings = settings
        self.account = account  # AUTH and the sessions' lifetime
        self.login_per_min = login_per_min  # RATE_LOGIN_PER_MIN, per client address
        self.limiter = limiter
        self.client = client or OidcClient(settings)
        self.recheck = ProviderRecheck(pool, self.client, settings, accounts)
        if accounts is not None and settings.oidc_enabled:
            accounts.provider_check = self.recheck.check  # sessions and API tokens of SSO users, re-checked

    async def close(self) -> None:
        await self.client.close()

    @property
    def enabled(self) -> bool:
        return self.account.auth == "on" and self.settings.oidc_enabled

    @property
    def label(self) -> str:
        return f"Sign in with {self.settings.oidc_display_name}"

    async def unavailable_reason(self) -> str | None:
        """None when the provider's discovery document is readable, else why not (bounded by OIDC_TIMEOUT_S)."""
        try:
            await self.client.provider()
        except SsoUnavailable as exc:
            return exc.message
        return None

    # ---- start --------------------------------------------------------------------------------------------------
    async def start(self, redirect_uri: str, *, ip: str, browser_secret: str | None) -> Started:
        """A new sign-in: its flow row, and the provider's URL. The browser keeps its flow cookie when it has
        one, so two tabs signing in at once both finish."""
        await self.limiter.hit(f"login:ip:{ip}", self.login_per_min, what="login attempts")
        provider = await self.client.provider()
        auth = self.client.authorization(provider, redirect_uri)
        if not browser_secret or not _COOKIE_RE.match(browser_secret):
            browser_secret = secrets.token_urlsafe(32)
        async with self.pool.connection() as conn:
            await orepo.delete_expired_flows(conn)
            await orepo.insert_flow(
                conn, _h(auth.state), _h(browser_secret), auth.nonce, auth.code_verifier, redirect_uri, FLOW_TTL_S
            )
        return Started(auth.url, browser_secret)

    # ---- finish -------------------------------------------------------------------------------------------------
    async def finish(
        self,
        *,
        state: str | None,
        code: str | None,
        error: str | None,
        error_description: str | None,
        browser_secret: str | None,
        ip: str,
        user_agent: str,
    ) -> LoggedIn:
        if not state or len(state) > MAX_PARAM:
            if error and _ERROR_CODE_RE.match(error):  # some providers send a refusal without the state
                raise SsoRefused(f"the identity provider did not sign you in: {error}")
            raise SsoFailed("this sign-in has no state: start again from the login page")
        async with self.pool.connection() as conn:
            flow = await orepo.take_flow(conn, _h(state))
        if flow is None:
            raise SsoFailed("this sign-in was already used, or was never started here: start again from the login page")
        if not flow["live"]:
            raise SsoFailed(f"this sign-in took longer than {FLOW_TTL_S / 60:g} minutes: start again")
        if not browser_secret or not hmac.compare_digest(bytes(flow["browser_hash"]), _h(browser_secret)):
            raise SsoFailed("this sign-in was started in another browser: start again from the login page")
        if error:
            said = f" ({error_description[:300]})" if error_description else ""
            raise SsoRefused(f"the identity provider did not sign you in: {error[:100]}{said}")
        if not code or len(code) > MAX_PARAM:
            raise SsoFailed("the identity provider sent no sign-in code")
        provider = await self.client.provider()
        tokens = await self.client.exchange(
            provider, code=code, redirect_uri=flow["redirect_uri"], code_verifier=flow["code_verifier"]
        )
        claims = await self.client.verify_id_token(provider, tokens["id_token"], nonce=flow["nonce"])
        identity = await self._identity(provider, claims, tokens.get("access_token"))
        return await self._sign_in(identity, tokens, ip=ip, user_agent=user_agent)

    async def _identity(self, provider: Provider, claims: dict[str, Any], access_token: object) -> Identity:
        identity = identity_of(claims, provider.issuer, self.settings.oidc_groups_claim)
        wants_groups = self.settings.oidc_admin_group is not None and not identity.groups
        if identity.email is None or wants_groups:  # some providers put these only in userinfo
            info = await self.client.userinfo(provider, access_token, identity.subject)
            if info:
                merged = {**info, **{k: v for k, v in claims.items() if k in ("sub", "iss")}}
                more = identity_of(merged, provider.issuer, self.settings.oidc_groups_claim)
                identity = Identity(
                    identity.issuer,
                    identity.subject,
                    identity.email or more.email,
                    identity.preferred_username or more.preferred_username,
                    identity.groups or more.groups,
                )
        return identity

    async def _sign_in(self, identity: Identity, tokens: dict[str, Any], *, ip: str, user_agent: str) -> LoggedIn:
        s = self.settings
        async with self.pool.connection() as conn, conn.transaction():
            key = f"ragchat:oidc:{identity.issuer}\n{identity.subject}"
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))
            user = await orepo.linked_user(conn, identity.issuer, identity.subject)
            if user is None and identity.email and s.oidc_link_by_email:
                user = await orepo.account_by_email(conn, identity.email, identity.issuer)
            if user is None:
                if not s.oidc_auto_create:
                    who = identity.email or identity.preferred_username or identity.subject
                    raise SsoRefused(
                        f"no ragchat account matches {who!r}: ask an admin to create one (or to set OIDC_AUTO_CREATE)"
                    )
                user = await self._create(conn, identity)
            if user["disabled"]:
                raise SsoRefused("this account is disabled: ask an admin")
            await orepo.link(
                conn,
                identity.issuer,
                identity.subject,
                user["id"],
                identity.email,
                refresh_token=token_text(tokens.get("refresh_token")),
                access_token=token_text(tokens.get("access_token")),
            )
            if s.oidc_admin_group:
                user = await self._sync_admin(conn, user, in_group(identity.groups, s.oidc_admin_group))
            token = secrets.token_urlsafe(32)
            ttl = self.account.session_ttl_hours * 3600
            await repo.insert_session(conn, digest(token), user["id"], ttl, user_agent, ip)
            if self.accounts is not None:
                await self.accounts.record_sign_in(conn, user, ip=ip, method="oidc")
        log.info("OIDC sign-in: user %s (%s) as %s", user["username"], user["id"], identity.subject)
        return LoggedIn(dict(user), token)

    async def _create(self, conn: Conn, identity: Identity) -> dict[str, Any]:
        admin = bool(self.settings.oidc_admin_group) and in_group(identity.groups, self.settings.oidc_admin_group or "")
        for name in username_candidates(identity):
            if await orepo.name_taken(conn, name):
                continue
            try:
                async with conn.transaction():  # a savepoint: a name taken meanwhile tries the next one
                    return await repo.insert_user(conn, name, NO_PASSWORD, admin)
            except psycopg.errors.UniqueViolation:
                continue
        raise SsoRefused("no free username for this account: ask an admin to create it")

    async def _sync_admin(self, conn: Conn, user: dict[str, Any], admin: bool) -> dict[str, Any]:
        if bool(user["is_admin"]) == admin:
            return user
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('ragchat:admins'))")
        if not admin and await repo.other_active_admins(conn, user["id"]) == 0:
            log.warning("OIDC: %s is not in the admin group but is the last admin: kept", user["username"])
            return user
        return await repo.update_user(conn, user["id"], disabled=None, is_admin=admin) or user
