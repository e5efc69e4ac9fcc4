"""Talking to Ollama: status checks and user-facing messages for its failures."""

from __future__ import annotations

import asyncio
from typing import Any

from server.settings import Settings


def model_names(list_response: Any) -> set[str]:
    names: set[str] = set()
    for model in getattr(list_response, "models", []) or []:
        name = getattr(model, "model", None) or getattr(model, "name", None)
        if name:
            names.add(name)
            names.add(name.removesuffix(":latest"))
    return names


def unreachable_message(settings: Settings) -> str:
    return (
        f"Ollama is not reachable at {settings.ollama_host}. Start it with `ollama serve` "
        "(or set OLLAMA_HOST to where it runs)."
    )


def missing_model_message(model: str) -> str:
    return f"The model '{model}' is not available in Ollama. Pull it with `ollama pull {model}` (or set CHAT_MODEL)."


async def ollama_status(llm: Any, settings: Settings, timeout_s: float = 3.0) -> dict[str, Any]:
    """`{reachable, model, model_available, message}` for the health endpoint and the page's banner."""
    model = settings.chat_model
    try:
        listing = await asyncio.wait_for(llm.list(), timeout=timeout_s)
    except Exception:
        return {"reachable": False, "model": model, "model_available": False, "message": unreachable_message(settings)}
    available = model in model_names(listing)
    return {
        "reachable": True,
        "model": model,
        "model_available": available,
        "message": None if available else missing_model_message(model),
    }
