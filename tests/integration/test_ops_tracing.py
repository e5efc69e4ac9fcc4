"""OpenTelemetry spans (issues 31, 44), through the SDK's in-memory exporter: each request (the ASGI
instrumentation, an incoming `traceparent` continued), its database queries and HTTP calls (psycopg and httpx
instrumentation), both search arms, each LLM call and each ingestion stage, with the request id; one trace per
document's ingestion; nothing at all when tracing is off."""

from __future__ import annotations

import asyncio
import gzip
import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest
from opentelemetry.instrumentation.utils import suppress_http_instrumentation
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from ragchat.observability import tracing
from tests.conftest import free_port
from tests.fakes.script import Reply
from tests.support.chat import chat, names


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=tracing.sampler())  # as `ragchat serve` makes it
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_provider(provider)
    try:
        yield exporter
    finally:
        tracing.use_provider(None)


def test_off_by_default_costs_nothing() -> None:
    assert not tracing.enabled()
    assert tracing.span("a") is tracing.span("b")  # one shared no-op context
    assert tracing.start("a") is None
    tracing.finish(None)


async def test_spans_for_requests_search_arms_llm_calls_and_ingestion(
    live_app: Callable[..., Any], fake_ollama: Any, spans: InMemorySpanExporter
) -> None:
    server = live_app(ingest_workers=1, ollama_host=fake_ollama.url)
    with suppress_http_instrumentation():  # the test's own client is no traced caller (same process)
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            r = await client.post(
                "/api/documents",
                files={"files": ("rivers.txt", b"Rivers carry sediment to the sea. " * 20, "text/plain")},
            )
            doc_id = UUID(r.json()["results"][0]["document"]["id"])
            await wait_ready(client, doc_id)
            searched = await client.get(
                "/api/search", params={"q": "rivers sediment"}, headers={"X-Request-ID": "trace-1"}
            )
            assert searched.status_code == 200
        fake_ollama.enqueue(
            Reply.tool_call("search_documents", {"query": "rivers"}), Reply.text("They carry sediment.")
        )
        assert names(await chat(server.url, {"message": "What do rivers carry?"}))[-1] == "done"
    await asyncio.sleep(0.2)

    finished = spans.get_finished_spans()
    by_name: dict[str, list[Any]] = {}
    for s in finished:
        by_name.setdefault(s.name, []).append(s)
    request = [s for s in by_name["GET /api/search"] if s.attributes.get("ragchat.request_id") == "trace-1"]
    assert len(request) == 1 and request[0].attributes["http.response.status_code"] == 200
    assert request[0].kind == SpanKind.SERVER and request[0].attributes["http.route"] == "/api/search"
    assert request[0].attributes["http.request.method"] == "GET" and request[0].parent is None
    for arm in ("search.vector", "search.keyword", "search.embed"):
        mine = [s for s in by_name[arm] if s.attributes.get("ragchat.request_id") == "trace-1"]
        assert len(mine) == 1, arm
        assert mine[0].parent is not None and mine[0].parent.span_id == request[0].context.span_id
        assert mine[0].context.trace_id == request[0].context.trace_id
    queries = in_trace(finished, request[0].context.trace_id, SpanKind.CLIENT)
    assert queries and all(q.attributes["db.system.name"] == "postgresql" for q in queries)  # database spans
    assert any("document_chunks" in str(q.attributes.get("db.query.text")) for q in queries)
    llm_calls = by_name["llm.chat"]
    assert len(llm_calls) == 2 and {s.attributes["llm.tool_calls"] for s in llm_calls} == {0, 1}
    chat_request = by_name["POST /api/chat"][0]
    assert all(s.context.trace_id == chat_request.context.trace_id for s in llm_calls)
    # each LLM call is an httpx CLIENT span in the chat's trace, and the LLM server was sent the trace
    outgoing = in_trace(finished, chat_request.context.trace_id, SpanKind.CLIENT)
    assert len([s for s in outgoing if str(s.attributes.get("url.full")).endswith("/api/chat")]) == 2
    sent = [r.headers.get("traceparent", "") for r in fake_ollama.chat_requests]
    assert sent and all(f"-{chat_request.context.trace_id:032x}-" in t for t in sent), sent

    # one document's ingestion is one trace, its id the document's: every stage, with its database spans
    job = in_trace(finished, doc_id.int)
    assert {"ingest.parse", "ingest.embed", "ingest.store"} <= {s.name for s in job}, {s.name for s in job}
    store = next(s for s in job if s.name == "ingest.store")
    assert store.kind == SpanKind.CONSUMER and tracing.job_trace_id(doc_id) == f"{store.context.trace_id:032x}"
    assert any(
        s.parent is not None and s.parent.span_id == store.context.span_id for s in job if s.kind == SpanKind.CLIENT
    )
    upload = next(s for s in by_name["POST /api/documents"])
    assert [link.context.trace_id for link in upload.links] == [doc_id.int]  # the upload links its job's trace
    # a query nobody's request or job asked for (the watchdog's, the queue's polls) starts no trace
    assert not [s for s in finished if s.kind == SpanKind.CLIENT and s.parent is None]


