"""Accounts as one object: first-run setup, login, sessions, personal API tokens, and the admin's user list.

Sessions and tokens are random secrets handed to the client once; only their SHA-256 is stored (they are
high-entropy, so a fast hash is the right one; passwords get argon2). `authenticate` turns a secret into a
Principal; `still_valid` lets a long SSE stream notice a logout, a revoked token or a disabled user. A user
signed in through an identity provider is re-checked there every OIDC_RECHECK_S (`provider_check`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg

from ragchat.accounts import passwords
from ragchat.accounts import repository as repo
from ragchat.accounts.setup import SetupTokenRequired, setup_notice, setup_token
from ragchat.accounts.throttle import LoginThrottle
from ragchat.core.audit import Actor, AuditAction, AuditWriter
from ragchat.core.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    InvalidCredentials,
    NotFound,
    RateLimited,
    SetupDone,
    Unauthorized,
)
from ragchat.core.ownership import DocumentCounts
from ragchat.core.principal import Principal, local_principal
from ragchat.db.pool import Pool
from ragchat.db.ratelimit import RateLimiter
from ragchat.settings import AccountSettings, OidcSettings, ServerSettings

USERNAME_RE = re.compile(r"^[A-Za-z0-9._@-]{1,64}$")
TOKEN_PREFIX = "rc_"
TOKEN_NAME_MAX = 100
TOKEN_MAX_DAYS = 3650
WRONG = "wrong username or password"


@dataclass(frozen=True)
class LoggedIn:
    user: dict[str, Any]
    session_token: str


def digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def clean_username(username: str) -> str:
    username = username.strip()
    if not USERNAME_RE.match(username):
        raise BadRequest("a username is 1-64 letters, digits, '.', '_', '-' or '@'")
    return username.lower()


def token_expiry(expires_in_days: int | None, expires_at: datetime | None) -> datetime | None:
    """A token's expiry from either form (not both); None: it never expires."""
    if expires_in_days is not None and expires_at is not None:
        raise BadRequest("give a token expires_in_days or expires_at, not both")
    if expires_in_days is not None:
        if not 1 <= expires_in_days <= TOKEN_MAX_DAYS:
            raise BadRequest(f"expires_in_days is 1-{TOKEN_MAX_DAYS}")
        return datetime.now(UTC) + timedelta(days=expires_in_days)
    if expires_at is not None:
        if expires_at.tzinfo is None:
            expires_at = expires_at.replace(tzinfo=UTC)
        now = datetime.now(UTC)
        if not now < expires_at <= now + timedelta(days=TOKEN_MAX_DAYS):
            raise BadRequest(f"expires_at must be in the future and at most {TOKEN_MAX_DAYS} days away")
        return expires_at
    return None


def principal_of(row: dict[str, Any], via: str, credential: str | None) -> Principal:
    return Principal(row["id"], row["username"], bool(row["is_admin"]), via, credential)  # type: ignore[arg-type]


