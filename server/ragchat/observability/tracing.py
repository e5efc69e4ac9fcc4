"""OpenTelemetry traces, optional: on when OTEL_EXPORTER_OTLP_ENDPOINT is set (the `otel` extra installed), off
otherwise at the cost of one attribute read per `span()` (no OpenTelemetry import at all).

What the maintained instrumentation does (issue 44), once `use_provider` is given a TracerProvider:
- each HTTP request: OpenTelemetry's ASGI middleware (`asgi_middleware`, added by the app), kind SERVER, the
  stable HTTP names (`http.request.method`, `http.route`, `http.response.status_code`); an incoming W3C
  `traceparent` is continued (a malformed one is ignored: a new trace). The access log names it
  `METHOD /route/template` and adds `ragchat.request_id` (`name_request`);
- each database query (psycopg instrumentation, kind CLIENT, `db.query.text` without parameters) and each
  outgoing HTTP call (httpx instrumentation: the LLM, rerankers, fetched URLs; `traceparent` sent along);
- log records get `otelTraceID` / `otelSpanID` (the logging integration), which JSON logs show (observability/logs.py).
A trace starts at a request or an ingestion job: a database query or HTTP call with no span around it (the
watchdog's probe every second, the queue's polls) is not sampled (`sampler`).

Hand-written spans stay where no library knows the work: both search arms and the query's embedding
(`search.*`), each LLM call (`llm.chat`), each ingestion stage (`ingest.parse`, `ingest.embed`,
`ingest.store`). One document's ingest is one trace whose id is the document's id (`jobs=`): its stages in
whichever worker process share it without anything stored, a stage over several documents belongs to the
first one's trace and links the others, and the upload request links each document it queued (`note_jobs`).
The exporter is OTLP over HTTP and reads the standard OTEL_* variables (service name: OTEL_SERVICE_NAME,
default "ragchat").
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any
from uuid import UUID

from ragchat.observability.logs import current_fields

log = logging.getLogger(__name__)


class _State:
    tracer: Any = None  # an opentelemetry Tracer when tracing is on
    provider: Any = None  # its TracerProvider (flushed by `shutdown`)
    instrumentors: list[Any] = []  # noqa: RUF012 (the instrumentors switched on, to switch off again)


_state = _State()
_OFF: AbstractContextManager[None] = nullcontext()
_MASK64 = (1 << 64) - 1
#: at most this many documents named on one span (a stage over a big batch links the first ones)
MAX_JOBS = 64


def enabled() -> bool:
    return _state.tracer is not None


def span(name: str, *, jobs: Sequence[UUID] | None = None, **attributes: Any) -> AbstractContextManager[Any]:
    """A span around a block (`with span("search.vector", mode=...)`); a no-op when tracing is off. `jobs`: the
    documents an ingestion stage works on: the span joins the first one's trace and links the others."""
    if _state.tracer is None:
        return _OFF
    return _started(name, attributes, jobs)


@contextmanager
def _started(name: str, attributes: dict[str, Any], jobs: Sequence[UUID] | None) -> Iterator[Any]:
    fields = current_fields()
    if fields.get("request_id"):
        attributes["ragchat.request_id"] = fields["request_id"]
    options: dict[str, Any] = {}
    if jobs:
        from opentelemetry.trace import Link, SpanKind, set_span_in_context

        first, *others = list(jobs)[:MAX_JOBS]
        options = {
            "context": set_span_in_context(_job_span(first)),
            "links": [Link(_job_span(j).get_span_context()) for j in others],
            "kind": SpanKind.CONSUMER,
        }
        attributes["ragchat.document_ids"] = [str(j) for j in jobs[:MAX_JOBS]]
    with _state.tracer.start_as_current_span(
        name, attributes={k: v for k, v in attributes.items() if v is not None}, **options
    ) as current:
        yield current


def _job_span(document_id: UUID) -> Any:
    """The (remote, sampled) parent of a document's ingestion spans: trace id = the document's id."""
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    number = document_id.int
    context = SpanContext(
        trace_id=number, span_id=(number & _MASK64) or 1, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
    )
    return NonRecordingSpan(context)


def job_trace_id(document_id: UUID) -> str:
    """The trace id (32 hex digits) of a document's ingestion: its id without the dashes."""
    return f"{document_id.int:032x}"


def note_jobs(document_ids: Sequence[UUID]) -> None:
    """On the current span (the upload request): a link to each queued document's ingestion trace."""
    if _state.tracer is None or not document_ids:
        return
    from opentelemetry import trace

    current = trace.get_current_span()
    if not current.is_recording():
        return
    for document_id in list(document_ids)[:MAX_JOBS]:
        current.add_link(_job_span(document_id).get_span_context(), {"ragchat.document_id": str(document_id)})


def start(name: str, **attributes: Any) -> Any:
    """A span started under the current one but not made current (for async generators, whose code runs in
    their consumer's context); `finish` ends it. None when tracing is off."""
    if _state.tracer is None:
        return None
    fields = current_fields()
    if fields.get("request_id"):
        attributes["ragchat.request_id"] = fields["request_id"]
    return _state.tracer.start_span(name, attributes={k: v for k, v in attributes.items() if v is not None})


