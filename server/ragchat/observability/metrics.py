"""Prometheus metric families (`GET /metrics`, system_routes.py), in one registry of this process.

Counters and histograms are updated where things happen (the access-log middleware, search, the chat loop,
ingestion, the rate limiter, the SSE streams); gauges of state kept in the database (the ingestion queue) or in
the pool are set when /metrics is scraped. The registry also holds prometheus_client's standard `process_*`
and `python_*` collectors and `ragchat_build_info{version}`; `_created` series are off (one per counter and
histogram, noise to a scraper). `ragchat worker` serves the same registry on METRICS_PORT (system_routes.py).
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

from ragchat import __version__

disable_created_metrics()
REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)  # process_cpu_seconds_total, process_resident_memory_bytes, open fds…
PlatformCollector(registry=REGISTRY)  # python_info{version, implementation}
GCCollector(registry=REGISTRY)  # python_gc_*
BUILD_INFO = Info("ragchat_build", "the running ragchat release", registry=REGISTRY)
BUILD_INFO.info({"version": __version__})

_FAST = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_SLOW = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 60.0)

REQUESTS = Counter(
    "ragchat_http_requests",
    "HTTP requests by route template, method and status",
    ["route", "method", "status"],
    registry=REGISTRY,
)
REQUEST_SECONDS = Histogram(
    "ragchat_http_request_duration_seconds",
    "HTTP request latency (a stream: until it ends)",
    ["route", "method"],
    buckets=_FAST,
    registry=REGISTRY,
)
SEARCH_SECONDS = Histogram(
    "ragchat_search_stage_duration_seconds",
    "search latency by mode and stage (embed, vector, keyword, fuse, rerank, total)",
    ["mode", "stage"],
    buckets=_FAST,
    registry=REGISTRY,
)
CHAT_FIRST_TOKEN_SECONDS = Histogram(
    "ragchat_chat_time_to_first_token_seconds",
    "chat: from the question to the answer's first token",
    buckets=_SLOW,
    registry=REGISTRY,
)
CHAT_TOKENS_PER_SECOND = Histogram(
    "ragchat_chat_tokens_per_second",
    "chat: answer tokens per second after the first",
    buckets=(1, 2, 5, 10, 20, 40, 80, 160, 320),
    registry=REGISTRY,
)
CHAT_TOOL_ROUNDS = Histogram(
    "ragchat_chat_tool_rounds",
    "chat: tool rounds (searches the model asked for) per answer",
    buckets=(0, 1, 2, 3, 4, 6, 8),
    registry=REGISTRY,
)
LLM_ERRORS = Counter("ragchat_llm_errors", "LLM failures by error code", ["code"], registry=REGISTRY)
INGEST_DOCUMENTS = Gauge(
    "ragchat_ingest_documents", "documents by ingestion state (read at scrape time)", ["state"], registry=REGISTRY
)
CHUNKS_EMBEDDED = Counter(
    "ragchat_ingest_chunks_embedded", "chunks embedded by ingestion (rate(): chunks per second)", registry=REGISTRY
)
DOCUMENTS_FAILED = Counter("ragchat_ingest_documents_failed", "documents whose ingestion failed", registry=REGISTRY)
LEASE_TAKEOVERS = Counter(
    "ragchat_ingest_lease_takeovers", "documents taken over from a worker whose lease ran out", registry=REGISTRY
)
POOL_CONNECTIONS = Gauge(
    "ragchat_db_pool_connections",
    "database pool connections (in_use, idle, size, max)",
    ["state"],
    registry=REGISTRY,
)
REPLICA_HEALTHY = Gauge(
    "ragchat_db_replica_healthy",
    "1 while a read replica is in use, 0 while it is skipped",
    ["replica"],
    registry=REGISTRY,
)
REPLICA_LAG = Gauge(
    "ragchat_db_replica_lag_seconds",
    "a read replica's lag behind the primary at its last check",
    ["replica"],
    registry=REGISTRY,
)
REPLICA_FALLBACKS = Counter(
    "ragchat_db_replica_fallbacks",
    "reads that failed on a replica and ran again on the primary",
    ["replica"],
    registry=REGISTRY,
)
POOL_WAITING = Gauge("ragchat_db_pool_waiting", "requests waiting for a pooled connection", registry=REGISTRY)
RATE_LIMITED = Counter(
    "ragchat_rate_limit_rejections", "requests refused by a rate limit (429)", ["limit"], registry=REGISTRY
)
SSE_STREAMS = Gauge("ragchat_sse_streams_active", "server-sent event streams open now", registry=REGISTRY)
