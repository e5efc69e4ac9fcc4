"""The OpenAPI docs page: Redoc from this server (`/vendor/redoc.standalone.js`, copied from the npm package
into the client build), no CDN, no inline script (Redoc reads the schema from its `spec-url`)."""

from __future__ import annotations

import html
from typing import Any

from litestar import Litestar, Request
from litestar.openapi.config import OpenAPIConfig
from litestar.openapi.plugins import OpenAPIRenderPlugin
from litestar.routes import HTTPRoute

from ragchat.chat.api.openai_schemas import OpenAIError
from ragchat.httpapi.http import ErrorBody, error_responses

REDOC_JS = "/vendor/redoc.standalone.js"


class LocalRedocPlugin(OpenAPIRenderPlugin):
    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        title = html.escape(str(openapi_schema.get("info", {}).get("title", "API")))
        spec = html.escape(self.get_openapi_json_route(request))
        return (
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{title}</title></head><body><redoc spec-url='{spec}'></redoc>"
            f"<script src='{REDOC_JS}'></script></body></html>"
        ).encode()


def openapi_config(version: str) -> OpenAPIConfig:
    return OpenAPIConfig(title="ragchat", version=version, path="/schema", render_plugins=[LocalRedocPlugin(path="/")])


def document_errors(app: Litestar) -> None:
    """Give every operation the error responses it can really return, all with the one body (OpenAI's on /v1):
    400 (bad Host, invalid input), 500 and 503 everywhere; 401 and 403 where a caller is needed; 403, 413 and
    415 on writes (cross-origin, body limit, media type); 404 where the path names a resource. Handlers add
    their own (409, 429…) through `responses=error_responses(…)`."""
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for handler in route.route_handlers:
            if not handler.resolve_include_in_schema():
                continue
            statuses = {400, 500, 503}
            if "principal" in handler.parsed_fn_signature.parameters:
                statuses |= {401, 403}
            if handler.http_methods & {"POST", "PUT", "PATCH", "DELETE"}:
                statuses |= {403, 413, 415}
            if "{" in route.path:
                statuses.add(404)
            own = dict(handler.responses or {})
            model = OpenAIError if route.path.startswith("/v1/") else ErrorBody
            errors = error_responses(*sorted(statuses | {s for s in own if s >= 400}), model=model)
            handler.responses = {**{s: spec for s, spec in own.items() if s < 400}, **errors}
