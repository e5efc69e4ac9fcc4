"""OpenTelemetry spans, optional: on when OTEL_EXPORTER_OTLP_ENDPOINT is set (the `otel` extra installed), off
otherwise at the cost of one attribute read per `span()` (no OpenTelemetry import at all).

Spans: each HTTP request (`HTTP <method> <route>`), both search arms (`search.vector`, `search.keyword`) and the
query's embedding, each LLM call (`llm.chat`), each ingestion stage (`ingest.parse`, `ingest.embed`,
`ingest.store`); each carries the request id (`ragchat.request_id`) when there is one. The exporter is OTLP over
HTTP and reads the standard OTEL_* variables (service name: OTEL_SERVICE_NAME, default "ragchat").
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from ragchat.core.logs import current_fields

log = logging.getLogger(__name__)


class _State:
    tracer: Any = None  # an opentelemetry Tracer when tracing is on
    provider: Any = None  # its TracerProvider (flushed by `shutdown`)


_state = _State()
_OFF: AbstractContextManager[None] = nullcontext()


def enabled() -> bool:
    return _state.tracer is not None


def span(name: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A span around a block (`with span("search.vector", mode=...)`); a no-op when tracing is off."""
    if _state.tracer is None:
        return _OFF
    return _started(name, attributes)


@contextmanager
def _started(name: str, attributes: dict[str, Any]) -> Iterator[Any]:
    fields = current_fields()
    if fields.get("request_id"):
        attributes["ragchat.request_id"] = fields["request_id"]
    with _state.tracer.start_as_current_span(
        name, attributes={k: v for k, v in attributes.items() if v is not None}
    ) as current:
        yield current


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


def use_provider(provider: Any | None) -> None:
    """Trace into `provider` (an SDK TracerProvider; tests pass one with an in-memory exporter); None: off."""
    _state.provider = provider
    _state.tracer = None if provider is None else provider.get_tracer("ragchat")


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
    service = os.environ.get("OTEL_SERVICE_NAME", "ragchat")
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    use_provider(provider)
    return True
