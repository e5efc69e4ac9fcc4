"""Any OpenAI-compatible `/v1/chat/completions` server: llama.cpp server, LM Studio, vLLM, OpenAI.

Streamed tool calls arrive as deltas (`index`, then `id`/`name`, then argument fragments); they are
accumulated here and handed to the chat loop complete. JSON-schema calls use `response_format`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator
from typing import Any

import httpx
import openai

from ragchat.providers.llm.base import (
    ChatChunk,
    LLMAuthError,
    LLMBadResponse,
    LLMContextOverflow,
    LLMError,
    LLMModelMissing,
    LLMRateLimited,
    LLMStatus,
    LLMTimeout,
    LLMUnreachable,
    LogprobsReply,
    Message,
    ModelInfo,
    ToolCall,
    ToolsUnsupported,
    looks_like_overflow,
    read_logprobs,
)
from ragchat.providers.llm.speed import CallTiming, SpeedBook, estimate_prompt_tokens
from ragchat.providers.llm.streaming import StreamLimits, guard_stream

log = logging.getLogger(__name__)


def _error_text(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(exc, "message", None) or exc)


class OpenAIProvider:
    name = "openai"

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 120.0,
        connect_timeout_s: float = 5.0,
        limits: StreamLimits | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.limits = limits or StreamLimits(first_token_floor_s=timeout_s)
        self.speed = SpeedBook()
        self._n_ctx: int | None = None
        self._llamacpp: bool | None = None  # the server answers llama.cpp's GET /props (probed once)
        # the client brings its own HTTP stack (httpx2 in openai 3.x): configure it through its own types
        self.client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=api_key or "not-needed",  # local servers ignore it; the client insists on one
            timeout=openai.Timeout(timeout_s, connect=connect_timeout_s),
            max_retries=0,
        )
        # streams: no read timeout here, streaming.py's first-token, stall and overall limits apply instead
        self.stream_client = self.client.with_options(
            timeout=openai.Timeout(self.limits.max_call_s or None, connect=connect_timeout_s)
        )

    # ---- errors -------------------------------------------------------------------------------------------
    def map_error(self, exc: BaseException, model: str) -> LLMError:
        if isinstance(exc, LLMError):
            return exc
        where = self.base_url
        if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException | TimeoutError):
            return LLMTimeout(
                f"The model server at {where} did not answer within {self.timeout_s:g} s. The model may still be "
                "loading or be too slow for this machine: try again, use a smaller CHAT_MODEL, or raise LLM_TIMEOUT_S."
            )
        if isinstance(exc, openai.APIConnectionError | httpx.ConnectError | ConnectionError):
            return LLMUnreachable(
                f"The OpenAI-compatible server is not reachable at {where}. Start it (e.g. `llama-server -m MODEL.gguf "
                "--jinja --port 8080`) or set OPENAI_BASE_URL to where it runs."
            )
        text = _error_text(exc)
        lowered = text.lower()
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return LLMAuthError(f"{where} rejected the API key ({text}). Set OPENAI_API_KEY to a valid key.")
        if isinstance(exc, openai.RateLimitError):
            retry = exc.response.headers.get("retry-after") if exc.response is not None else None
            wait = f" Try again in {retry} s." if retry else " Wait a moment and try again."
            return LLMRateLimited(f"{where} is rate-limiting requests ({text}).{wait}")
        if isinstance(exc, openai.NotFoundError) or "does not exist" in lowered or "model_not_found" in lowered:
            return LLMModelMissing(
                f"The model '{model}' is not available at {where}. Load it in the server, or set CHAT_MODEL to one "
                "of the models GET /v1/models lists."
            )
        if isinstance(exc, openai.APIStatusError | openai.APIError):
            if looks_like_overflow(text):
                return LLMContextOverflow(f"The conversation is too long for the model's context window ({text}).")
            if "tool" in lowered and ("support" in lowered or "jinja" in lowered):
                return ToolsUnsupported(f"{model} does not support tools ({text})")
            status = getattr(exc, "status_code", None)
            return LLMError(
                f"The model server at {where} failed while answering"
                f"{f' (HTTP {status})' if status else ''}: {text[:200]}. Check its logs and try again."
            )
        if isinstance(exc, json.JSONDecodeError | httpx.TransportError | ValueError):
            return LLMBadResponse(
                f"The answer from {where} broke off or could not be read ({str(exc)[:200]}). Check that "
                "OPENAI_BASE_URL points at an OpenAI-compatible server and try again."
            )
        return LLMError(f"The model server at {where} failed: {str(exc)[:200]}")

    # ---- chat -------------------------------------------------------------------------------------------
    def stream_chat(
        self,
        *,
        model: str,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        require_tool: bool = False,
        temperature: float | None = None,
    ) -> AsyncGenerator[ChatChunk, None]:
        kwargs: dict[str, Any] = {"model": model, "messages": [_to_wire(m) for m in messages], "stream": True}
        kwargs["stream_options"] = {"include_usage": True}
        if tools:
            kwargs["tools"] = tools
            if require_tool:
                kwargs["tool_choice"] = "required"
        if temperature is not None:
            kwargs["temperature"] = temperature
        return guard_stream(
            self._stream(model, kwargs),
            model=model,
            prompt_tokens=estimate_prompt_tokens(messages, tools),
            limits=self.limits,
            book=self.speed,
            where=f"The model server at {self.base_url}",
            probe_url=f"{self.base_url}/models",
        )

    async def _create(self, **kwargs: Any) -> Any:
        return await self._send(self.client, kwargs)

    async def _send(self, client: openai.AsyncOpenAI, kwargs: dict[str, Any]) -> Any:
        """One request, sent again once if the connection dropped before any answer: llama.cpp's server
        closes a connection after each streamed reply while advertising keep-alive, and the next request on
        it sometimes fails with "Server disconnected without sending a response"."""
        try:
            return await client.chat.completions.create(**kwargs)
        except openai.APITimeoutError:
            raise
        except openai.APIConnectionError:
            log.debug("connection dropped before an answer: retrying once")
            return await client.chat.completions.create(**kwargs)

    async def _stream(self, model: str, kwargs: dict[str, Any]) -> AsyncGenerator[ChatChunk, None]:
        pending: dict[int, dict[str, str]] = {}
        finish: str | None = None
        usage = (0, 0)
        timing: CallTiming | None = None
        try:
            stream = await self._send(self.stream_client, kwargs)
            try:
                async for chunk in stream:
                    if chunk.usage is not None:
                        usage = (chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
                    timing = _timing(chunk.model_extra) or timing
                    for choice in chunk.choices:
                        delta = choice.delta
                        if delta.tool_calls or any(v for k, v in (delta.model_extra or {}).items() if "reason" in k):
                            yield ChatChunk()  # tool-call fragments and reasoning: signs of life (streaming.py)
                        for part in delta.tool_calls or []:
                            slot = pending.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                            if part.id:
                                slot["id"] = part.id
                            if part.function is not None:
                                slot["name"] += part.function.name or ""
                                slot["arguments"] += part.function.arguments or ""
                        if delta.content:
                            yield ChatChunk(content=delta.content)
                        if choice.finish_reason:
                            finish = choice.finish_reason
            finally:
                await stream.close()
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception as exc:
            raise self.map_error(exc, model) from exc
        calls = [_tool_call(i, slot) for i, slot in sorted(pending.items()) if slot["name"]]
        yield ChatChunk(
            tool_calls=calls,
            done=True,
            finish_reason="tool_calls" if calls and finish in (None, "tool_calls") else (finish or "stop"),
            prompt_tokens=usage[0],
            completion_tokens=usage[1],
            timing=timing,
        )

    async def complete_json(
        self,
        *,
        model: str,
        messages: list[Message],
        schema: dict[str, Any],
        timeout_s: float,
        max_tokens: int | None = None,
    ) -> str:
        try:
            response = await asyncio.wait_for(
                self._create(
                    model=model,
                    messages=[_to_wire(m) for m in messages],  # type: ignore[misc]
                    temperature=0,
                    **({"max_tokens": max_tokens} if max_tokens else {}),
                    response_format={
                        "type": "json_schema",
                        "json_schema": {"name": "response", "schema": schema, "strict": True},
                    },
                ),
                timeout_s,
            )
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception as exc:
            raise self.map_error(exc, model) from exc
        if not response.choices:
            return ""
        return response.choices[0].message.content or ""

    async def complete_logprobs(
        self,
        *,
        model: str,
        messages: list[Message],
        timeout_s: float,
        top_logprobs: int = 20,
        max_tokens: int = 1,
    ) -> LogprobsReply:
        """`logprobs: true, top_logprobs: N` on /v1/chat/completions (llama.cpp: pre-sampling probabilities).
        llama.cpp also gets `cache_prompt: true`, so a burst of calls sharing their start (the reranker's
        instructions and query) evaluates that prefix once per slot; other servers may reject the unknown field."""
        extra: dict[str, Any] = {"cache_prompt": True} if await self.is_llamacpp() else {}
        try:
            response = await asyncio.wait_for(
                self._create(
                    model=model,
                    messages=[_to_wire(m) for m in messages],  # type: ignore[misc]
                    temperature=0,
                    max_tokens=max_tokens,
                    logprobs=True,
                    top_logprobs=top_logprobs,
                    **({"extra_body": extra} if extra else {}),
                ),
                timeout_s,
            )
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception as exc:
            raise self.map_error(exc, model) from exc
        if not response.choices:
            return LogprobsReply("", None, "the answer has no choices")
        choice: dict[str, Any] = response.choices[0].to_dict(warnings=False)
        message = choice.get("message")
        content = str(message.get("content") or "") if isinstance(message, dict) else ""
        logprobs = choice.get("logprobs")
        if logprobs is None:
            return LogprobsReply(content, None)
        if not isinstance(logprobs, dict):
            return LogprobsReply(content, None, f"logprobs is {type(logprobs).__name__}")
        tokens, problem = read_logprobs(logprobs.get("content"))
        return LogprobsReply(content, tokens, problem)

    async def is_llamacpp(self) -> bool:
        if self._llamacpp is None:
            self._llamacpp = await self.context_length() is not None
        return self._llamacpp

    # ---- status -------------------------------------------------------------------------------------------
    async def list_models(self) -> list[ModelInfo]:
        """/v1/models: ids only (the protocol says nothing of sizes or families)."""
        try:
            page = await self.client.models.list()
        except Exception as exc:
            raise self.map_error(exc, "") from exc
        return [ModelInfo(name) for name in sorted({m.id for m in page.data})]

    async def status(self, model: str) -> LLMStatus:
        try:
            names = [m.name for m in await asyncio.wait_for(self.list_models(), 3.0)]
        except LLMAuthError as exc:
            return LLMStatus(self.name, True, model, False, exc.message)
        except Exception as exc:
            message = exc.message if isinstance(exc, LLMError) else str(exc)
            return LLMStatus(self.name, False, model, False, message)
        # llama.cpp serves whatever model it loaded, under its file name: a single model answers any name
        available = model in names or len(names) == 1
        message = None
        if not available:
            message = (
                f"The model '{model}' is not served at {self.base_url} (it serves: {', '.join(names[:5]) or 'none'}). "
                "Set CHAT_MODEL to one of those."
            )
        return LLMStatus(self.name, True, model, available, message, await self.context_length())

    async def context_window(self, model: str) -> int | None:
        if self._n_ctx is None:
            self._n_ctx = await self.context_length()
        return self._n_ctx

    async def context_length(self) -> int | None:
        """llama.cpp reports its context size at `/props`; other servers don't say (None)."""
        root = self.base_url.removesuffix("/v1")
        try:
            async with httpx.AsyncClient(timeout=3.0) as http:
                response = await http.get(f"{root}/props")
            settings = response.json().get("default_generation_settings", {})
            n_ctx = settings.get("n_ctx")
            return int(n_ctx) if n_ctx else None
        except Exception:
            return None

    async def close(self) -> None:
        await self.client.close()