class AccountService:
    def __init__(
        self,
        pool: Pool,
        settings: AccountSettings,
        limiter: RateLimiter,
        audit: AuditWriter,
        *,
        sso: OidcSettings,
        server: ServerSettings,
        login_per_min: int,
        documents: DocumentCounts,
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.sso = sso  # single sign-on's group: LOCAL_LOGIN_ENABLED, the button's name, the re-check interval
        self.server = server  # where the server listens (the setup link) and COOKIE_SECURE
        self.login_per_min = login_per_min  # RATE_LOGIN_PER_MIN, per client address
        self.limiter = limiter
        self.audit = audit
        self.throttle = LoginThrottle(pool, settings)
        self.documents = documents  # the documents domain counts each user's documents for the user list
        #: single sign-on's re-check at the identity provider, `(user_id, username) -> still accepted`; set by
        #: OidcService when OIDC_ISSUER is set (sessions and API tokens of SSO users are re-checked through it)
        self.provider_check: Callable[[UUID, str], Awaitable[bool]] | None = None
        #: what `setup` asks for (None: nothing); made once per process unless RAGCHAT_SETUP_TOKEN sets it
        self.setup_token = setup_token(settings, server, local_login=sso.local_login_enabled)

    @property
    def auth_enabled(self) -> bool:
        return self.settings.auth == "on"

    @property
    def recheck_s(self) -> float | None:
        return self.sso.oidc_recheck_s if self.provider_check is not None else None

    @property
    def session_ttl_s(self) -> float:
        return self.settings.session_ttl_hours * 3600

    async def setup_required(self) -> bool:
        async with self.pool.connection() as conn:
            return not await repo.any_account(conn)

    async def setup_notice(self) -> tuple[str, str | None] | None:
        """What a start says while the first admin is still to be made and a token guards it, and the link."""
        if not self.setup_token or not await self.setup_required():
            return None
        return setup_notice(self.settings, self.server, self.setup_token)

    # ---- first run, login, logout ---------------------------------------------------------------------------
    async def setup(
        self, username: str, password: str, *, ip: str, user_agent: str, token: str | None = None
    ) -> LoggedIn:
        """Create the first account (an admin) and log it in; 409 once any account exists; 403 without the
        setup token when one guards it (`self.setup_token`)."""
        await self.limiter.hit(f"login:ip:{ip}", self.login_per_min, what="login attempts")
        if self.setup_token and not hmac.compare_digest((token or "").encode(), self.setup_token.encode()):
            if not await self.setup_required():
                raise SetupDone("the admin account exists already: log in")
            raise SetupTokenRequired.for_token(token)
        username = clean_username(username)
        hashed = await passwords.hash_password(password)
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext('ragchat:setup'))")
            if await repo.any_account(conn):
                raise SetupDone("the admin account exists already: log in")
            user = await repo.claim_local(conn, username, hashed) or await repo.insert_user(
                conn, username, hashed, True
            )
            token = await self._new_session(conn, user["id"], ip, user_agent)
            await self.audit.record(
                conn, AuditAction.SETUP, _actor(user), target_type="user", target_id=user["id"], client=ip
            )
        return LoggedIn(user, token)

    async def login(self, username: str, password: str, *, ip: str, user_agent: str) -> LoggedIn:
        """The same message, and the same argon2 work, for an unknown user as for a wrong password."""
        await self.limiter.hit(f"login:ip:{ip}", self.login_per_min, what="login attempts")
        name = username.strip()
        valid = bool(USERNAME_RE.match(name))
        # a name no account can have (NUL, lone surrogates...) is counted under its digest: never sent as text
        who = name.lower()[:64] if valid else "?" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
        try:
            await self.throttle.before(who, ip)  # 429 while this address must wait; the name's slow-down
        except RateLimited:
            await self.record_sign_in_failure(name if valid else "?", ip=ip, reason="throttled")
            raise
        async with self.pool.connection() as conn:
            row = await repo.user_by_name(conn, name[:64]) if valid else None
        ok = await passwords.verify_password(row["password_hash"] if row else None, password)
        if not ok or row is None or row["disabled"] or row["refused"]:
            # a disabled account's right password is answered as a wrong one (the audit log has the truth)
            reason = "unknown_user" if row is None else "wrong_password" if not ok else "disabled"
            await self.throttle.failed(who, ip)
            await self.record_sign_in_failure(name, ip=ip, reason=reason, user_id=row["id"] if ok and row else None)
            raise InvalidCredentials(WRONG)
        await self.throttle.succeeded(who, ip)
        async with self.pool.connection() as conn:
            if passwords.needs_rehash(row["password_hash"]):
                await repo.set_password(conn, row["id"], await passwords.hash_password(password))
            token = await self._new_session(conn, row["id"], ip, user_agent)
            await repo.delete_expired_sessions(conn)
            await self.record_sign_in(conn, row, ip=ip)
        return LoggedIn({k: v for k, v in row.items() if k not in ("password_hash", "refused")}, token)

    async def _new_session(self, conn: Any, user_id: UUID, ip: str, user_agent: str) -> str:
        token = secrets.token_urlsafe(32)
        await repo.insert_session(conn, digest(token), user_id, self.session_ttl_s, user_agent, ip)
        return token

    # ---- the audit trail of sign-ins (any sign-in method records through these) -------------------------------
    async def record_sign_in(self, conn: Any, user: dict[str, Any], *, ip: str, method: str = "password") -> None:
        """A successful sign-in of `user` (a users row), on the connection that creates its session."""
        await self.audit.record(
            conn,
            AuditAction.SIGN_IN,
            _actor(user),
            target_type="user",
            target_id=user["id"],
            details={"method": method},
            client=ip,
        )

    async def record_sign_in_failure(
        self, username: str, *, ip: str, reason: str, method: str = "password", user_id: UUID | None = None
    ) -> None:
        """A refused sign-in, in a transaction of its own (nothing else is written): the actor is unknown, the
        name is what was typed, the target the account it names when there is one."""
        async with self.pool.connection() as conn:
            await self.audit.record(
                conn,
                AuditAction.SIGN_IN_FAILED,
                Actor(None, username[:64] or "?"),
                target_type="user" if user_id else None,
                target_id=user_id,
                details={"method": method, "reason": reason},
                client=ip,
            )

    async def logout(self, session_token: str) -> None:
        async with self.pool.connection() as conn:
            row = await repo.session_user(conn, digest(session_token), None)
            await repo.delete_session(conn, digest(session_token))
            if row is not None:
                await self.audit.record(conn, AuditAction.SIGN_OUT, _actor(row))

    async def logout_everywhere(self, principal: Principal, *, revoke_tokens: bool = True) -> None:
        """Every session ends; with `revoke_tokens` (the default) every API token is revoked too."""
        async with self.pool.connection() as conn, conn.transaction():
            ended = await repo.delete_sessions(conn, principal.user_id)
            revoked = await repo.revoke_tokens(conn, principal.user_id) if revoke_tokens else 0
            await self.audit.record(
                conn,
                AuditAction.SIGN_OUT_EVERYWHERE,
                principal,
                details={"sessions": ended, "tokens_revoked": revoked},
            )

    # ---- authentication -------------------------------------------------------------------------------------
    async def from_session(self, session_token: str) -> Principal | None:
        token_hash = digest(session_token)
        async with self.pool.connection() as conn:
            row = await repo.session_user(conn, token_hash, self.recheck_s)
            if row is None:
                return None
            if row["stale"]:
                await repo.touch_session(conn, token_hash, self.session_ttl_s)
        if row["oidc_due"] and self.provider_check and not await self.provider_check(row["id"], row["username"]):
            return None  # the identity provider refused the user just now
        return principal_of(row, "session", token_hash.hex())

    async def from_token(self, token: str) -> Principal | None:
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        async with self.pool.connection() as conn:
            row = await repo.token_user(conn, digest(token), self.recheck_s)
            if row is None:
                return None
            if row["expired"]:
                expired = row["expires_at"].astimezone(UTC)
                raise Unauthorized(f"this API token expired at {expired:%Y-%m-%d %H:%M} UTC: make a new one")
            if row["stale"]:
                await repo.touch_token(conn, row["token_id"])
        if row["oidc_due"] and self.provider_check and not await self.provider_check(row["id"], row["username"]):
            raise Unauthorized("the identity provider no longer accepts this user: sign in through it again")
        return principal_of(row, "token", str(row["token_id"]))

    async def still_valid(self, principal: Principal) -> bool:
        if principal.via == "local":
            return True
        async with self.pool.connection() as conn:
            return await repo.credential_valid(conn, principal.user_id, principal.via, principal.credential)

    def local(self) -> Principal:
        return local_principal()

    # ---- the signed-in user ---------------------------------------------------------------------------------
    async def me(self, principal: Principal) -> dict[str, Any]:
        async with self.pool.connection() as conn:
            row = await repo.user_by_id(conn, principal.user_id)
        if row is None:
            raise NotFound("user not found")
        return {k: v for k, v in row.items() if k != "password_hash"}

    async def change_password(self, principal: Principal, current: str, new: str) -> None:
        """Other sessions end and every API token is revoked; the session or token this request came with stays."""
        async with self.pool.connection() as conn:
            row = await repo.user_by_id(conn, principal.user_id)
        if row is None or not await passwords.verify_password(row["password_hash"], current):
            raise InvalidCredentials("the current password is wrong")
        hashed = await passwords.hash_password(new)
        async with self.pool.connection() as conn:
            await repo.set_password(conn, principal.user_id, hashed)
            keep = bytes.fromhex(principal.credential) if principal.via == "session" and principal.credential else None
            await repo.delete_sessions(conn, principal.user_id, keep=keep)
            keep_token = UUID(principal.credential) if principal.via == "token" and principal.credential else None
            revoked = await repo.revoke_tokens(conn, principal.user_id, keep=keep_token)
            await self.audit.record(conn, AuditAction.PASSWORD_CHANGE, principal, details={"tokens_revoked": revoked})

    async def directory(self) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            return await repo.directory(conn)

    # ---- personal API tokens --------------------------------------------------------------------------------
    async def create_token(
        self,
        principal: Principal,
        name: str,
        *,
        expires_in_days: int | None = None,
        expires_at: datetime | None = None,
    ) -> dict[str, Any]:
        name = " ".join(name.replace("\x00", "").split())
        if not name or len(name) > TOKEN_NAME_MAX:
            raise BadRequest(f"a token needs a name of 1-{TOKEN_NAME_MAX} characters")
        expiry = token_expiry(expires_in_days, expires_at)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        async with self.pool.connection() as conn:
            row = await repo.insert_token(conn, principal.user_id, name, token[:10], digest(token), expiry)
            details = {"name": name, "prefix": row["prefix"], "expires_at": expiry.isoformat() if expiry else None}
            await self.audit.record(
                conn, AuditAction.TOKEN_CREATE, principal, target_type="token", target_id=row["id"], details=details
            )
        return {**row, "token": token}

    async def list_tokens(self, principal: Principal) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            return await repo.list_tokens(conn, principal.user_id)

    async def revoke_token(self, principal: Principal, token_id: UUID) -> None:
        async with self.pool.connection() as conn:
            if not await repo.revoke_token(conn, principal.user_id, token_id):
                raise NotFound(f"token {token_id} not found")
            await self.audit.record(conn, AuditAction.TOKEN_REVOKE, principal, target_type="token", target_id=token_id)

    # ---- admin ----------------------------------------------------------------------------------------------
    async def ensure_service_user(self, user_id: UUID, name: str) -> None:
        """A user row with no login (an evaluation dataset's owner), created once."""
        async with self.pool.connection() as conn:
            await repo.ensure_service_user(conn, user_id, name)

    async def names(self, user_ids: Collection[UUID]) -> dict[UUID, str]:
        """core/ownership.py `UserNames`: how other domains name a user (an owner, a member)."""
        if not user_ids:
            return {}
        async with self.pool.connection() as conn:
            return await repo.display_names(conn, user_ids)

    async def is_active(self, user_id: UUID) -> bool:
        """core/ownership.py `UserActive`: may this user be given something (a collection membership)?"""
        async with self.pool.connection() as conn:
            return await repo.is_active(conn, user_id)

    async def list_users(self) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            rows = await repo.list_users(conn)
        counts = await self.documents([r["id"] for r in rows])
        return [{**r, "documents": counts.get(r["id"], 0)} for r in rows]

    async def add_user(
        self, username: str, password: str, *, is_admin: bool = False, admin: Principal | None = None
    ) -> dict[str, Any]:
        """`admin`: who adds it (None: the server's own CLI)."""
        username = clean_username(username)
        hashed = await passwords.hash_password(password)
        async with self.pool.connection() as conn:
            try:
                row = await repo.insert_user(conn, username, hashed, is_admin)
            except psycopg.errors.UniqueViolation as exc:
                raise Conflict(f"the username {username!r} is taken") from exc
            details = {"username": username, "is_admin": is_admin}
            await self.audit.record(
                conn, AuditAction.USER_CREATE, admin, target_type="user", target_id=row["id"], details=details
            )
            return row

    async def update_user(
        self, admin: Principal, user_id: UUID, *, disabled: bool | None = None, is_admin: bool | None = None
    ) -> dict[str, Any]:
        """Disable/enable or promote/demote; disabling ends the user's sessions and revokes their API tokens."""
        demoting = disabled is True or is_admin is False
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext('ragchat:admins'))")
            if demoting and user_id == admin.user_id:
                raise Forbidden("you cannot disable or demote yourself (ask another admin)")
            if demoting and await repo.other_active_admins(conn, user_id) == 0:
                raise Forbidden("this is the last admin: make someone else an admin first")
            row = await repo.update_user(conn, user_id, disabled=disabled, is_admin=is_admin)
            if row is None:
                raise NotFound(f"user {user_id} not found")
            if disabled:
                await repo.delete_sessions(conn, user_id)
                await repo.revoke_tokens(conn, user_id)
            await _record_user_update(self.audit, conn, admin, row, disabled=disabled, is_admin=is_admin)
        return row

    async def reset_password(self, user_id: UUID, password: str, *, admin: Principal | None = None) -> None:
        """An admin's reset (after a compromise): every session ends and every API token is revoked. `admin`: who
        resets it (None: the server's own CLI)."""
        hashed = await passwords.hash_password(password)
        async with self.pool.connection() as conn, conn.transaction():
            if not await repo.set_password(conn, user_id, hashed):
                raise NotFound(f"user {user_id} not found")
            await repo.delete_sessions(conn, user_id)
            revoked = await repo.revoke_tokens(conn, user_id)
            await self.audit.record(
                conn,
                AuditAction.USER_PASSWORD_RESET,
                admin,
                target_type="user",
                target_id=user_id,
                details={"tokens_revoked": revoked},
            )

    async def delete_user(self, admin: Principal, user_id: UUID) -> None:
        """The user goes with their documents, threads, collections, sessions and tokens."""
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext('ragchat:admins'))")
            if user_id == admin.user_id:
                raise Forbidden("you cannot delete yourself")
            if await repo.other_active_admins(conn, user_id) == 0:
                raise Forbidden("this is the last admin")
            gone = await repo.user_by_id(conn, user_id)
            if not await repo.delete_user(conn, user_id):
                raise NotFound(f"user {user_id} not found")
            details = {"username": gone["username"] if gone else None}
            await self.audit.record(
                conn, AuditAction.USER_DELETE, admin, target_type="user", target_id=user_id, details=details
            )

    async def find_user(self, username: str) -> dict[str, Any]:
        async with self.pool.connection() as conn:
            row = await repo.user_by_name(conn, username)
        if row is None:
            raise NotFound(f"no user named {username!r}")
        return {k: v for k, v in row.items() if k not in ("password_hash", "refused")}


def _actor(user: dict[str, Any]) -> Actor:
    return Actor(user["id"], user.get("username") or user.get("name") or "?")


async def _record_user_update(
    audit: AuditWriter,
    conn: Any,
    admin: Principal,
    user: dict[str, Any],
    *,
    disabled: bool | None,
    is_admin: bool | None,
) -> None:
    """One row per change an admin asked for: disable or enable, and the role."""
    target = {"target_type": "user", "target_id": user["id"]}
    name = {"username": user.get("username")}
    if disabled is not None:
        action = AuditAction.USER_DISABLE if disabled else AuditAction.USER_ENABLE
        await audit.record(conn, action, admin, **target, details=name)
    if is_admin is not None:
        await audit.record(conn, AuditAction.USER_ROLE_CHANGE, admin, **target, details={**name, "is_admin": is_admin})
