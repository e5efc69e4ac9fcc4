"""OpenTelemetry spans (issue 31), through the SDK's in-memory exporter: each request, both search arms, each
LLM call and each ingestion stage, with the request id; nothing at all when tracing is off."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragchat.core import tracing
from tests.fakes.script import Reply
from tests.support.chat import chat, names


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
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
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        r = await client.post(
            "/api/documents", files={"files": ("rivers.txt", b"Rivers carry sediment to the sea. " * 20, "text/plain")}
        )
        doc_id = r.json()["results"][0]["document"]["id"]
        for _ in range(300):
            if (await client.get(f"/api/documents/{doc_id}")).json()["status"] == "ready":
                break
            await asyncio.sleep(0.1)
        searched = await client.get("/api/search", params={"q": "rivers sediment"}, headers={"X-Request-ID": "trace-1"})
        assert searched.status_code == 200
    fake_ollama.enqueue(Reply.tool_call("search_documents", {"query": "rivers"}), Reply.text("They carry sediment."))
    assert names(await chat(server.url, {"message": "What do rivers carry?"}))[-1] == "done"
    await asyncio.sleep(0.2)

    finished = spans.get_finished_spans()
    by_name: dict[str, list[Any]] = {}
    for s in finished:
        by_name.setdefault(s.name, []).append(s)
    request = [s for s in by_name["HTTP GET /api/search"] if s.attributes.get("ragchat.request_id") == "trace-1"]
    assert len(request) == 1 and request[0].attributes["http.status_code"] == 200
    for arm in ("search.vector", "search.keyword", "search.embed"):
        mine = [s for s in by_name[arm] if s.attributes.get("ragchat.request_id") == "trace-1"]
        assert len(mine) == 1, arm
        assert mine[0].parent is not None and mine[0].parent.span_id == request[0].context.span_id
        assert mine[0].context.trace_id == request[0].context.trace_id
    llm_calls = by_name["llm.chat"]
    assert len(llm_calls) == 2 and {s.attributes["llm.tool_calls"] for s in llm_calls} == {0, 1}
    chat_request = by_name["HTTP POST /api/chat"][0]
    assert all(s.context.trace_id == chat_request.context.trace_id for s in llm_calls)
    for stage in ("ingest.parse", "ingest.embed", "ingest.store"):
        assert by_name.get(stage), stage


def test_otlp_endpoint_from_the_environment_receives_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    """`setup_from_environment` with OTEL_EXPORTER_OTLP_ENDPOINT set exports over real HTTP to a collector (here a
    local one that records what it is sent), and `shutdown` flushes what is buffered."""
    import http.server
    import threading

    received: list[tuple[str, bytes]] = []

    class Collector(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append((self.path, body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        monkeypatch.setenv("OTEL_SERVICE_NAME", "ragchat-test")
        assert tracing.setup_from_environment()
        with tracing.span("search.keyword", mode="hybrid"):
            pass
        tracing.shutdown()
        assert not tracing.enabled()
    finally:
        server.shutdown()
        tracing.use_provider(None)
    assert [path for path, _ in received] == ["/v1/traces"]
    body = received[0][1]
    assert b"search.keyword" in body and b"ragchat-test" in body


def test_no_endpoint_means_no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert not tracing.setup_from_environment()
    assert not tracing.enabled()