def _timing(extra: dict[str, Any] | None) -> CallTiming | None:
    """llama.cpp's `timings` (`prompt_n` tokens read in `prompt_ms`, `predicted_n` written in `predicted_ms`; a
    cached prompt prefix is not in `prompt_n`); other servers send none."""
    timings = (extra or {}).get("timings")
    if not isinstance(timings, dict):
        return None

    def number(key: str) -> float:
        value = timings.get(key)
        return float(value) if isinstance(value, int | float) and value > 0 else 0.0

    if not (number("prompt_ms") or number("predicted_ms")):
        return None
    return CallTiming(
        int(number("prompt_n")), number("prompt_ms") / 1000, int(number("predicted_n")),
        number("predicted_ms") / 1000, "server",
    )  # fmt: skip


def _tool_call(index: int, slot: dict[str, str]) -> ToolCall:
    raw = slot["arguments"].strip()
    arguments: dict[str, Any] | str
    try:
        parsed = json.loads(raw) if raw else {}
        arguments = parsed if isinstance(parsed, dict) else raw
    except json.JSONDecodeError:
        arguments = raw
    return ToolCall(slot["id"] or f"call_{index + 1}", slot["name"], arguments)


def _to_wire(message: Message) -> dict[str, Any]:
    role = message["role"]
    if role == "assistant" and message.get("tool_calls"):
        return {
            "role": "assistant",
            "content": message.get("content") or None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": json.dumps(c.arguments) if isinstance(c.arguments, dict) else c.arguments,
                    },
                }
                for c in message["tool_calls"]
            ],
        }
    if role == "tool":
        return {"role": "tool", "tool_call_id": message.get("tool_call_id", ""), "content": message.get("content", "")}
    return {"role": role, "content": message.get("content", "")}
