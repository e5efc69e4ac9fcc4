"""Structured logs (issue 31): JSON lines with timestamp, level, logger, request id, user and route; one
access line per request; no token, password or document text in the log."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from ragchat.core.logs import configure_logging, redact
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