def finish(started: Any, error: BaseException | None = None, **attributes: Any) -> None:
    if started is None:
        return
    for key, value in attributes.items():
        if value is not None:
            started.set_attribute(key, value)
    if error is not None:
        started.record_exception(error)
        from opentelemetry.trace import Status, StatusCode

        started.set_status(Status(StatusCode.ERROR, type(error).__name__))
    started.end()


def current(started: Any) -> AbstractContextManager[Any]:
    """Make a span from `start` the current one for a block (its children nest under it)."""
    if started is None:
        return _OFF
    from opentelemetry.trace import use_span

    return use_span(started, end_on_exit=False)


def name_request(method: str, route: str, request_id: str) -> None:
    """The request's server span (the ASGI middleware's, current in the access log's middleware) named by its
    route template, once routing has found it, with the request id."""
    if _state.tracer is None:
        return
    from opentelemetry import trace

    server = trace.get_current_span()
    if server.is_recording():
        server.update_name(f"{method} {route}" if route != "-" else method)
        if route != "-":
            server.set_attribute("http.route", route)
        server.set_attribute("ragchat.request_id", request_id)


def asgi_middleware() -> list[Callable[[Any], Any]]:
    """OpenTelemetry's ASGI middleware for the app (empty when tracing is off)."""
    provider = _state.provider
    if provider is None:
        return []
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    def details(scope: Any) -> tuple[str, dict[str, Any]]:
        return str(scope.get("method") or scope.get("type")), {}  # named by route once known (`name_request`)

    def wrap(app: Any) -> Any:
        return OpenTelemetryMiddleware(
            app, tracer_provider=provider, default_span_details=details, exclude_spans=["receive", "send"]
        )

    return [wrap]


def sampler() -> Any:
    """Traces start at requests and jobs: a CLIENT span (a query, an HTTP call) without a parent is dropped; a
    span under a sampled parent is kept."""
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON, Decision, ParentBased, Sampler, SamplingResult
    from opentelemetry.trace import SpanKind

    class RootsNotClients(Sampler):
        def should_sample(
            self,
            parent_context: Any,
            trace_id: int,
            name: str,
            kind: SpanKind | None = None,
            attributes: Any = None,
            links: Any = None,
            trace_state: Any = None,
        ) -> SamplingResult:
            if kind == SpanKind.CLIENT:
                return SamplingResult(Decision.DROP)
            return ALWAYS_ON.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

        def get_description(self) -> str:
            return "RootsNotClients"

    return ParentBased(root=RootsNotClients())


def use_provider(provider: Any | None) -> None:
    """Trace into `provider` (an SDK TracerProvider; tests pass one with an in-memory exporter), the database,
    httpx and logging instrumentation on with it; None: all off."""
    for instrumentor in _state.instrumentors:
        instrumentor.uninstrument()
    _state.instrumentors = []
    _state.provider = provider
    _state.tracer = None if provider is None else provider.get_tracer("ragchat")
    if provider is not None:
        _state.instrumentors = _instrument(provider)


def _instrument(provider: Any) -> list[Any]:
    # the stable names (http.request.method, db.query.text…) unless the operator chose otherwise; read once by
    # the instrumentation, so set before the first one is made
    os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "http,database")
    try:
        from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
        from opentelemetry.instrumentation.logging import LoggingInstrumentor
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    except ImportError:
        log.warning("OpenTelemetry's instrumentation is not installed: pip install 'ragchat-server[otel]'")
        return []
    on: list[Any] = []
    for instrumentor, options in (
        (PsycopgInstrumentor(), {}),
        (HTTPXClientInstrumentor(), {}),
        (LoggingInstrumentor(), {"inject_trace_context": True, "set_logging_format": False,
                                 "enable_log_auto_instrumentation": False}),
    ):  # fmt: skip
        instrumentor.instrument(tracer_provider=provider, **options)
        on.append(instrumentor)
    return on


def shutdown() -> None:
    """Export what is buffered and stop tracing (the server's shutdown)."""
    provider = _state.provider
    use_provider(None)
    if provider is not None and hasattr(provider, "shutdown"):
        provider.shutdown()


def setup_from_environment() -> bool:
    """Tracing on when OTEL_EXPORTER_OTLP_ENDPOINT is set; True when it is."""
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed: pip install 'ragchat-server[otel]'"
        )
        return False
    from ragchat import __version__

    service = os.environ.get("OTEL_SERVICE_NAME", "ragchat")
    resource = Resource.create({"service.name": service, "service.version": __version__})
    provider = TracerProvider(resource=resource, sampler=sampler())
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    use_provider(provider)
    return True


def flush() -> None:
    """Export what is buffered now (tracing stays on)."""
    provider = _state.provider
    if provider is not None and hasattr(provider, "force_flush"):
        provider.force_flush()
