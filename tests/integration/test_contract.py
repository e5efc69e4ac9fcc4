"""The API contract beyond the fuzzer: every error status has the one body, oversized bodies are refused
while streaming without the server growing by their size, and OPTIONS/405 name the right methods."""

from __future__ import annotations

import socket
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from litestar import Litestar, get
from litestar.testing import TestClient

from ragchat.web.errors import error_response
from tests.support.ratelimit import in_one_window

KEYS = {"status_code", "code", "detail", "request_id"}


def assert_error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, (status, response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json"), response.headers["content-type"]
    body = response.json()
    assert KEYS <= set(body) <= KEYS | {"extra"}, body
    assert body["status_code"] == status and isinstance(body["detail"], str) and body["detail"]
    assert body["request_id"] == response.headers["x-request-id"]
    if code is not None:
        assert body["code"] == code, body
    return body


async def test_every_error_status_has_the_one_body(live_app: Any, closed_ollama_url: str) -> None:
    server = live_app(max_json_kb=16, max_upload_mb=0.05, rate_search_per_min=2, ollama_host=closed_ollama_url)
    auth = live_app(auth="on")
    json_type = {"Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as c:
        assert_error(await c.post("/api/chat", json={"message": 5}), 400, "bad_request")  # validation
        assert_error(await c.get("/api/documents", headers={"Host": "evil.example"}), 400, "bad_host")
        assert_error(await c.post("/api/chat", content='{"message": ' + "[" * 5000 + "]" * 5000 + "}",
                                  headers=json_type), 400, "bad_request")  # fmt: skip
        assert_error(await c.post("/api/collections", json={"name": "x"}, headers={"Origin": "https://evil.example"}),
                     403, "cross_origin")  # fmt: skip
        assert_error(await c.get("/api/nothing-here"), 404, "not_found")
        assert_error(await c.get(f"/api/documents/{uuid.uuid4()}"), 404, "not_found")
        wrong = assert_error(await c.delete("/api/search"), 405, "method_not_allowed")
        assert "GET" in wrong["detail"] or wrong
        assert_error(await c.post("/api/chat", json={"message": "x" * 20_000}), 413, "payload_too_large")
        assert_error(await c.post("/api/chat", content="hello", headers={"Content-Type": "text/plain"}),
                     415, "unsupported_media_type")  # fmt: skip

        async def three_searches(_: int) -> list[httpx.Response]:
            return [await c.get("/api/search", params={"q": "tides"}) for _ in range(3)]

        _, limited = await in_one_window(three_searches)  # RATE_SEARCH_PER_MIN=2 counts per minute
        body = assert_error(limited[-1], 429, "rate_limited")
        assert body["extra"]["retry_after"] >= 1 and int(limited[-1].headers["retry-after"]) >= 1
        assert_error(await c.post("/api/rag", json={"query": "tides?"}), 503, "llm_unreachable")
        # the SSE route answers its errors in JSON too, not labelled text/event-stream
        assert_error(await c.post("/api/chat", json={"message": ""}), 400, "bad_request")
        sent_id = "client-chosen-id-123"
        echoed = await c.get("/api/nothing-here", headers={"X-Request-ID": sent_id})
        assert echoed.json()["request_id"] == sent_id == echoed.headers["x-request-id"]
    async with httpx.AsyncClient(base_url=auth.url, timeout=30) as c:
        assert_error(await c.get("/api/documents"), 401, "unauthorized")
        await c.post("/api/auth/setup", json={"username": "admin", "password": "correct horse"})
        assert_error(await c.post("/api/auth/setup", json={"username": "other", "password": "correct horse"}),
                     409, "setup_done")  # fmt: skip


def test_a_bug_is_a_500_without_internals_and_a_logged_traceback(caplog: pytest.LogCaptureFixture) -> None:
    @get("/boom")
    async def boom() -> None:
        raise RuntimeError("secret internal detail at /srv/app/x.py")

    app = Litestar([boom], exception_handlers={Exception: error_response}, logging_config=None)
    with TestClient(app) as client:
        response = client.get("/boom", headers={"X-Request-ID": "abc-123"})
    assert response.status_code == 500
    body = response.json()
    assert body["code"] == "internal_error" and body["request_id"] == "abc-123"
    assert "secret" not in response.text and "/srv" not in response.text
    logged = [r for r in caplog.records if "abc-123" in r.getMessage()]
    assert logged and logged[0].exc_info is not None  # the traceback, under the same request id


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 1048576


def send_streamed_body(url: str, path: str, content_type: str, total_mb: int, *, declare: bool) -> tuple[int, int]:
    """Send a `total_mb` body (chunked, or with a Content-Length) until the server answers; (status, MB sent)."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=5)
    length = total_mb * 1048576
    framing = f"Content-Length: {length}" if declare else "Transfer-Encoding: chunked"
    head = f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: {content_type}\r\n{framing}\r\n\r\n"
    sock.sendall(head.encode())
    chunk = b"x" * 1048576
    sent = 0
    try:
        for _ in range(total_mb):
            sock.sendall(chunk if declare else b"100000\r\n" + chunk + b"\r\n")
            sent += 1
    except (OSError, TimeoutError):
        pass  # the server answered and stopped reading: what we want
    sock.settimeout(10)
    reply = b""
    try:
        while b"\r\n\r\n" not in reply:
            data = sock.recv(65536)
            if not data:
                break
            reply += data
    except OSError:
        pass
    sock.close()
    status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1") else 0
    return status, sent


@pytest.mark.parametrize("declare", [True, False], ids=["content-length", "chunked"])
def test_oversized_bodies_are_refused_while_streaming(live_app: Any, declare: bool) -> None:
    """300 MB at a JSON route and at the upload route (MAX_UPLOAD_MB=5): 413, and the server (this process)
    grows by a few MB, not by the body's size."""
    server = live_app(max_upload_mb=5)
    before = rss_mb()
    results = []
    for path, ctype in [("/api/chat", "application/json"), ("/api/documents", "multipart/form-data; boundary=x")]:
        start = time.monotonic()
        status, sent = send_streamed_body(server.url, path, ctype, 300, declare=declare)
        results.append((path, status, sent, time.monotonic() - start))
    grown = rss_mb() - before
    how = ", ".join(f"{p} {status} after {sent} MB sent in {t * 1000:.0f} ms" for p, status, sent, t in results)
    print(f"\nrefused 2 × 300 MB ({'content-length' if declare else 'chunked'}): server grew {grown:.1f} MB; {how}")
    for path, status, sent, elapsed in results:
        assert status == 413, (path, status)
        assert sent < 300 and elapsed < 30, (path, sent, elapsed)  # refused before the whole body arrived
    assert grown < 60, f"the server grew by {grown:.0f} MB while refusing 2 × 300 MB bodies"


def test_options_and_405_name_every_method_of_the_path(live_app: Any) -> None:
    server = live_app()
    with httpx.Client(base_url=server.url) as c:
        doc = f"/api/documents/{uuid.uuid4()}"
        options = c.options(doc)
        assert options.status_code == 204
        assert {m.strip() for m in options.headers["allow"].split(",")} == {"DELETE", "GET", "OPTIONS", "PATCH"}
        wrong = c.put(doc, json={})
        assert wrong.status_code == 405
        assert {m.strip() for m in wrong.headers["allow"].split(",")} >= {"DELETE", "GET"}
