"""Schemathesis (its CLI, `st run`) over the real server: generated requests, valid and invalid, for every
operation of the served OpenAPI document, authenticated with an admin's API token, the LLM a fake Ollama;
then stateful sequences along the document's links. No response may be a 5xx, and every response must match
its documented status, content type, headers and schema; unsupported methods must be 405 with a right Allow."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.ollama_server import FakeOllama

pytestmark = pytest.mark.slow  # minutes: `make test-slow` (CI runs it)

MAX_EXAMPLES = int(os.environ.get("RAGCHAT_FUZZ_EXAMPLES", "12"))
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "ignored_auth",
    "use_after_free",
    "ensure_resource_availability",
]


def test_schemathesis_finds_no_5xx_and_no_schema_violation(
    live_app: Any, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    # the fake model answers every call: a relevance score when a JSON schema is asked for, else a short answer
    fake_ollama.responder = lambda body: '{"score": 0.5}' if body.get("format") else "The tides follow the moon [1]."
    server = live_app(auth="on", llm_provider="ollama", ollama_host=fake_ollama.url, llm_timeout_s=2.0)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        setup = client.post("/api/auth/setup", json={"username": "admin", "password": "fuzzing passphrase"})
        assert setup.status_code == 201, setup.text
        token = client.post("/api/auth/tokens", json={"name": "fuzz"}).json()["token"]
        doc = client.post("/api/documents", files=[("files", ("notes.txt", b"tides follow the moon", "text/plain"))])
        assert doc.status_code == 201, doc.text
    st = Path(sys.executable).with_name("st")
    command = [
        str(st), "run", f"{server.url}/schema/openapi.json",
        "--header", f"Authorization: Bearer {token}",
        "--checks", ",".join(CHECKS),
        "--max-examples", str(MAX_EXAMPLES),
        "--phases", "examples,coverage,fuzzing,stateful",
        "--seed", "20261123",
        "--workers", "2",
        "--request-timeout", "30",
        "--generation-database", "none",
        "--suppress-health-check", "all",
        "--report", "junit",
        "--report-dir", str(tmp_path),
        "--no-color",
        # the stateful phase would find the fuzzer's own token in GET /api/auth/tokens and revoke it, leaving
        # every later request a 401 (revoking is tested in test_accounts.py)
        "--exclude-operation-id", "ApiAuthTokensTokenIdRevokeToken",
        # likewise "log out everywhere" revokes every token of the user (tested in test_token_policy.py)
        "--exclude-operation-id", "ApiAuthLogoutAllLogoutAll",
    ]  # fmt: skip
    start = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    elapsed = time.monotonic() - start
    print(run.stdout[-3000:])
    report = f"{run.stdout[-20000:]}\n{run.stderr[-3000:]}"
    assert run.returncode == 0, f"schemathesis failed after {elapsed:.0f} s:\n{report}"
