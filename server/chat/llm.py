"""Talking to Ollama: status checks and user-facing messages for its failures."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
import pydantic
from ollama import ResponseError

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


@dataclass(frozen=True)
class ChatFault:
    """What the `error` event says: a stable code and a message telling the user what to do."""

    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def is_no_tools_error(exc: BaseException) -> bool:
    """Ollama's 400 for models without tool support ("... does not support tools")."""
    return isinstance(exc, ResponseError) and "does not support tools" in str(exc.error)


def is_think_rejected(exc: BaseException) -> bool:
    """Ollama 0.12.4-0.12.5 answer 400 "... does not support thinking" when `think` is sent to such a model."""
    return isinstance(exc, ResponseError) and exc.status_code == 400 and "thinking" in str(exc.error).lower()


def _short(exc: BaseException, limit: int = 200) -> str:
    text = str(getattr(exc, "error", None) or exc).strip() or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_failure(exc: BaseException, settings: Settings) -> ChatFault:
    """Map an exception from the LLM, the search or the database to a user-facing fault."""
    model = settings.chat_model
    if isinstance(exc, psycopg.Error):
        return ChatFault(
            "database_unavailable",
            f"The database is unavailable ({_short(exc)}). Check that Postgres is running and DATABASE_URL is "
            "right, then send the message again.",
        )
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | ConnectionError):
        return ChatFault("ollama_unreachable", unreachable_message(settings))
    if isinstance(exc, httpx.TimeoutException):
        return ChatFault(
            "ollama_timeout",
            f"Ollama did not answer within {settings.ollama_timeout_s:g} s. The model may still be loading or be "
            "too slow for this machine: try again, use a smaller CHAT_MODEL, or raise OLLAMA_TIMEOUT_S.",
        )
    if isinstance(exc, ResponseError):
        if exc.status_code == 404 or "not found" in str(exc.error).lower():
            return ChatFault("model_not_found", missing_model_message(model))
        return ChatFault(
            "ollama_error",
            f"Ollama failed while answering: {_short(exc)}. Check the Ollama logs (the `ollama serve` output), "
            f"make sure `ollama run {model}` works, then try again.",
        )
    if isinstance(exc, json.JSONDecodeError | pydantic.ValidationError | httpx.TransportError):
        return ChatFault(
            "ollama_bad_response",
            f"Ollama's answer broke off or could not be read ({_short(exc)}). Check that OLLAMA_HOST "
            f"({settings.ollama_host}) points at Ollama itself (not a proxy), that `ollama serve` is healthy, "
            "and try again.",
        )
    return ChatFault("internal_error", f"Something went wrong while answering ({_short(exc)}). Please try again.")
