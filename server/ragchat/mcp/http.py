"""`/mcp`: the MCP server over streamable HTTP, inside the running app.

Stateless (every POST stands alone, so any server process behind a load balancer can answer it) with JSON
responses. Every request authenticates with a personal API token, `Authorization: Bearer rc_…` (with
`AUTH=off`, the local user); anything else is a 401 in the API's error shape. Host and Origin checks are the
app's own (`ragchat.web.security`, in front of every route), so the SDK's DNS-rebinding check is off.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar.types import Receive, Scope, Send
from mcp.server.transport_security import TransportSecuritySettings

from ragchat.core.errors import Unauthorized
from ragchat.core.principal import Principal
from ragchat.mcp.server import PRINCIPAL_KEY, McpState, build_server, fixed_lifespan
from ragchat.runtime import Runtime


class McpHttp:
    """An ASGI app for `/mcp` over `runtime`; `run()` must be entered (the app's lifespan) before requests."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.server = build_server(fixed_lifespan(McpState(runtime)))
        # Builds the SDK's session manager (its Starlette app is not used: requests come straight here).
        self.server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with self.server.session_manager.run():
            yield

    async def authenticate(self, scope: Scope) -> Principal:
        accounts = self.runtime.accounts
        if not accounts.auth_enabled:
            return accounts.local()
        header = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == b"authorization"), "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("send a personal API token: Authorization: Bearer rc_… (make one on the Account page)")
        principal = await accounts.from_token(token.strip())
        if principal is None:
            raise Unauthorized("this API token is not valid (revoked, unknown, or its user is disabled)")
        return principal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            principal = await self.authenticate(scope)
        except Unauthorized as exc:
            await _unauthorized(send, exc)
            return
        scope[PRINCIPAL_KEY] = principal  # type: ignore[literal-required]  # read by ragchat.mcp.server.caller
        await self.server.session_manager.handle_request(scope, receive, send)  # type: ignore[arg-type]


async def _unauthorized(send: Send, exc: Unauthorized) -> None:
    body = json.dumps({"status_code": exc.status_code, "code": exc.code, "detail": exc.message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b'Bearer realm="ragchat"'),
    ]
    await send({"type": "http.response.start", "status": exc.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
