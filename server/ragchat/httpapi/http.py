"""The API's one error body, `{status_code, code, detail, extra?, request_id}`: its model, its OpenAPI
entries and the request id it carries. `ragchat.web.errors` renders every exception with it."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from litestar import Request
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import OpenAPIFormat, OpenAPIMediaType, OpenAPIResponse, OpenAPIType, Operation, Schema
from litestar.response import Stream
from pydantic import BaseModel, Field

HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    500: "internal_error",
    503: "service_unavailable",
}
DESCRIPTIONS = {
    400: "Bad request: invalid parameters or body, a disallowed Host, a body nested too deeply",
    401: "Not signed in, or the session or token no longer works",
    403: "Not allowed: another user's resource, an admin-only route, or a cross-origin write",
    404: "No such route or resource (or one you may not see)",
    405: "Method not allowed (the Allow header lists the methods that are)",
    409: "Conflict with the current state",
    413: "Body over the route's limit (MAX_JSON_KB, or MAX_UPLOAD_MB for uploads)",
    415: "Wrong Content-Type (JSON routes take application/json, uploads multipart/form-data)",
    429: "Rate limited: retry after the Retry-After header's seconds",
    500: "A bug: logged on the server with the request id",
    502: "The LLM server answered wrongly or refused the key",
    503: "The database or the LLM server is unavailable",
    504: "The LLM server timed out",
}
REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class ErrorBody(BaseModel):
    """Every error response of `/api` routes."""

    status_code: int = Field(description="the HTTP status, repeated")
    code: str = Field(description="stable machine-readable code, e.g. not_found, rate_limited, database_unavailable")
    detail: str = Field(description="what went wrong and, where there is one, the fix")
    extra: dict[str, Any] | list[Any] | None = Field(
        default=None, description="details: invalid fields, per-file upload results, retry_after"
    )
    request_id: str = Field(description="the X-Request-ID of the request, also in the server log")


def new_request_id(incoming: str | None = None) -> str:
    """The client's X-Request-ID when it is a sane token, else a fresh one."""
    if incoming and REQUEST_ID.match(incoming):
        return incoming
    return uuid.uuid4().hex


def scope_request_id(scope: Any) -> str:
    """The request's id, made on first use (the client's sane X-Request-ID, else new) and kept in its state."""
    state = scope.setdefault("state", {})
    rid = state.get("request_id")
    if rid is None:
        incoming = next((v for k, v in scope.get("headers", ()) if k.lower() == b"x-request-id"), b"")
        rid = state["request_id"] = new_request_id(incoming.decode("latin-1"))
    return str(rid)


def request_id_of(request: Request[Any, Any, Any]) -> str:
    return scope_request_id(request.scope)


def error_body(
    status_code: int, code: str, detail: str, request_id: str, extra: dict[str, Any] | list[Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"status_code": status_code, "code": code, "detail": detail, "request_id": request_id}
    if extra:
        body["extra"] = extra
    return body


def response_spec(model: type[BaseModel], description: str, media_type: str = "application/json") -> ResponseSpec:
    """An OpenAPI response entry (schema only: no generated example values)."""
    return ResponseSpec(model, description=description, media_type=media_type, generate_examples=False)


def error_responses(*statuses: int, model: type[BaseModel] = ErrorBody) -> dict[int, ResponseSpec]:
    """OpenAPI entries for a handler's error statuses, all with the one body (`model`)."""
    return {s: response_spec(model, DESCRIPTIONS.get(s, HTTP_CODES.get(s, "error"))) for s in statuses}


def also_event_stream(description: str) -> type[Operation]:
    """An `operation_class` for a route whose 200 is JSON, or server-sent events when the body asks to stream."""

    @dataclass
    class StreamingOperation(Operation):
        def __post_init__(self) -> None:
            ok = (self.responses or {}).get("200")
            if isinstance(ok, OpenAPIResponse):
                event = Schema(
                    type=OpenAPIType.OBJECT,
                    description=f"one event: {description}",
                    properties={"event": Schema(type=OpenAPIType.STRING), "data": Schema(type=OpenAPIType.STRING)},
                )
                stream = OpenAPIMediaType(schema=event)
                ok.content = {**(ok.content or {}), "text/event-stream": stream}

    return StreamingOperation


def file_download(*media_types: str) -> type[Operation]:
    """An `operation_class` for a route whose 200 is a file in one of `media_types` (`*/*`: any type)."""

    @dataclass
    class FileOperation(Operation):
        def __post_init__(self) -> None:
            ok = (self.responses or {}).get("200")
            if isinstance(ok, OpenAPIResponse):
                raw = OpenAPIMediaType(schema=Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY))
                # a JSON file is a JSON object in the schema, not bytes
                parsed = OpenAPIMediaType(schema=Schema(type=OpenAPIType.OBJECT, additional_properties=True))
                ok.content = {t: parsed if t == "application/json" else raw for t in media_types}

    return FileOperation


class EventStream(Stream):
    """Server-sent events from a route that otherwise answers JSON: litestar would send the stream with the
    route's media type (application/json) over the response's own; this one keeps text/event-stream."""

    def __init__(self, content: Any, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(content, media_type="text/event-stream", headers=headers)

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["media_type"] = self.media_type
        return super().to_asgi_response(*args, **kwargs)