async def test_incoming_traceparent_is_continued_and_a_malformed_one_ignored(
    live_app: Callable[..., Any], spans: InMemorySpanExporter
) -> None:
    server = live_app()
    upstream_trace, upstream_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    with suppress_http_instrumentation():
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            ok = await client.get(
                "/api/search", params={"q": "x"}, headers={"traceparent": f"00-{upstream_trace}-{upstream_span}-01"}
            )
            assert ok.status_code == 200
            for bad in ("00-zzzz-00f067aa0ba902b7-01", "00-" + "0" * 32 + "-00f067aa0ba902b7-01", "x" * 600, "\x7f"):
                r = await client.get("/api/documents", headers={"traceparent": bad})
                assert r.status_code == 200, (bad, r.text)
    await asyncio.sleep(0.2)
    finished = spans.get_finished_spans()
    search = next(s for s in finished if s.name == "GET /api/search")
    assert f"{search.context.trace_id:032x}" == upstream_trace and search.kind == SpanKind.SERVER
    assert search.parent is not None and f"{search.parent.span_id:016x}" == upstream_span and search.parent.is_remote
    assert in_trace(finished, search.context.trace_id, SpanKind.CLIENT)  # its queries joined the caller's trace
    listings = [s for s in finished if s.name == "GET /api/documents"]
    assert len(listings) == 4 and all(s.parent is None for s in listings)  # new traces, not errors
    assert all(f"{s.context.trace_id:032x}" != upstream_trace for s in listings)


def in_trace(spans: Any, trace_id: int, kind: SpanKind | None = None) -> list[Any]:
    return [s for s in spans if s.context.trace_id == trace_id and (kind is None or s.kind == kind)]


async def wait_ready(client: httpx.AsyncClient, doc_id: UUID) -> None:
    for _ in range(300):
        if (await client.get(f"/api/documents/{doc_id}")).json()["status"] == "ready":
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the document was not ingested")


class _Collector(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that records what it is sent (`server.received`: path, protobuf body)."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.server.received.append((self.path, body))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    """A local OTLP receiver: its URL and what it received."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    received: list[tuple[str, bytes]] = []
    server.received = received  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", received
    finally:
        server.shutdown()


def test_otlp_endpoint_from_the_environment_receives_spans(
    monkeypatch: pytest.MonkeyPatch, collector: tuple[str, list[tuple[str, bytes]]]
) -> None:
    """`setup_from_environment` with OTEL_EXPORTER_OTLP_ENDPOINT set exports over real HTTP to a collector (here a
    local one that records what it is sent), and `shutdown` flushes what is buffered."""
    url, received = collector
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "ragchat-test")
        assert tracing.setup_from_environment()
        with tracing.span("search.keyword", mode="hybrid"):
            pass
        tracing.shutdown()
        assert not tracing.enabled()
    finally:
        tracing.use_provider(None)
    assert [path for path, _ in received] == ["/v1/traces"]
    body = received[0][1]
    assert b"search.keyword" in body and b"ragchat-test" in body


