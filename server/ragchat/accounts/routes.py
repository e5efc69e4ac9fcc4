"""Auth, account, token and admin routes (the contract is docs/ACCOUNTS.md), and request authentication."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.datastructures import Cookie

from ragchat.accounts.schemas import (
    CreatedToken,
    Credentials,
    Directory,
    NewAccount,
    NewToken,
    NewUser,
    PasswordChange,
    PasswordReset,
    SessionInfo,
    SignedIn,
    Token,
    TokenList,
    User,
    UserList,
    UserPatch,
)
from ragchat.accounts.service import AccountService, LoggedIn
from ragchat.core.errors import Forbidden, Unauthorized
from ragchat.core.principal import Principal
from ragchat.core.schemas import Person
from ragchat.httpapi.http import error_responses

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


def cookie_secure(request: Request[Any, Any, Any], accounts: AccountService) -> bool:
    setting = accounts.server.cookie_secure
    return setting == "true" or (setting == "auto" and request.url.scheme == "https")


def session_cookie(request: Request[Any, Any, Any], accounts: AccountService, session_token: str) -> Cookie:
    """The session cookie a sign-in sets (password or single sign-on)."""
    return Cookie(
        key=SESSION_COOKIE,
        value=session_token,
        httponly=True,
        samesite="lax",
        secure=cookie_secure(request, accounts),
        path="/",
        max_age=int(accounts.session_ttl_s),
    )


def local_login_allowed(accounts: AccountService) -> None:
    if not accounts.sso.local_login_enabled:
        name = accounts.sso.oidc_display_name if accounts.sso.oidc_enabled else "single sign-on"
        raise Forbidden(f"sign-in with a username and password is turned off here: sign in with {name}")


def _logged_in(
    request: Request[Any, Any, Any], accounts: AccountService, result: LoggedIn, status: int
) -> Response[SignedIn]:
    cookie = session_cookie(request, accounts, result.session_token)
    return Response(SignedIn(user=User.of(result.user)), status_code=status, cookies=[cookie])


#: Sent by the logout routes: the session cookie, expired.
CLEARED = [Cookie(key=SESSION_COOKIE, value="", max_age=0, path="/", httponly=True, samesite="lax")]


class AuthController(Controller):
    path = "/api/auth"

    @get("/session")
    async def session(self, request: Request[Any, Any, Any], accounts: AccountService) -> SessionInfo:
        """Public: is auth on, must the first account be created, and who is signed in (null if nobody)."""
        user = None
        if not accounts.auth_enabled:
            user = User.of(await accounts.me(accounts.local()))
        else:
            try:
                user = User.of(await accounts.me(await authenticate(request, accounts)))
            except Unauthorized:
                user = None
        # AUTH=off needs no account; with local login off the first admin comes through single sign-on
        setup = accounts.auth_enabled and accounts.sso.local_login_enabled and await accounts.setup_required()
        return SessionInfo(auth=accounts.settings.auth, setup_required=setup, user=user)

    @post("/setup", status_code=201, responses=error_responses(403, 409, 429))
    async def setup(
        self, request: Request[Any, Any, Any], data: NewAccount, accounts: AccountService
    ) -> Response[SignedIn]:
        """Public, once: create the first account (an admin) and sign it in."""
        local_login_allowed(accounts)
        ua = request.headers.get("user-agent", "")
        result = await accounts.setup(
            data.username, data.password, ip=client_ip(request), user_agent=ua, token=data.setup_token
        )
        return _logged_in(request, accounts, result, 201)

    @post("/login", status_code=200, responses=error_responses(401, 403, 429))
    async def login(
        self, request: Request[Any, Any, Any], data: Credentials, accounts: AccountService
    ) -> Response[SignedIn]:
        local_login_allowed(accounts)
        ua = request.headers.get("user-agent", "")
        result = await accounts.login(data.username, data.password, ip=client_ip(request), user_agent=ua)
        return _logged_in(request, accounts, result, 200)

    @post("/logout", status_code=204, response_cookies=CLEARED)
    async def logout(self, request: Request[Any, Any, Any], accounts: AccountService) -> None:
        """Ends this session (idempotent: no session, nothing to end)."""
        session = request.cookies.get(SESSION_COOKIE)
        if session:
            await accounts.logout(session)

    @post("/logout-all", status_code=204, response_cookies=CLEARED, responses=error_responses(400))
    async def logout_all(self, accounts: AccountService, principal: Principal, revoke_tokens: bool = True) -> None:
        """Every session ends (this one too); every API token is revoked too unless `?revoke_tokens=false`."""
        await accounts.logout_everywhere(principal, revoke_tokens=revoke_tokens)

    @post("/password", status_code=204)
    async def change_password(self, data: PasswordChange, accounts: AccountService, principal: Principal) -> None:
        await accounts.change_password(principal, data.current_password, data.new_password)

    @get("/tokens")
    async def list_tokens(self, accounts: AccountService, principal: Principal) -> TokenList:
        return TokenList(tokens=[Token.of(t) for t in await accounts.list_tokens(principal)])

    @post("/tokens", status_code=201, responses=error_responses(400))
    async def create_token(self, data: NewToken, accounts: AccountService, principal: Principal) -> CreatedToken:
        """The token is in this response only; the server keeps its hash."""
        created = await accounts.create_token(
            principal, data.name, expires_in_days=data.expires_in_days, expires_at=data.expires_at
        )
        return CreatedToken.model_validate(created, from_attributes=False)

    @delete("/tokens/{token_id:uuid}", status_code=204, responses=error_responses(404))
    async def revoke_token(self, token_id: UUID, accounts: AccountService, principal: Principal) -> None:
        await accounts.revoke_token(principal, token_id)


@get("/api/users")
async def user_directory(accounts: AccountService, principal: Principal) -> Directory:
    """Active users (id, username), to choose whom to share a collection with."""
    return Directory(users=[Person.of(u["id"], u["username"]) for u in await accounts.directory()])


class AdminUserController(Controller):
    path = "/api/admin/users"

    @get("/")
    async def list_users(self, accounts: AccountService, principal: Principal) -> UserList:
        require_admin(principal)
        return UserList(users=[User.of(u) for u in await accounts.list_users()])

    @post("/", status_code=201, responses=error_responses(409))
    async def add_user(self, data: NewUser, accounts: AccountService, principal: Principal) -> User:
        require_admin(principal)
        return User.of(await accounts.add_user(data.username, data.password, is_admin=data.is_admin, admin=principal))

    @patch("/{user_id:uuid}", responses=error_responses(404, 409))
    async def update_user(self, user_id: UUID, data: UserPatch, accounts: AccountService, principal: Principal) -> User:
        require_admin(principal)
        return User.of(await accounts.update_user(principal, user_id, disabled=data.disabled, is_admin=data.is_admin))

    @post("/{user_id:uuid}/password", status_code=204, responses=error_responses(404))
    async def reset_password(
        self, user_id: UUID, data: PasswordReset, accounts: AccountService, principal: Principal
    ) -> None:
        require_admin(principal)
        await accounts.reset_password(user_id, data.password, admin=principal)

    @delete("/{user_id:uuid}", status_code=204, responses=error_responses(404, 409))
    async def delete_user(self, user_id: UUID, accounts: AccountService, principal: Principal) -> None:
        require_admin(principal)
        await accounts.delete_user(principal, user_id)


def account_handlers() -> list[Any]:
    return [AuthController, user_directory, AdminUserController]
