"""Structured logs (issue 31): JSON lines with timestamp, level, logger, request id, user and route; one
access line per request; no token, password or document text in the log. Issue 44: the trace and span ids on
every line written under a span, Python warnings and the commands' events (`say`) as JSON lines, and a
message with newlines, NUL or U+2028 still one line."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.instrumentation.utils import suppress_http_instrumentation
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragchat.observability import tracing
from ragchat.observability.logs import configure_logging, redact, say
from tests.support.accounts import PASSWORD, setup_admin

PLANTED_TOKEN = "rc_PlantedTokenThatMustNeverBeLogged0123"
PLANTED_PASSWORD = "planted-password-never-logged"
PLANTED_TEXT = "Quokkaplanted zebrafinch manuscript"


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """The root logger as `ragchat serve` sets it with LOG_FORMAT=json (LOG_LEVEL=info), into a buffer."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, logging.getLogger("ragchat").level)
    buffer = io.StringIO()
    configure_logging("warning", "json", stream=buffer)
    logging.getLogger("ragchat").setLevel(logging.INFO)
    try:
        yield buffer
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
        logging.getLogger("ragchat").setLevel(saved[2])
        logging.captureWarnings(False)


async def test_json_access_lines_with_request_user_and_route(
    live_app: Callable[..., Any], json_log: io.StringIO
) -> None:
    server = live_app(auth="on", ingest_workers=1)
    admin = await setup_admin(server.url)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as anon:
        r = await admin.post("/api/documents", files={"files": ("planted.txt", f"{PLANTED_TEXT}. " * 20, "text/plain")})
        assert r.status_code == 201, r.text
        doc_id = r.json()["results"][0]["document"]["id"]
        for _ in range(100):
            if (await admin.get(f"/api/documents/{doc_id}")).json()["status"] == "ready":
                break
            await asyncio.sleep(0.1)
        searched = await admin.get("/api/search", params={"q": PLANTED_TEXT}, headers={"X-Request-ID": "req-abc-123"})
        assert searched.status_code == 200
        assert (
            await anon.get("/api/documents", headers={"Authorization": f"Bearer {PLANTED_TOKEN}"})
        ).status_code == 401
        bad = await anon.post("/api/auth/login", json={"username": "admin", "password": PLANTED_PASSWORD})
        assert bad.status_code == 401
        ok = await anon.post("/api/auth/login", json={"username": "admin", "password": PASSWORD})
        assert ok.status_code == 200
        me = (await admin.get("/api/auth/session")).json()
    await admin.aclose()
    await asyncio.sleep(0.2)

    text = json_log.getvalue()
    for secret in (PLANTED_TOKEN, PLANTED_PASSWORD, PASSWORD, "Quokkaplanted", "zebrafinch"):
        assert secret not in text, secret
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]  # every line is one JSON object
    assert lines and all({"ts", "level", "logger", "message"} <= line.keys() for line in lines)
    access = [line for line in lines if line["logger"] == "ragchat.access"]
    search = [line for line in access if line.get("request_id") == "req-abc-123"]
    assert len(search) == 1, access  # one line per request
    assert search[0]["route"] == "/api/search" and search[0]["status"] == 200 and search[0]["duration_ms"] >= 0
    assert search[0]["user_id"] == str(me["user"]["id"]) and search[0]["method"] == "GET"
    assert search[0]["ts"].endswith("+00:00") and "T" in search[0]["ts"]
    refused = [line for line in access if line["status"] == 401 and line["route"] == "/api/documents"]
    assert refused and "user_id" not in refused[0]
    assert any(line["route"] == "/api/auth/login" and line["status"] == 401 for line in access)


def test_redact_masks_credentials() -> None:
    assert PLANTED_TOKEN not in redact(f"token {PLANTED_TOKEN} refused")
    assert "s3cret" not in redact("Authorization: Bearer s3cret-value-xyz")
    assert "hunter22" not in redact('{"username": "a", "password": "hunter22"}')
    assert "pw123" not in redact("postgresql://ragchat:pw123@db:5432/ragchat")
    assert redact("searched 12 chunks in 3.1 ms") == "searched 12 chunks in 3.1 ms"


