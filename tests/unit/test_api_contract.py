"""The API contract the web client is typed from.

The client's types are generated from the OpenAPI document (`cd client && npm run gen:api`: `python -m
ragchat.cli.openapi` → client/openapi.json (not committed), then openapi-typescript → client/src/api/schema.d.ts).
The committed schema.d.ts must be what the server's document gives now, or the client compiles against a stale
API. The document itself must give every operation a typed success response and the one error body on every
error response.
"""

from __future__ import annotations

import difflib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ragchat.cli import openapi

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "client"
COMMITTED_TYPES = CLIENT / "src" / "api" / "schema.d.ts"
GENERATOR = CLIENT / "node_modules" / ".bin" / "openapi-typescript"
REGENERATE = "run `cd client && npm run gen:api` and commit client/src/api/schema.d.ts"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The OpenAPI document as `npm run gen:api` writes it (same module, same serialisation)."""
    out = tmp_path_factory.mktemp("openapi") / "openapi.json"
    assert openapi.main([str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def document(generated: Path) -> dict[str, Any]:
    return json.loads(generated.read_text(encoding="utf-8"))


def stale(name: str, committed: str, fresh: str) -> str:
    diff = difflib.unified_diff(
        committed.splitlines(), fresh.splitlines(), f"{name} (committed)", f"{name} (server now)", lineterm="", n=1
    )
    excerpt = "\n".join(list(diff)[:60])
    return f"{name} differs from what the server emits: {REGENERATE}.\n{excerpt}"


def test_committed_client_types_are_current(generated: Path, tmp_path: Path) -> None:
    if not GENERATOR.exists():
        pytest.skip("client/node_modules is not installed (`make client` or `cd client && npm ci`)")
    out = tmp_path / "schema.d.ts"
    done = subprocess.run(
        [str(GENERATOR), str(generated), "-o", str(out)], cwd=CLIENT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"openapi-typescript failed:\n{done.stdout}\n{done.stderr}"
    assert COMMITTED_TYPES.is_file(), f"client/src/api/schema.d.ts is missing: {REGENERATE}"
    committed, fresh = COMMITTED_TYPES.read_text(encoding="utf-8"), out.read_text(encoding="utf-8")
    if committed != fresh:
        pytest.fail(stale("client/src/api/schema.d.ts", committed, fresh), pytrace=False)


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    ops = [
        (method.upper(), path, op)
        for path, item in document["paths"].items()
        if path.startswith(("/api/", "/v1/"))
        for method, op in item.items()
        if method in METHODS
    ]
    assert len(ops) > 30, "the document lists (almost) no /api or /v1 operation"
    return ops


def schemas_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    return [media["schema"] for media in (response.get("content") or {}).values() if media.get("schema")]


def test_every_operation_has_a_typed_success_response(document: dict[str, Any]) -> None:
    problems = []
    for method, path, op in operations(document):
        ok = {code: r for code, r in op["responses"].items() if code.startswith("2") or code == "303"}
        typed = [schemas_of(r) for code, r in ok.items() if code not in ("204", "303")]  # 303: a redirect
        if not ok:
            problems.append(f"{method} {path}: no 2xx response")
        elif set(ok) not in ({"204"}, {"303"}) and not any(typed):
            problems.append(f"{method} {path}: no schema on its {', '.join(sorted(ok))} response")
    assert not problems, "\n".join(problems)


def test_every_error_response_is_the_one_error_body(document: dict[str, Any]) -> None:
    problems = []
    for method, path, op in operations(document):
        body = "OpenAIError" if path.startswith("/v1/") else "ErrorBody"
        want = f"#/components/schemas/{body}"
        for code, response in sorted(op["responses"].items()):
            if code[0] not in "45":
                continue
            refs = [s.get("$ref") for s in schemas_of(response)]
            if not refs or any(ref != want for ref in refs):
                problems.append(f"{method} {path} {code}: {refs or 'no schema'}, not {body}")
    assert not problems, "\n".join(problems)


def test_the_error_bodies_carry_what_the_client_reads(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    body = schemas["ErrorBody"]
    assert set(body["required"]) >= {"status_code", "code", "detail", "request_id"}
    assert "extra" in body["properties"]  # per-file upload results, retry_after
    detail = schemas["OpenAIErrorDetail"]
    assert set(detail["required"]) >= {"message", "type", "code", "request_id"}


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if not ref:
        return schema
    assert ref.startswith("#/components/schemas/"), ref
    return document["components"]["schemas"][ref.rsplit("/", 1)[1]]


def test_upload_takes_multipart_files(document: dict[str, Any]) -> None:
    op = document["paths"]["/api/documents"]["post"]
    content = op["requestBody"]["content"]
    assert list(content) == ["multipart/form-data"], content
    form = resolve(document, content["multipart/form-data"]["schema"])
    assert "files" in form.get("required", []), form
    files = form["properties"]["files"]
    assert files["type"] == "array", files
    assert files["items"]["type"] == "string" and files["items"]["format"] == "binary", files
    assert "201" in op["responses"], "an accepted upload answers 201"


def test_the_chat_stream_documents_every_event_the_client_handles(document: dict[str, Any]) -> None:
    """client/src/api/chatEvents.ts derives its events from ChatStream: one property per SSE event name."""
    content = document["paths"]["/api/chat"]["post"]["responses"]["200"]["content"]
    stream = resolve(document, content["text/event-stream"]["schema"])
    assert set(stream["properties"]) == {
        "thread",
        "tool_call",
        "tool_result",
        "reading",
        "estimate",
        "progress",
        "retry",
        "token",
        "citations",
        "done",
        "error",
    }