def exported(received: list[tuple[str, bytes]]) -> list[tuple[str, Any]]:
    """(service name, span) of every span a collector received."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    out = []
    for _, body in received:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                out += [(attributes.get("service.name", ""), s) for s in scope_spans.spans]
    return out


def _start(tmp_path: Path, name: str, command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragchat.cli", *command], env={**os.environ, **env}, stdout=out, stderr=out
        )
    return process, log


def _wait_for(process: subprocess.Popen[bytes], log: Path, text: str) -> None:
    deadline = time.monotonic() + 180
    while text not in log.read_text():
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)


@pytest.mark.slow
def test_serve_and_worker_export_one_trace_per_request_and_per_ingest(
    tmp_path: Path, db: str, collector: tuple[str, list[tuple[str, bytes]]]
) -> None:
    """Real `ragchat serve` and `ragchat worker` processes export to a local OTLP receiver: a search is one trace
    (its server span, search stages and database queries); a document's ingestion in the worker is one trace
    whose id is the document's, with database spans, which the upload request in the server links to."""
    url, received = collector
    port = free_port()
    common = {
        "DATABASE_URL": db,
        "DATA_DIR": str(tmp_path / "data"),
        "AUTH": "off",
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "HF_HUB_OFFLINE": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": url,
        "OTEL_BSP_SCHEDULE_DELAY": "200",
    }
    serve, serve_log = _start(
        tmp_path, "serve", ["serve"],
        {**common, "PORT": str(port), "INGEST_WORKERS": "0", "OTEL_SERVICE_NAME": "ragchat-serve"},
    )  # fmt: skip
    worker, worker_log = _start(
        tmp_path, "worker", ["worker", "--poll", "0.2"], {**common, "OTEL_SERVICE_NAME": "ragchat-worker"}
    )
    try:
        _wait_for(serve, serve_log, "ready at")
        _wait_for(worker, worker_log, "waiting for queued documents")
        base = f"http://127.0.0.1:{port}"
        r = httpx.post(
            f"{base}/api/documents",
            files={"files": ("deltas.txt", b"River deltas form where sediment settles. " * 30, "text/plain")},
            timeout=60,
        )
        assert r.status_code == 201, r.text
        doc_id = UUID(r.json()["results"][0]["document"]["id"])
        deadline = time.monotonic() + 180
        while httpx.get(f"{base}/api/documents/{doc_id}", timeout=30).json()["status"] != "ready":
            assert time.monotonic() < deadline, worker_log.read_text()[-3000:]
            time.sleep(0.2)
        searched = httpx.get(f"{base}/api/search", params={"q": "deltas"}, headers={"X-Request-ID": "otlp-1"})
        assert searched.status_code == 200
    finally:
        for process in (serve, worker):
            process.send_signal(signal.SIGTERM)
        for process in (serve, worker):
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
    spans = exported(received)
    assert spans, (serve_log.read_text()[-2000:], worker_log.read_text()[-2000:])
    kinds = {"SERVER": 2, "CLIENT": 3, "CONSUMER": 5}  # OTLP's Span.SpanKind numbers

    def attribute(span: Any, key: str) -> str:
        return next((a.value.string_value for a in span.attributes if a.key == key), "")

    search = [s for svc, s in spans if svc == "ragchat-serve" and attribute(s, "ragchat.request_id") == "otlp-1"]
    request = next(s for s in search if s.kind == kinds["SERVER"])
    assert request.name == "GET /api/search"
    trace = [s for _, s in spans if s.trace_id == request.trace_id]
    assert {"search.vector", "search.keyword", "search.embed"} <= {s.name for s in trace}
    assert [s for s in trace if s.kind == kinds["CLIENT"] and attribute(s, "db.system.name") == "postgresql"]

    job = [(svc, s) for svc, s in spans if s.trace_id == doc_id.bytes]
    assert {svc for svc, _ in job} == {"ragchat-worker"}, job
    assert {"ingest.parse", "ingest.embed", "ingest.store"} <= {s.name for _, s in job}
    assert [s for _, s in job if s.kind == kinds["CLIENT"] and attribute(s, "db.system.name") == "postgresql"]
    upload = next(s for svc, s in spans if svc == "ragchat-serve" and s.name == "POST /api/documents")
    assert [link.trace_id for link in upload.links] == [doc_id.bytes]
    # traces start at requests and jobs only: no query or HTTP call is a trace of its own
    assert not [s for _, s in spans if s.kind == kinds["CLIENT"] and not s.parent_span_id]


def test_no_endpoint_means_no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert not tracing.setup_from_environment()
    assert not tracing.enabled()
