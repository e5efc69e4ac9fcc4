"""What the chat `error` event says when a turn fails: a stable code and a message naming the fix."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from ragchat.core.errors import RagchatError
from ragchat.providers.llm.base import LLMError


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


FAULT_STATUS = {
    "not_found": 404,
    "bad_request": 400,
    "context_overflow": 400,
    "llm_rate_limited": 429,
    "rate_limited": 429,
    "llm_unreachable": 503,
    "model_not_found": 503,
    "embeddings_unavailable": 503,
    "database_unavailable": 503,
    "llm_timeout": 504,
    "llm_auth": 502,
    "llm_bad_response": 502,
    "llm_error": 502,
    "answer_failed": 502,
}


def as_http_error(exc: BaseException) -> RagchatError:
    """A failure of a non-streamed answer as an HTTP error with the chat fault's code and message."""
    if isinstance(exc, RagchatError) and not isinstance(exc, LLMError):
        return exc
    fault = describe_failure(exc)
    err = RagchatError(fault.message)
    err.code = fault.code
    err.status_code = FAULT_STATUS.get(fault.code, 500)
    return err
