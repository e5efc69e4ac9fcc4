"""What the chat `error` event says when a turn fails: a stable code and a message naming the fix."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from server.core.errors import RagchatError
from server.providers.llm.base import LLMError


@dataclass(frozen=True)
class ChatFault:
    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def _short(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_failure(exc: BaseException) -> ChatFault:
    """Map an exception from the LLM provider, the search or the database to a user-facing fault."""
    if isinstance(exc, LLMError):
        return ChatFault(exc.code, exc.message)
    if isinstance(exc, RagchatError):
        return ChatFault(exc.code, exc.message)
    if isinstance(exc, psycopg.Error):
        return ChatFault(
            "database_unavailable",
            f"The database is unavailable ({_short(exc)}). Check that Postgres is running and DATABASE_URL is "
            "right, then send the message again.",
        )
    return ChatFault("internal_error", f"Something went wrong while answering ({_short(exc)}). Please try again.")
