"""System routes: `/api/health`, the probes (`/livez`, `/readyz`), `/metrics` (also on METRICS_PORT: `metrics_port`)
and the admin re-embed (switch embedding models without downtime)."""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import psycopg
from litestar import Request, Response, get, post
from litestar.datastructures import CacheControlHeader
from litestar.openapi import ResponseSpec
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from psycopg_pool import PoolTimeout
from pydantic import BaseModel, Field

from ragchat.accounts.routes import authenticate, require_admin
from ragchat.core.errors import BadRequest, DatabaseUnavailable
from ragchat.core.principal import Principal
from ragchat.db.migrate import CURRENT_VERSION_SQL, head_version
from ragchat.db.watchdog import DatabaseStatus, bounded, describe_failure, probe_pool
from ragchat.documents.ingest.queue import status_counts
from ragchat.observability import metrics
from ragchat.runtime import Runtime
from ragchat.settings import EmbedProvider
from ragchat.web.metrics_port import MetricsListener

log = logging.getLogger(__name__)


class DatabaseHealth(BaseModel):
    """The database as this server sees it (no connection string: the route is public)."""

    ok: bool
    latency_ms: float | None = Field(description="round trip of the last probe (`SELECT 1`), when it answered")
    embedded: bool = Field(description="the server's own PostgreSQL (DATABASE_URL unset)")
    restarts: int = Field(description="times this server restarted the embedded PostgreSQL after it died")
    error: str | None = Field(default=None, description="why it does not answer, in words")
    postgres: str | None = Field(default=None, description="the server's PostgreSQL version, read at start")
    pgvector: str | None = Field(default=None, description="the installed pgvector's version, read at start")
    halfvec_index: bool = Field(default=False, description="spaces get half-size `halfvec` HNSW indexes")
    iterative_scan: bool = Field(default=False, description="filtered vector searches scan the index iteratively")


class ModelRef(BaseModel):
    provider: str
    model: str


class SpaceRef(ModelRef):
    """Vectors made by a model (`dim` dimensions)."""

    dim: int


class EmbeddingsStatus(BaseModel):
    """The model of the stored vectors against the configured one, and a switch under way."""

    configured: ModelRef
    stored: SpaceRef | None = Field(description="the model of the vectors search uses (null: none yet)")
    building: SpaceRef | None = Field(description="a re-embed under way")
    status: Literal["ok", "reembedding", "mismatch"]
    message: str | None = Field(description="what is going on and the fix")


class LlmStatus(BaseModel):
    provider: str
    reachable: bool
    model: str
    model_available: bool
    message: str | None = Field(description="what is wrong and the fix")
    context_length: int | None = None


class Health(BaseModel):
    """`status`: "down" (HTTP 503) when the database does not answer; "degraded" when it answers but the stored
    vectors are not (yet) from the configured embedding model, or their status could not be read."""

    status: Literal["ok", "degraded", "down"]
    database: Literal["ok", "unavailable"] = Field(description="kept for older clients; details in `db`")
    db: DatabaseHealth
    embedder: str = Field(description="the configured embedding model and provider")
    embeddings: EmbeddingsStatus | None = Field(
        description="stored vs configured embedding model (null when the database did not answer)"
    )
    llm: LlmStatus = Field(description="the chat model's server: reachable, model available, the fix")
    chat_max_message_chars: int = Field(description="the longest question /api/chat takes (CHAT_MAX_MESSAGE_CHARS)")


