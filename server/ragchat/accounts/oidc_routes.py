"""Single sign-on routes: the login page's configuration, the redirect to the provider, and its callback.

The callback is a top-level GET the provider's page sends the browser to (a cross-site navigation: the
SameSite=Lax cookies come with it, and nothing here needs the Origin check of state-changing requests). It
answers a redirect in every case: to `/` signed in, or to `/?sso_error=<why>` for the login page to show.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from litestar import Controller, Request, get
from litestar.datastructures import Cookie
from litestar.params import Parameter
from litestar.response import Redirect
from pydantic import BaseModel, Field

from ragchat.accounts.oidc_service import FLOW_TTL_S, OidcService
from ragchat.accounts.routes import client_ip, cookie_secure, session_cookie
from ragchat.accounts.service import AccountService
from ragchat.core.errors import NotFound, RagchatError, SsoFailed
from ragchat.core.http import error_responses

log = logging.getLogger(__name__)

FLOW_COOKIE = "ragchat_sso"
FLOW_PATH = "/api/auth/oidc"
CALLBACK = "/api/auth/oidc/callback"


class SsoConfig(BaseModel):
    """What the login page shows: the single sign-on button (and whether it works now), the password form."""

    sso: bool = Field(description="single sign-on is configured (OIDC_ISSUER) and accounts are on")
    label: str | None = Field(default=None, description='the button\'s text: "Sign in with <OIDC_DISPLAY_NAME>"')
    unavailable: str | None = Field(default=None, description="why single sign-on does not work now (provider down)")
    local_login: bool = Field(description="usernames and passwords sign in (LOCAL_LOGIN_ENABLED)")


def _flow_cookie(request: Request[Any, Any, Any], accounts: AccountService, value: str, max_age: int) -> Cookie:
    return Cookie(
        key=FLOW_COOKIE,
        value=value,
        httponly=True,
        samesite="lax",
        secure=cookie_secure(request, accounts),
        path=FLOW_PATH,
        max_age=max_age,
    )


def _failed(request: Request[Any, Any, Any], accounts: AccountService, exc: RagchatError) -> Redirect:
    """Back to the login page, which says why; the flow cookie is dropped."""
    log.info("single sign-on failed (%s): %s", exc.code, exc.message)
    return Redirect(
        "/",
        query_params={"sso_error": exc.message},
        status_code=303,
        cookies=[_flow_cookie(request, accounts, "", 0)],
    )


class OidcController(Controller):
    path = "/api/auth/oidc"

    @get("/config")
    async def config(self, oidc: OidcService) -> SsoConfig:
        """Public: the login page's single sign-on button and password form (the provider is asked, within
        OIDC_TIMEOUT_S, whether it answers)."""
        local = oidc.settings.local_login_enabled
        if not oidc.enabled:
            return SsoConfig(sso=False, local_login=local)
        return SsoConfig(sso=True, label=oidc.label, unavailable=await oidc.unavailable_reason(), local_login=local)

    @get("/login", status_code=303, responses=error_responses(404))
    async def login(self, request: Request[Any, Any, Any], oidc: OidcService, accounts: AccountService) -> Redirect:
        """Public: starts a sign-in (state, nonce, PKCE) and sends the browser to the identity provider."""
        if not oidc.enabled:
            raise NotFound("single sign-on is not configured (OIDC_ISSUER)")
        redirect_uri = oidc.settings.oidc_redirect_url or str(request.base_url).rstrip("/") + CALLBACK
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
        """Public: where the provider sends the browser back; signs in and goes to `/`, or to `/?sso_error=…`."""
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
            return _failed(request, accounts, exc)
        cookies = [session_cookie(request, accounts, result.session_token), _flow_cookie(request, accounts, "", 0)]
        return Redirect("/", status_code=303, cookies=cookies)


def oidc_handlers() -> list[Any]:
    return [OidcController]
