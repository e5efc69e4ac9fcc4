"""One access-log line per request (logger `ragchat.access`): method, route template, status, duration, client,
with the request's id and user. It also opens the request's log context (observability/logs.py) that every line written
while the request runs carries. Query strings are not logged (they can hold search text)."""

from __future__ import annotations

import logging
import time

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from ragchat.httpapi.http import scope_request_id
from ragchat.observability import metrics, tracing
from ragchat.observability.logs import open_context

log = logging.getLogger("ragchat.access")


class AccessLogMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        peer = scope.get("client")  # after ProxyHeadersMiddleware: the client behind trusted proxies
        context = open_context(request_id=scope_request_id(scope), route="-", client=peer[0] if peer else "")
        status = 0

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                # the request's span is OpenTelemetry's ASGI middleware's (observability/tracing.py), ended with the
                # response's last byte: named by the route template (known by now) as the response starts
                route = str(scope.get("path_template") or "-")  # type: ignore[call-overload]
                tracing.name_request(scope["method"], route, context["request_id"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        except BaseException:
            status = status or 500
            raise
        finally:
            route = str(scope.get("path_template") or "-")  # type: ignore[call-overload]
            context["route"] = route
            client = scope.get("client")
            seconds = time.perf_counter() - began
            metrics.REQUESTS.labels(route, scope["method"], str(status)).inc()
            metrics.REQUEST_SECONDS.labels(route, scope["method"]).observe(seconds)
            log.info(
                "%s %s %d %.1f ms",
                scope["method"],
                route,
                status,
                (time.perf_counter() - began) * 1000,
                extra={
                    "method": scope["method"],
                    "status": status,
                    "duration_ms": round((time.perf_counter() - began) * 1000, 1),
                    "client": client[0] if client else None,
                },
            )
