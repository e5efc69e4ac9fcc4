"""The LLM provider interface used by the chat loop, the reranker and everything later.

Messages are provider-neutral dicts:
  {"role": "system" | "user", "content": str}
  {"role": "assistant", "content": str, "tool_calls": [ToolCall, ...]}
  {"role": "tool", "content": str, "tool_call_id": str, "name": str}
Tools are OpenAI-style function schemas (`{"type": "function", "function": {...}}`), which Ollama accepts too.
Each provider converts both to its wire format and maps its client's exceptions to `LLMError` subclasses,
whose `message` tells the user what to do.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ragchat.providers.llm.speed import CallTiming, SpeedBook

Message = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for. `arguments` is a dict when the model wrote valid JSON, else
    the raw text (the chat loop answers the model with an error)."""

    id: str
    name: str
    arguments: dict[str, Any] | str


@dataclass
class ChatChunk:
    """A piece of a streamed reply: text, complete tool calls, or the end with usage."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    done: bool = False
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    timing: CallTiming | None = None  # the server's own measurement of the call (None: it gives none)


@dataclass(frozen=True)
class ModelInfo:
    """A model the server offers (GET /api/models): its name, and its size and family when the server says."""

    name: str
    size: int | None = None  # bytes on disk (Ollama)
    family: str | None = None  # e.g. "llama" (Ollama)


@dataclass(frozen=True)
class LLMStatus:
    """`/api/health`'s view of the chat model."""

    provider: str
    reachable: bool
    model: str
    model_available: bool
    message: str | None
    context_length: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "reachable": self.reachable,
            "model": self.model,
            "model_available": self.model_available,
            "message": self.message,
            "context_length": self.context_length,
        }


class LLMError(Exception):
    """A provider failure with a stable code and a message naming the fix."""

    code = "llm_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class LLMUnreachable(LLMError):
    code = "llm_unreachable"


class LLMModelMissing(LLMError):
    code = "model_not_found"


class LLMAuthError(LLMError):
    code = "llm_auth"


class LLMRateLimited(LLMError):
    code = "llm_rate_limited"


class LLMTimeout(LLMError):
    code = "llm_timeout"


class LLMBadResponse(LLMError):
    code = "llm_bad_response"


class LLMContextOverflow(LLMError):
    code = "context_overflow"


_OVERFLOW_HINTS = ("context length", "context_length", "context size", "exceed_context", "too many tokens")


def looks_like_overflow(message: str) -> bool:
    """A server's words for "the prompt is longer than the context window" (llama.cpp, vLLM, OpenAI)."""
    lowered = message.lower()
    return any(hint in lowered for hint in _OVERFLOW_HINTS)


class ToolsUnsupported(LLMError):
    """The model (or server) rejects `tools`: the chat loop falls back to retrieve-then-answer."""

    code = "tools_unsupported"


@dataclass(frozen=True)
class TokenChoice:
    """One generated token with its log-probability and the most likely alternatives (`top`, best first)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class LogprobsReply:
    """A short completion with the token log-probabilities the server returned: `tokens` is None when it
    returned none (an older server, or one that ignores the request), `problem` says what was wrong when it
    returned something unreadable (then `tokens` is None too)."""

    content: str
    tokens: tuple[TokenChoice, ...] | None
    problem: str | None = None


def read_logprobs(entries: Any) -> tuple[tuple[TokenChoice, ...] | None, str | None]:
    """`[{"token", "logprob", "top_logprobs": [{"token", "logprob"}, ...]}, ...]` (OpenAI's `logprobs.content`
    and Ollama's `logprobs`, as dicts) as `TokenChoice`s; (None, None) when absent, (None, why) when malformed:
    a log-probability must be a finite number <= 0."""
    if entries is None:
        return None, None
    if not isinstance(entries, list | tuple) or not entries:
        return None, f"logprobs is {type(entries).__name__}, not a non-empty list"

    def pair(item: Any) -> tuple[str, float] | str:
        if not isinstance(item, dict):
            return f"a logprobs entry is {type(item).__name__}"
        token, value = item.get("token"), item.get("logprob")
        if not isinstance(token, str):
            return "a logprobs entry has no token"
        if isinstance(value, bool) or not isinstance(value, int | float) or not (-1e9 < value <= 1e-6):
            return f"token {token!r} has logprob {value!r}"
        return token, float(min(0.0, value))

    out: list[TokenChoice] = []
    for entry in entries:
        head = pair(entry)
        if isinstance(head, str):
            return None, head
        top: list[tuple[str, float]] = []
        for alt in entry.get("top_logprobs") or []:
            got = pair(alt)
            if isinstance(got, str):
                return None, got
            top.append(got)
        top.sort(key=lambda p: -p[1])
        out.append(TokenChoice(head[0], head[1], tuple(top)))
    return tuple(out), None


@runtime_checkable
class SupportsLogprobs(Protocol):
    """A provider that can return token log-probabilities (OpenAI-compatible `logprobs`/`top_logprobs`, which
    llama.cpp's server supports; Ollama >= 0.12.11 `logprobs`/`top_logprobs` on /api/chat)."""

    async def complete_logprobs(
        self,
        *,
        model: str,
        messages: list[Message],
        timeout_s: float,
        top_logprobs: int = 20,
        max_tokens: int = 1,
    ) -> LogprobsReply:
        """A non-streamed reply of at most `max_tokens` at temperature 0, with the `top_logprobs` most likely
        tokens at each step (servers cap it at 20). Raises `LLMError` as `complete_json` does."""
        ...


class LLMProvider(Protocol):
    """What the domains need from a chat model server."""

    name: str  # "ollama" | "openai"
    speed: SpeedBook  # the measured prompt and generation speed per model (speed.py), kept by `stream_chat`

    def stream_chat(
        self,
        *,
        model: str,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        require_tool: bool = False,
        temperature: float | None = None,
    ) -> AsyncGenerator[ChatChunk, None]:
        """Stream one reply. Tool calls come complete (never as fragments). `require_tool` asks the server to
        call one of `tools` (where the protocol can say so). Raises `LLMError` (`LLMTimeout` past the first-token,
        stall or overall limit of streaming.py, `LLMUnreachable` when the server stops answering)."""
        ...

    async def complete_json(
        self,
        *,
        model: str,
        messages: list[Message],
        schema: dict[str, Any],
        timeout_s: float,
        max_tokens: int | None = None,
    ) -> str:
        """One non-streamed reply constrained to a JSON schema, at temperature 0; the raw text (validate it).
        `max_tokens` stops a model that would go on writing (the reply is then cut, and usually invalid)."""
        ...

    async def status(self, model: str) -> LLMStatus: ...

    async def context_window(self, model: str) -> int | None:
        """Tokens a request may hold (prompt + answer), as the server runs the model; None when unknown."""
        ...

    async def list_models(self) -> list[ModelInfo]:
        """The models the server offers, sorted by name (Ollama /api/tags, OpenAI /v1/models). Raises `LLMError`."""
        ...

    async def close(self) -> None: ...