@get(
    "/api/health",
    cache_control=CacheControlHeader(no_store=True),
    responses={503: ResponseSpec(data_container=Health, description="the database does not answer")},
)
async def health(runtime: Runtime) -> Response[Health]:
    """Database, embeddings (stored vs configured model) and LLM status. 503 when the database does not answer;
    the database part answers within DB_PROBE_TIMEOUT_S even when the database hangs."""
    limit = runtime.settings.database.db_probe_timeout_s
    watchdog = runtime.watchdog

    async def database() -> tuple[DatabaseStatus, dict[str, Any] | None]:
        # the watchdog's last probe (at most about a second old), else one now, through the pool
        db = watchdog.status if watchdog is not None and watchdog.fresh() else await probe_pool(runtime.pool, limit)
        if not db.ok:
            return db, None
        try:
            return db, await bounded(runtime.spaces.status(), limit)
        except (TimeoutError, psycopg.Error, PoolTimeout, DatabaseUnavailable) as exc:  # it stopped answering
            return DatabaseStatus(ok=False, error=describe_failure(exc), checked_at=time.monotonic()), None
        except Exception:
            log.warning("health: the embeddings' status could not be read", exc_info=True)
            return db, None

    (db, embeddings), llm = await asyncio.gather(database(), runtime.llm_status.get())
    if not db.ok:
        status = "down"
    elif embeddings is None or embeddings.get("status") != "ok":
        status = "degraded"
    else:
        status = "ok"
    caps = runtime.capabilities
    body = Health(
        status=status,
        database="ok" if db.ok else "unavailable",
        db=DatabaseHealth(
            ok=db.ok,
            latency_ms=db.latency_ms,
            embedded=runtime.database is not None and runtime.database.embedded is not None,
            restarts=watchdog.restarts if watchdog is not None else 0,
            error=db.error,
            postgres=caps.server_version if caps is not None else None,
            pgvector=caps.pgvector if caps is not None else None,
            halfvec_index=caps is not None and caps.halfvec_index,
            iterative_scan=caps is not None and caps.iterative_scan,
        ),
        embedder=f"{runtime.embedder.model_name} ({runtime.embedder.provider})",
        embeddings=EmbeddingsStatus.model_validate(embeddings) if embeddings is not None else None,
        llm=LlmStatus.model_validate(llm.to_json()),
        chat_max_message_chars=runtime.settings.llm.chat_max_message_chars,
    )
    return Response(body, status_code=200 if db.ok else 503)


class Liveness(BaseModel):
    status: Literal["ok"]


@get("/livez", cache_control=CacheControlHeader(no_store=True))
async def livez() -> Liveness:
    """The process answers (no I/O): a liveness probe (Docker HEALTHCHECK, Kubernetes livenessProbe)."""
    return Liveness(status="ok")


class Readiness(BaseModel):
    """Ready: the database answers, its schema is this code's, the embedding model is loaded. Not the LLM: an
    LLM outage leaves search, documents and accounts working, so it does not take the server out of rotation."""

    status: Literal["ready", "not_ready"]
    database: bool
    schema_version: str | None = Field(description="the database's newest applied migration")
    code_schema_version: str = Field(description="the newest migration this server ships")
    embedder: str
    problems: list[str]
    replicas: list[dict[str, Any]] = Field(
        default_factory=list,
        description="each DATABASE_READ_URL replica: healthy, lag_s, why it is skipped (reads then go to the "
        "primary, so a skipped replica does not make this server unready), reads and fallbacks so far",
    )


@get(
    "/readyz",
    cache_control=CacheControlHeader(no_store=True),
    responses={503: ResponseSpec(data_container=Readiness, description="not ready (see `problems`)")},
)
async def readyz(runtime: Runtime) -> Response[Readiness]:
    """A readiness probe: 200 when this server can take traffic, 503 (with the problems in words) when not."""
    body = await readiness(runtime)
    return Response(body, status_code=503 if body.problems else 200)


async def readiness(runtime: Runtime) -> Readiness:
    """/readyz's answer (also on METRICS_PORT)."""
    limit = runtime.settings.database.db_probe_timeout_s
    head = head_version()
    problems: list[str] = []
    version: str | None = None
    db = runtime.watchdog.status if runtime.watchdog is not None and runtime.watchdog.fresh() else None
    if db is None:
        db = await probe_pool(runtime.pool, limit)
    if db.ok:

        async def read_version() -> str | None:
            async with runtime.pool.connection(timeout=limit) as conn:
                row = await (await conn.execute(CURRENT_VERSION_SQL)).fetchone()
                return row["version"] if row else None

        try:
            version = await bounded(read_version(), limit)
        except Exception as exc:
            problems.append(f"the schema version could not be read: {describe_failure(exc)}")
        else:
            if version != head:
                problems.append(f"the database schema is at {version}, this server's is {head}")
    else:
        problems.append(f"the database does not answer: {db.error}")
    body = Readiness(
        status="not_ready" if problems else "ready",
        database=db.ok,
        schema_version=version,
        code_schema_version=head,
        embedder=f"{runtime.embedder.model_name} ({runtime.embedder.provider})",
        problems=problems,
        replicas=runtime.reads.status() if runtime.reads is not None else [],
    )
    return body