def test_text_format_has_a_timestamp_level_and_request_id() -> None:
    root = logging.getLogger()
    saved = list(root.handlers), root.level
    buffer = io.StringIO()
    try:
        configure_logging("warning", "text", stream=buffer)
        logging.getLogger("ragchat.test").warning("hello %s", "world")
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
    line = buffer.getvalue().strip()
    assert line.endswith("WARNING ragchat.test [-]: hello world") and line[:4].isdigit(), line


def test_a_json_line_stays_one_line_whatever_the_message_holds(json_log: io.StringIO) -> None:
    nasty = "first\nsecond\r\nthird\x00fourth\u2028fifth\u2029sixth\x85seventh\x0bend"
    logging.getLogger("ragchat.test").warning("%s", nasty)
    try:
        raise ValueError("a\nmulti-line\x00error")
    except ValueError:
        logging.getLogger("ragchat.test").exception("failed: %s", nasty)
    lines = json_log.getvalue().splitlines()  # splitlines breaks at every one of those characters
    assert len(lines) == 2, lines
    first, second = (json.loads(line) for line in lines)
    assert first["message"] == nasty and second["message"] == f"failed: {nasty}"
    assert "multi-line" in second["exception"] and "ValueError" in second["exception"]


def test_warnings_and_command_events_are_json_lines(json_log: io.StringIO, capsys: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("a library is unhappy", UserWarning, stacklevel=1)
    say("ragchat: ready at http://127.0.0.1:8000", "ready", url="http://127.0.0.1:8000")
    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    warned = [line for line in lines if line["logger"] == "py.warnings"]
    assert len(warned) == 1 and "a library is unhappy" in warned[0]["message"] and warned[0]["level"] == "warning"
    ready = [line for line in lines if line.get("event") == "ready"]
    assert ready == [{**ready[0], "message": "ragchat: ready at http://127.0.0.1:8000", "url": "http://127.0.0.1:8000"}]
    assert capsys.readouterr().out == ""  # nothing printed beside the JSON lines


def test_text_mode_prints_what_commands_say(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    saved = list(root.handlers), root.level
    try:
        configure_logging("warning", "text", stream=io.StringIO())
        say("ragchat: ready at http://127.0.0.1:8000", "ready", url="http://127.0.0.1:8000")
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
        logging.captureWarnings(False)
    assert capsys.readouterr().out == "ragchat: ready at http://127.0.0.1:8000\n"


@pytest.fixture
def traced() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=tracing.sampler())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_provider(provider)
    try:
        yield exporter
    finally:
        tracing.use_provider(None)


async def test_lines_carry_the_trace_and_request_ids(
    live_app: Callable[..., Any], traced: InMemorySpanExporter, json_log: io.StringIO
) -> None:
    with tracing.span("outside.a.request"):
        logging.getLogger("ragchat.test").warning("inside a span")
    logging.getLogger("ragchat.test").warning("outside any span")
    server = live_app()
    upstream = "0af7651916cd43dd8448eb211c80319c"
    with suppress_http_instrumentation():
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            r = await client.get(
                "/api/documents",
                headers={"traceparent": f"00-{upstream}-b7ad6b7169203331-01", "X-Request-ID": "req-traced-1"},
            )
            assert r.status_code == 200
    await asyncio.sleep(0.2)
    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    inside = next(line for line in lines if line["message"] == "inside a span")
    span = next(s for s in traced.get_finished_spans() if s.name == "outside.a.request")
    assert inside["trace_id"] == f"{span.context.trace_id:032x}" and inside["span_id"] == f"{span.context.span_id:016x}"
    assert "trace_id" not in next(line for line in lines if line["message"] == "outside any span")
    access = [line for line in lines if line.get("request_id") == "req-traced-1"]
    assert access and all(line["trace_id"] == upstream for line in access), access
