"""METRICS_PORT: a second, token-free listener with `/metrics`, `/livez` and `/readyz` only (issue 44).

`ragchat worker` has no other HTTP server, so this is where its ingestion series (chunks embedded, failures,
lease takeovers, the queue) are scraped; `ragchat serve` opens it beside PORT when set. prometheus_client's
own WSGI app and threaded server serve it from a thread; the gauges read at scrape time and the readiness
check are coroutines of the process's event loop, run there (`run_coroutine_threadsafe`) and waited for.
Bind it where only the scraper reaches (METRICS_HOST): it asks for no token.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from ragchat.core.errors import ServiceUnavailable
from ragchat.observability import metrics

log = logging.getLogger(__name__)

Readiness = Callable[[], Awaitable[tuple[bool, dict[str, Any]]]]


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class MetricsListener:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        refresh: Callable[[], Awaitable[None]],
        ready: Readiness,
        timeout_s: float = 10.0,
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.refresh, self.ready, self.timeout_s = refresh, ready, timeout_s
        self.metrics_app = make_wsgi_app(metrics.REGISTRY)
        try:
            self.httpd = make_server(host, port, self.app, ThreadingWSGIServer, handler_class=_Quiet)
        except OSError as exc:
            raise ServiceUnavailable(f"METRICS_PORT {port} on {host} cannot be opened: {exc.strerror or exc}") from exc
        self.port = int(self.httpd.server_port)
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="metrics-port", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _run(self, make: Callable[[], Awaitable[Any]]) -> Any:
        async def call() -> Any:
            return await make()

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result(self.timeout_s)

    def app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/livez":
            return _json(start_response, 200, {"status": "ok"})
        if path == "/readyz":
            try:
                ok, body = self._run(self.ready)
            except Exception as exc:  # the check itself hung or failed: not ready
                ok, body = False, {"status": "not_ready", "problems": [f"{type(exc).__name__}: {exc}"]}
            return _json(start_response, 200 if ok else 503, body)
        if path == "/metrics":
            try:
                self._run(self.refresh)
            except Exception as exc:  # the series kept in memory still answer
                log.warning("metrics: the gauges could not be refreshed: %s", exc)
            return self.metrics_app(environ, start_response)
        return _json(start_response, 404, {"detail": "this port serves /metrics, /livez and /readyz"})


def _json(start_response: Callable[..., Any], status: int, body: dict[str, Any]) -> list[bytes]:
    reason = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}[status]
    data = json.dumps(body).encode()
    start_response(
        f"{status} {reason}",
        [("Content-Type", "application/json"), ("Content-Length", str(len(data))), ("Cache-Control", "no-store")],
    )
    return [data]