@get("/metrics", include_in_schema=False, cache_control=CacheControlHeader(no_store=True))
async def metrics_endpoint(request: Request[Any, Any, Any], runtime: Runtime) -> Response[bytes]:
    """Prometheus text format. `Authorization: Bearer <METRICS_TOKEN>`, or an admin's session or API token
    (AUTH=off: the local user is the admin); 401 otherwise."""
    token = runtime.settings.server.metrics_secret
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if not (token and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())):
        require_admin(await authenticate(request, runtime.accounts))
    await refresh_gauges(runtime)
    return Response(generate_latest(metrics.REGISTRY), media_type=CONTENT_TYPE_LATEST)


async def refresh_gauges(runtime: Runtime) -> None:
    """Set the gauges read at scrape time: the pool's connections and the ingestion queue's counts (skipped,
    with a warning, when the database does not answer: the rest of the scrape still answers)."""
    stats = runtime.pool.get_stats()
    size, idle = stats.get("pool_size", 0), stats.get("pool_available", 0)
    for state, value in (("in_use", size - idle), ("idle", idle), ("size", size), ("max", runtime.pool.max_size)):
        metrics.POOL_CONNECTIONS.labels(state).set(value)
    metrics.POOL_WAITING.set(stats.get("requests_waiting", 0))
    limit = runtime.settings.database.db_probe_timeout_s

    async def queue() -> dict[str, int]:
        async with runtime.pool.connection(timeout=limit) as conn:
            return await status_counts(conn)

    try:
        counts = await bounded(queue(), limit)
    except Exception as exc:  # the database is down: the rest still answers
        log.warning("metrics: the ingestion queue could not be read: %s", describe_failure(exc))
    else:
        for state in ("queued", "processing", "ready", "failed", *counts):
            metrics.INGEST_DOCUMENTS.labels(state).set(counts.get(state, 0))


@asynccontextmanager
async def metrics_port(runtime: Runtime) -> AsyncIterator[MetricsListener | None]:
    """METRICS_PORT's listener (web/metrics_port.py) while the block runs; None when METRICS_PORT is unset."""
    s = runtime.settings.server
    if s.metrics_port is None:
        yield None
        return

    async def ready() -> tuple[bool, dict[str, Any]]:
        body = await readiness(runtime)
        return not body.problems, body.model_dump(mode="json")

    listener = MetricsListener(
        s.metrics_host or s.host,
        s.metrics_port,
        refresh=lambda: refresh_gauges(runtime),
        ready=ready,
        timeout_s=runtime.settings.database.db_probe_timeout_s + 5,
    )
    log.info("metrics on http://%s:%d/metrics", s.metrics_host or s.host, listener.port)
    try:
        yield listener
    finally:
        await asyncio.to_thread(listener.close)


class ReembedBody(BaseModel):
    provider: EmbedProvider | None = None
    model: str | None = None


class ReembedProgress(BaseModel):
    state: Literal["idle", "building"]
    target: str | None = Field(description="the model being built, e.g. `nomic-embed-text (ollama)`")
    done: int = Field(description="chunks embedded with the new model")
    total: int
    percent: float


class ReembedStatus(ReembedProgress):
    embeddings: EmbeddingsStatus


@get("/api/admin/reembed")
async def reembed_progress(runtime: Runtime, principal: Principal) -> ReembedStatus:
    """Progress of a switch of embedding model (`state`: idle or building; done / total chunks)."""
    require_admin(principal)
    progress = (await runtime.reembedder.progress()).to_json()
    return ReembedStatus.model_validate({**progress, "embeddings": await runtime.spaces.status()})


@post("/api/admin/reembed", status_code=202)
async def reembed_start(data: ReembedBody, runtime: Runtime, principal: Principal) -> ReembedProgress:
    """Build vectors with another embedding model (default: EMBED_PROVIDER / EMBED_MODEL) beside the current
    ones, in the background; search keeps answering from the current ones until the switch."""
    require_admin(principal)
    provider = str(data.provider or runtime.embedder.provider)
    model = data.model or (runtime.embedder.model_name if data.provider is None else None)
    if not model:
        raise BadRequest("name the model to switch to")
    await runtime.reembedder.start(provider, model)
    if not any(t.get_name() == "reembed" for t in runtime.tasks):
        runtime.spawn(runtime.reembedder.run, "reembed")
    return ReembedProgress.model_validate((await runtime.reembedder.progress()).to_json())


def system_handlers() -> list[Any]:
    return [livez, readyz, health, metrics_endpoint, reembed_progress, reembed_start]
