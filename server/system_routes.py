"""System routes: `/api/health` and the admin re-embed (switch embedding models without downtime)."""

from __future__ import annotations

from typing import Any

from litestar import get, post
from pydantic import BaseModel

from server.accounts.routes import require_admin
from server.core.errors import BadRequest
from server.core.principal import Principal
from server.runtime import Runtime
from server.settings import EmbedProvider


@get("/api/health")
async def health(runtime: Runtime) -> dict[str, Any]:
    """Database, embeddings (stored vs configured model) and LLM status; `status` is "ok" when the database
    answers and the stored vectors match the configured model."""
    database = "ok"
    embeddings: dict[str, Any] | None = None
    try:
        async with runtime.pool.connection(timeout=2) as conn:
            await conn.execute("SELECT 1")
        embeddings = await runtime.spaces.status()
    except Exception as exc:
        database = f"error: {exc}"
    llm = await runtime.llm.status(runtime.settings.chat_model)
    return {
        "status": "ok" if database == "ok" else "degraded",
        "database": database,
        "embedder": f"{runtime.embedder.model_name} ({runtime.embedder.provider})",
        "embeddings": embeddings,
        "llm": llm.to_json(),
    }


class ReembedBody(BaseModel):
    provider: EmbedProvider | None = None
    model: str | None = None


@get("/api/admin/reembed")
async def reembed_progress(runtime: Runtime, principal: Principal) -> dict[str, Any]:
    """Progress of a switch of embedding model (`state`: idle or building; done / total chunks)."""
    require_admin(principal)
    return {**(await runtime.reembedder.progress()).to_json(), "embeddings": await runtime.spaces.status()}


@post("/api/admin/reembed", status_code=202)
async def reembed_start(data: ReembedBody, runtime: Runtime, principal: Principal) -> dict[str, Any]:
    """Build vectors with another embedding model (default: EMBED_PROVIDER / EMBED_MODEL) beside the current
    ones, in the background; search keeps answering from the current ones until the switch."""
    require_admin(principal)
    provider = str(data.provider or runtime.embedder.provider)
    model = data.model or (runtime.embedder.model_name if data.provider is None else None)
    if not model:
        raise BadRequest("name the model to switch to")
    await runtime.reembedder.start(provider, model)
    if not any(t.get_name() == "reembed" for t in runtime.tasks):
        runtime.spawn(runtime.reembedder.run, "reembed")
    return (await runtime.reembedder.progress()).to_json()


def system_handlers() -> list[Any]:
    return [health, reembed_progress, reembed_start]
