"""Single sign-on routes: the login page's configuration, the redirect to the provider, and its callback.

The callback is a top-level GET the provider's page sends the browser to (a cross-site navigation: the
SameSite=Lax cookies come with it, and nothing here needs the Origin check of state-changing requests). It
answers a redirect to `/` in every case: signed in, or with the reason it failed in a short-lived HttpOnly
cookie that the login page's `GET /api/auth/oidc/config` reads once (not in the URL, where anyone could write
a message for the login page to show).
"""

from __future__ import annotations

import base64
import logging
from typing import Annotated, Any

from litestar import Controller, Request, Response, get
from litestar.datastructures import Cookie
from litestar.params import Parameter
from litestar.response import Redirect
from pydantic import BaseModel, Field

from ragchat.accounts.oidc_service import FLOW_TTL_S, OidcService
from ragchat.accounts.routes import client_ip, cookie_secure, session_cookie
from ragchat.accounts.service import AccountService
from ragchat.core.errors import BadHost, NotFound, RagchatError, SsoFailed
from ragchat.httpapi.http import error_responses

log = logging.getLogger(__name__)

FLOW_COOKIE = "ragchat_sso"
ERROR_COOKIE = "ragchat_sso_error"
ERROR_MAX = 600
FLOW_PATH = "/api/auth/oidc"
CALLBACK = "/api/auth/oidc/callback"


class SsoConfig(BaseModel):
    """What the login page shows: the single sign-on button (and whether it works now), the password form."""

    sso: bool = Field(description="single sign-on is configured (OIDC_ISSUER) and accounts are on")
    label: str | None = Field(default=None, description='the button\'s text: "Sign in with <OIDC_DISPLAY_NAME>"')
    unavailable: str | None = Field(default=None, description="why single sign-on does not work now (provider down)")
    local_login: bool = Field(description="usernames and passwords sign in (LOCAL_LOGIN_ENABLED)")
    error: str | None = Field(default=None, description="why this browser's last single sign-on failed (said once)")


def _flow_cookie(
    request: Request[Any, Any, Any], accounts: AccountService, value: str, max_age: int, key: str = FLOW_COOKIE
) -> Cookie:
    return Cookie(
        key=key,
        value=value,
        httponly=True,
        samesite="lax",
        secure=cookie_secure(request, accounts),
        path=FLOW_PATH,
        max_age=max_age,
    )


def encode_error(message: str) -> str:
    return base64.urlsafe_b64encode(message[:ERROR_MAX].encode()).decode().rstrip("=")


def decode_error(value: str | None) -> str | None:
    if not value or len(value) > 2 * ERROR_MAX:
        return None
    try:
        return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
    except ValueError:
        return None


def _failed(request: Request[Any, Any, Any], accounts: AccountService, exc: RagchatError) -> Redirect:
    """Back to the login page, which asks why (the error cookie). The flow cookie stays (until it expires): another
    tab's sign-in may still need it."""
    log.info("single sign-on failed (%s): %s", exc.code, exc.message)
    cookie = _flow_cookie(request, accounts, encode_error(exc.message), 120, key=ERROR_COOKIE)
    return Redirect("/", status_code=303, cookies=[cookie])


def _origin(request: Request[Any, Any, Any]) -> str:
    """This server's `scheme://host[:port]` as the security middleware parsed and allowed it (web/security.py:
    the one Host parser); never the raw header."""
    origin = request.scope.get("state", {}).get("origin")
    if not isinstance(origin, str):
        raise BadHost("this request's Host header was not checked: set OIDC_REDIRECT_URL")
    return origin


class OidcController(Controller):
    path = "/api/auth/oidc"

    @get("/config")
    async def config(
        self, request: Request[Any, Any, Any], oidc: OidcService, accounts: AccountService
    ) -> Response[SsoConfig]:
        """Public: the login page's single sign-on button and password form (the provider is asked, within
        OIDC_TIMEOUT_S, whether it answers), and why this browser's last sign-in failed (then forgotten)."""
        local = oidc.settings.local_login_enabled
        raw = request.cookies.get(ERROR_COOKIE)
        cookies = [_flow_cookie(request, accounts, "", 0, key=ERROR_COOKIE)] if raw is not None else []
        if not oidc.enabled:
            return Response(SsoConfig(sso=False, local_login=local), cookies=cookies)
        body = SsoConfig(
            sso=True,
            label=oidc.label,
            unavailable=await oidc.unavailable_reason(),
            local_login=local,
            error=decode_error(raw),
        )
        return Response(body, cookies=cookies)

    @get("/login", status_code=303, responses=error_responses(400, 404))
    async def login(self, request: Request[Any, Any, Any], oidc: OidcService, accounts: AccountService) -> Redirect:
        """Public: starts a sign-in (state, nonce, PKCE) and sends the browser to the identity provider."""
        if not oidc.enabled:
            raise NotFound("single sign-on is not configured (OIDC_ISSUER)")
        redirect_uri = oidc.settings.oidc_redirect_url or _origin(request) + CALLBACK
        try:
            started = await oidc.start(
                redirect_uri, ip=client_ip(request), browser_secret=request.cookies.get(FLOW_COOKIE)
            )
        except RagchatError as exc:  # provider down, rate limited, database away
            return _failed(request, accounts, exc)
        cookie = _flow_cookie(request, accounts, started.browser_secret, int(FLOW_TTL_S))
        return Redirect(started.url, status_code=303, cookies=[cookie])

    @get("/callback", status_code=303, responses=error_responses(400, 404))
    async def callback(
        self,
        request: Request[Any, Any, Any],
        oidc: OidcService,
        accounts: AccountService,
        oauth_state: Annotated[str | None, Parameter(query="state")] = None,
        code: str | None = None,
        error: str | None = None,
        error_description: str | None = None,
    ) -> Redirect:
        """Public: where the provider sends the browser back; signs in and goes to `/` (a failure too: the login
        page reads why from `/config`)."""
        if not oidc.enabled:
            raise NotFound("single sign-on is not configured (OIDC_ISSUER)")
        try:
            result = await oidc.finish(
                state=oauth_state,
                code=code,
                error=error,
                error_description=error_description,
                browser_secret=request.cookies.get(FLOW_COOKIE),
                ip=client_ip(request),
                user_agent=request.headers.get("user-agent", ""),
            )
        except SsoFailed as exc:
            await accounts.record_sign_in_failure("?", ip=client_ip(request), reason=exc.message[:300], method="oidc")
            return _failed(request, accounts, exc)
        return Redirect("/", status_code=303, cookies=[session_cookie(request, accounts, result.session_token)])


def oidc_handlers() -> list[Any]:
    return [OidcController]
