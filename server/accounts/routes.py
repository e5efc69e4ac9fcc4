"""Auth, account, token and admin routes (the contract is docs/ACCOUNTS.md), and request authentication."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.datastructures import Cookie
from pydantic import BaseModel, Field

from server.accounts.service import AccountService, LoggedIn
from server.core.errors import Forbidden, Unauthorized
from server.core.principal import Principal

SESSION_COOKIE = "ragchat_session"


def client_ip(request: Request[Any, Any, Any]) -> str:
    return request.client.host if request.client else "unknown"


async def authenticate(request: Request[Any, Any, Any], accounts: AccountService) -> Principal:
    """The caller: an API token (`Authorization: Bearer`), else the session cookie, else (AUTH=off) local."""
    if not accounts.auth_enabled:
        return accounts.local()
    header = request.headers.get("authorization")
    if header:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("the Authorization header must be 'Bearer <API token>'")
        principal = await accounts.from_token(token.strip())
        if principal is None:
            raise Unauthorized("this API token is not valid (revoked, unknown, or its user is disabled)")
        return principal
    session = request.cookies.get(SESSION_COOKIE)
    if session:
        principal = await accounts.from_session(session)
        if principal is None:
            raise Unauthorized("your session has ended: log in again")
        return principal
    raise Unauthorized("log in first, or send a personal API token (Authorization: Bearer …)")


def require_admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise Forbidden("only an admin may do this")


def user_json(row: dict[str, Any]) -> dict[str, Any]:
    out = {
        "id": str(row["id"]),
        "username": row["username"],
        "is_admin": bool(row["is_admin"]),
        "disabled": bool(row["disabled"]),
        "created_at": row["created_at"].isoformat(),
    }
    if "last_seen_at" in row:
        out["last_seen_at"] = row["last_seen_at"].isoformat() if row["last_seen_at"] else None
    if "documents" in row:
        out["documents"] = int(row["documents"])
    return out


def token_json(row: dict[str, Any]) -> dict[str, Any]:
    out = {
        "id": str(row["id"]),
        "name": row["name"],
        "prefix": row["prefix"],
        "created_at": row["created_at"].isoformat(),
        "last_used_at": row["last_used_at"].isoformat() if row["last_used_at"] else None,
    }
    if "token" in row:
        out["token"] = row["token"]
    return out


class Credentials(BaseModel):
    username: str = Field(max_length=200)
    password: str = Field(max_length=4096)


class PasswordChange(BaseModel):
    current_password: str = Field(max_length=4096)
    new_password: str = Field(max_length=4096)


class NewToken(BaseModel):
    name: str = Field(max_length=1000)


class NewUser(BaseModel):
    username: str = Field(max_length=200)
    password: str = Field(max_length=4096)
    is_admin: bool = False


class UserPatch(BaseModel):
    disabled: bool | None = None
    is_admin: bool | None = None


class PasswordReset(BaseModel):
    password: str = Field(max_length=4096)


def _logged_in(
    request: Request[Any, Any, Any], accounts: AccountService, result: LoggedIn, status: int
) -> Response[Any]:
    secure = accounts.settings.cookie_secure == "true" or (
        accounts.settings.cookie_secure == "auto" and request.url.scheme == "https"
    )
    cookie = Cookie(
        key=SESSION_COOKIE,
        value=result.session_token,
        httponly=True,
        samesite="lax",
        secure=secure,
        path="/",
        max_age=int(accounts.session_ttl_s),
    )
    return Response({"user": user_json(result.user)}, status_code=status, cookies=[cookie])


def _cleared(status: int = 204) -> Response[None]:
    response: Response[None] = Response(None, status_code=status)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


class AuthController(Controller):
    path = "/api/auth"

    @get("/session")
    async def session(self, request: Request[Any, Any, Any], accounts: AccountService) -> dict[str, Any]:
        """Public: is auth on, must the first account be created, and who is signed in (null if nobody)."""
        user = None
        if not accounts.auth_enabled:
            user = user_json(await accounts.me(accounts.local()))
        else:
            try:
                user = user_json(await accounts.me(await authenticate(request, accounts)))
            except Unauthorized:
                user = None
        setup = accounts.auth_enabled and await accounts.setup_required()  # AUTH=off needs no account
        return {"auth": accounts.settings.auth, "setup_required": setup, "user": user}

    @post("/setup", status_code=201)
    async def setup(
        self, request: Request[Any, Any, Any], data: Credentials, accounts: AccountService
    ) -> Response[Any]:
        """Public, once: create the first account (an admin) and sign it in."""
        ua = request.headers.get("user-agent", "")
        result = await accounts.setup(data.username, data.password, ip=client_ip(request), user_agent=ua)
        return _logged_in(request, accounts, result, 201)

    @post("/login", status_code=200)
    async def login(
        self, request: Request[Any, Any, Any], data: Credentials, accounts: AccountService
    ) -> Response[Any]:
        ua = request.headers.get("user-agent", "")
        result = await accounts.login(data.username, data.password, ip=client_ip(request), user_agent=ua)
        return _logged_in(request, accounts, result, 200)

    @post("/logout", status_code=204)
    async def logout(self, request: Request[Any, Any, Any], accounts: AccountService) -> Response[None]:
        """Ends this session (idempotent: no session, nothing to end)."""
        session = request.cookies.get(SESSION_COOKIE)
        if session:
            await accounts.logout(session)
        return _cleared()

    @post("/logout-all", status_code=204)
    async def logout_all(self, accounts: AccountService, principal: Principal) -> Response[None]:
        await accounts.logout_everywhere(principal)
        return _cleared()

    @post("/password", status_code=204)
    async def change_password(self, data: PasswordChange, accounts: AccountService, principal: Principal) -> None:
        await accounts.change_password(principal, data.current_password, data.new_password)

    @get("/tokens")
    async def list_tokens(self, accounts: AccountService, principal: Principal) -> dict[str, Any]:
        return {"tokens": [token_json(t) for t in await accounts.list_tokens(principal)]}

    @post("/tokens", status_code=201)
    async def create_token(self, data: NewToken, accounts: AccountService, principal: Principal) -> dict[str, Any]:
        """The token is in this response only; the server keeps its hash."""
        return token_json(await accounts.create_token(principal, data.name))

    @delete("/tokens/{token_id:uuid}", status_code=204)
    async def revoke_token(self, token_id: UUID, accounts: AccountService, principal: Principal) -> None:
        await accounts.revoke_token(principal, token_id)


@get("/api/users")
async def user_directory(accounts: AccountService, principal: Principal) -> dict[str, Any]:
    """Active users (id, username), to choose whom to share a collection with."""
    return {"users": [{"id": str(u["id"]), "username": u["username"]} for u in await accounts.directory()]}


class AdminUserController(Controller):
    path = "/api/admin/users"

    @get("/")
    async def list_users(self, accounts: AccountService, principal: Principal) -> dict[str, Any]:
        require_admin(principal)
        return {"users": [user_json(u) for u in await accounts.list_users()]}

    @post("/", status_code=201)
    async def add_user(self, data: NewUser, accounts: AccountService, principal: Principal) -> dict[str, Any]:
        require_admin(principal)
        return user_json(await accounts.add_user(data.username, data.password, is_admin=data.is_admin))

    @patch("/{user_id:uuid}")
    async def update_user(
        self, user_id: UUID, data: UserPatch, accounts: AccountService, principal: Principal
    ) -> dict[str, Any]:
        require_admin(principal)
        return user_json(await accounts.update_user(principal, user_id, disabled=data.disabled, is_admin=data.is_admin))

    @post("/{user_id:uuid}/password", status_code=204)
    async def reset_password(
        self, user_id: UUID, data: PasswordReset, accounts: AccountService, principal: Principal
    ) -> None:
        require_admin(principal)
        await accounts.reset_password(user_id, data.password)

    @delete("/{user_id:uuid}", status_code=204)
    async def delete_user(self, user_id: UUID, accounts: AccountService, principal: Principal) -> None:
        require_admin(principal)
        await accounts.delete_user(principal, user_id)


def account_handlers() -> list[Any]:
    return [AuthController, user_directory, AdminUserController]
