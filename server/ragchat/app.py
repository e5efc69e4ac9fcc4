"""The Litestar application factory: routes of every domain over one runtime (server/ragchat/runtime.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from litestar import Litestar, Request, Router, asgi, get
from litestar.di import Provide
from litestar.exceptions import HTTPException, NotFoundException
from litestar.response import File
from litestar.routes import HTTPRoute
from litestar.types import Receive, Scope, Send

from ragchat import __version__
from ragchat.accounts.oidc_routes import oidc_handlers
from ragchat.accounts.oidc_service import OidcService
from ragchat.accounts.routes import account_handlers, authenticate
from ragchat.accounts.service import AccountService
from ragchat.audit.routes import audit_handlers
from ragchat.audit.service import AuditLog
from ragchat.chat.api.action_routes import action_handlers
from ragchat.chat.api.routes import chat_handlers
from ragchat.chat.service import ChatService
from ragchat.core.preferences import PreferencesLookup
from ragchat.core.principal import CredentialCheck, Principal
from ragchat.db.ratelimit import RateLimiter
from ragchat.documents.api.browse_routes import DocumentBrowseController
from ragchat.documents.api.collection_routes import CollectionController
from ragchat.documents.api.metadata_routes import MetadataController
from ragchat.documents.api.routes import DocumentController
from ragchat.documents.api.scan_routes import ScanController
from ragchat.documents.api.service import DocumentService
from ragchat.documents.collections.service import CollectionService
from ragchat.evaluation.routes import EvalController
from ragchat.mcp.http import McpHttp
from ragchat.observability import tracing
from ragchat.observability.logs import bind
from ragchat.preferences.routes import preferences_handlers
from ragchat.preferences.service import PreferencesService
from ragchat.providers.llm.warmup import TIMEOUT_S as WARMUP_TIMEOUT_S
from ragchat.providers.llm.warmup import warm_up
from ragchat.resources import client_dist
from ragchat.retrieval.exhaustive_routes import exhaustive_handlers
from ragchat.retrieval.routes import search_handlers
from ragchat.retrieval.search import Searcher
from ragchat.retrieval.suggestion_routes import suggestion_handlers
from ragchat.runtime import Overrides, Runtime, open_runtime
from ragchat.settings import Settings
from ragchat.system_routes import metrics_port, system_handlers
from ragchat.web.access_log import AccessLogMiddleware
from ragchat.web.docs import document_errors, openapi_config
from ragchat.web.errors import error_response
from ragchat.web.proxies import ProxyHeadersMiddleware
from ragchat.web.security import SecurityMiddleware, response_headers

log = logging.getLogger(__name__)


async def provide_principal(request: Request[Any, Any, Any], runtime: Runtime) -> Principal:
    """The caller: API token, session cookie, or (AUTH=off) the local user; 401 otherwise."""
    principal = await authenticate(request, runtime.accounts)
    bind(user_id=str(principal.user_id), route=str(request.scope.get("path_template") or "-"))
    if request.method not in _READ_METHODS and request.url.path.startswith(_CHANGES_READS) and runtime.reads:
        runtime.reads.note_write(principal.user_id)  # this user's next reads go to the primary (read-your-writes)
        request.state.writer = principal.user_id  # noted again once the response is sent (`after_write`)
    return principal


_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: writes that change what replica-routed reads (searches, document listings, facets) show: after one, the
#: writer's reads stay on the primary for a while. A chat, a search by POST or a thread edit does not.
_CHANGES_READS = ("/api/documents", "/api/collections", "/api/admin/")


def _client_dist(settings: Settings) -> Path:
    """CLIENT_DIST, else the installed package's copy of the built client, else the checkout's client/dist."""
    return settings.server.client_dist or client_dist()


def create_app(settings: Settings, runtime: Runtime | None = None, *, overrides: Overrides | None = None) -> Litestar:
    """The app over `runtime` (used as it is, not closed), or over one its lifespan opens (with `overrides`)."""
    holder: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            rt = runtime or await stack.enter_async_context(open_runtime(settings, overrides))
            holder["runtime"] = rt
            await stack.enter_async_context(metrics_port(rt))  # METRICS_PORT, when set
            rt.llm_status.start()  # /api/health reads it from memory
            rt.spawn(rt.spaces.warm, "embedder-warmup")  # the stored vectors' model, when it is not the configured
            rt.spawn(rt.audit.run_retention, "audit-retention")  # AUDIT_RETENTION_DAYS
            if rt.settings.llm.llm_warmup:  # a first measured call (LLM_WARMUP), unless the model has figures
                rt.spawn(lambda: warm_up(rt.llm, rt.settings.llm.chat_model, timeout_s=WARMUP_TIMEOUT_S), "llm-warmup")
            if runtime is None:  # a real start: say what to fix before the first request needs it
                for problem in await rt.startup_problems():
                    log.warning("%s", problem)
            with suppress(Exception):  # answers a dead process left 'streaming' (also expired when found)
                await rt.chat.sweep_interrupted()
            mcp = McpHttp(rt)
            await stack.enter_async_context(mcp.run())
            holder["mcp"] = mcp
            stop = asyncio.Event()
            workers = [
                asyncio.create_task(rt.documents.ingestion.run_worker(stop), name="ingest-worker")
                for _ in range(settings.ingestion.ingest_workers)
            ]
            try:
                yield
            finally:
                stop.set()
                for task in workers:
                    task.cancel()
                    with suppress(asyncio.CancelledError, Exception):
                        await task

    def current() -> Runtime:
        return holder["runtime"]

    async def after_write(request: Request[Any, Any, Any]) -> None:
        """A write's read-your-writes window starts again when it is done (an upload can outlast the window)."""
        writer = request.state.get("writer")
        reads = holder["runtime"].reads if "runtime" in holder else None
        if writer is not None and reads is not None:
            reads.note_write(writer)

    allow: dict[str, str] = {}
    dist = _client_dist(settings)

    @asgi("/mcp", is_mount=True, copy_scope=True, include_in_schema=False)
    async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        """MCP over streamable HTTP (server/ragchat/mcp/http.py): a personal API token on every request."""
        await holder["mcp"](scope, receive, send)

    @get(["/", "/{path:path}"], include_in_schema=False)
    async def client_app(path: str = "/") -> File:
        """The built web client; unknown paths get index.html so client-side routes work on reload."""
        if path.startswith("/api") or "\x00" in path:
            raise NotFoundException(f"no route {path!r}")
        candidate = (dist / path.lstrip("/")).resolve()
        if candidate.is_file() and dist.resolve() in candidate.parents:
            return File(candidate, filename=candidate.name, content_disposition_type="inline")
        index = dist / "index.html"
        if not index.is_file():
            raise HTTPException(
                status_code=404, detail="the web client is not built: run `make client` (or `make run`)"
            )
        return File(index, filename="index.html", content_disposition_type="inline")

    app = Litestar(
        route_handlers=[
            *system_handlers(),
            *account_handlers(),
            *oidc_handlers(),
            # uploads are the one route with a big body: MAX_UPLOAD_MB (+ framing), refused while streaming
            Router(
                "/",
                route_handlers=[DocumentController],
                request_max_body_size=settings.ingestion.max_upload_request_bytes,
            ),
            DocumentBrowseController,
            ScanController,
            CollectionController,
            MetadataController,
            *search_handlers(),
            *exhaustive_handlers(),
            *suggestion_handlers(),
            *chat_handlers(),
            *action_handlers(),
            *preferences_handlers(),
            *audit_handlers(),
            EvalController,
            mcp_endpoint,
            client_app,
        ],
        dependencies={
            "runtime": Provide(current, sync_to_thread=False),
            "principal": Provide(provide_principal),
            "documents": Provide(lambda: current().documents, sync_to_thread=False),
            "searcher": Provide(lambda: current().searcher, sync_to_thread=False),
            "chat": Provide(lambda: current().chat, sync_to_thread=False),
            "accounts": Provide(lambda: current().accounts, sync_to_thread=False),
            "oidc": Provide(lambda: current().oidc, sync_to_thread=False),
            "collections": Provide(lambda: current().collections, sync_to_thread=False),
            "limiter": Provide(lambda: current().limiter, sync_to_thread=False),
            "policy": Provide(lambda: current().policy, sync_to_thread=False),
            "credential_check": Provide(lambda: current().accounts.still_valid, sync_to_thread=False),
            "preferences": Provide(lambda: current().preferences, sync_to_thread=False),
            "audit": Provide(lambda: current().audit, sync_to_thread=False),
            "user_preferences": Provide(lambda: current().preferences.effective, sync_to_thread=False),
            "user_names": Provide(lambda: current().accounts.names, sync_to_thread=False),
            "chat_search_limit": Provide(lambda: current().settings.llm.chat_search_limit, sync_to_thread=False),
        },
        signature_namespace={
            "Runtime": Runtime,
            "Principal": Principal,
            "DocumentService": DocumentService,
            "Searcher": Searcher,
            "ChatService": ChatService,
            "AccountService": AccountService,
            "OidcService": OidcService,
            "CollectionService": CollectionService,
            "RateLimiter": RateLimiter,
            "CredentialCheck": CredentialCheck,
            "PreferencesService": PreferencesService,
            "PreferencesLookup": PreferencesLookup,
            "AuditLog": AuditLog,
        },
        lifespan=[lifespan],
        exception_handlers={Exception: error_response},
        middleware=[
            lambda app: ProxyHeadersMiddleware(app, trusted=settings.server.trusted_proxies),
            *tracing.asgi_middleware(),  # OpenTelemetry's request spans, when tracing is on
            AccessLogMiddleware,
            lambda app: SecurityMiddleware(
                app, allowed_hosts=settings.server.host_allowlist, trusted_origins=settings.server.trusted_origins
            ),
        ],
        before_send=[response_headers(allow)],
        after_response=after_write,
        openapi_config=openapi_config(__version__),
        request_max_body_size=settings.server.max_json_bytes,
        debug=False,
        logging_config=None,  # the CLI (or the embedding program) configures logging; errors are logged by us
    )
    document_errors(app)
    for route in app.routes:  # for OPTIONS answers, by the path template routing puts in the scope
        if isinstance(route, HTTPRoute):
            allow[route.path] = allow[route.path_format] = ", ".join(sorted(route.methods))
    return app
