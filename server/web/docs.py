"""The OpenAPI docs page: Redoc from this server (`/vendor/redoc.standalone.js`, copied from the npm package
into the client build), no CDN, no inline script (Redoc reads the schema from its `spec-url`)."""

from __future__ import annotations

import html
from typing import Any

from litestar import Request
from litestar.openapi.config import OpenAPIConfig
from litestar.openapi.plugins import OpenAPIRenderPlugin

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
