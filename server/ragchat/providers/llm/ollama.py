"""Ollama's native API (`/api/chat`) through the official client.

What Ollama and its models reject is known here and nowhere else:
- some releases answer 400 "... does not support thinking" when `think` is sent to such a model: the call
  is retried once without it and `think` is not sent for that model again;
- models without tool support answer 400 "... does not support tools": `ToolsUnsupported`, and the chat
  loop falls back to retrieve-then-answer.

JSON-schema calls (the reranker's burst of parallel scoring requests) go through `OllamaShards`: httpx's
connection pool (httpcore 1.0) does O(connections × queued requests) work every time a request starts or
ends (encode/httpcore#1035), so thirty parallel calls through one pool leave ~30 ms after the first; a few
small pools, least busy first, keep that near zero (bench/rerank.py measures it).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, cast

import httpx
import ollama
import pydantic
from ollama import ResponseError

from ragchat.providers.llm.base import (
    ChatChunk,
    LLMBadResponse,
    LLMContextOverflow,
    LLMError,
    LLMModelMissing,
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
from ragchat.providers.llm.streaming import QUIET_TOOL_TOKENS, StreamLimits, guard_stream

log = logging.getLogger(__name__)

OLLAMA_DEFAULT_NUM_CTX = 4096
# httpx allows 100 connections by default: more open chats than that would queue inside the client.
CHAT_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
# what a reused connection that the server had just closed raises before any byte of the answer
STALE_CONNECTION = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


class OllamaShards:
    """`chat()` like `ollama.AsyncClient`, sent through the least busy of several clients to one host."""

    def __init__(self, clients: list[Any]) -> None:
        if not clients:
            raise ValueError("OllamaShards needs at least one client")
        self.clients = clients
        self.in_flight = [0] * len(clients)
        self.calls = [0] * len(clients)  # calls sent through each shard (for tests and benches)

    @classmethod
    def for_host(cls, host: str, shards: int, timeout: httpx.Timeout | float | None = None) -> OllamaShards:
        return cls([ollama.AsyncClient(host=host, timeout=timeout) for _ in range(max(1, shards))])

    async def chat(self, **kwargs: Any) -> Any:
        i = min(range(len(self.clients)), key=self.in_flight.__getitem__)
        self.in_flight[i] += 1
        self.calls[i] += 1
        try:
            return await self.clients[i].chat(**kwargs)
        finally:
            self.in_flight[i] -= 1

    async def close(self) -> None:
        for client in self.clients:
            await client.close()


def model_names(list_response: Any) -> set[str]:
    names: set[str] = set()
    for model in getattr(list_response, "models", []) or []:
        name = getattr(model, "model", None) or getattr(model, "name", None)
        if name:
            names.add(name)
            names.add(name.removesuffix(":latest"))
    return names


def model_infos(list_response: Any) -> list[ModelInfo]:
    """/api/tags as `ModelInfo`s, by name (one per model; `:latest` kept as the server names it)."""
    infos: dict[str, ModelInfo] = {}
    for model in getattr(list_response, "models", []) or []:
        name = getattr(model, "model", None) or getattr(model, "name", None)
        if not name:
            continue
        size = getattr(model, "size", None)
        details = getattr(model, "details", None)
        family = getattr(details, "family", None) if details is not None else None
        infos[name] = ModelInfo(name, int(size) if isinstance(size, int) else None, family or None)
    return [infos[name] for name in sorted(infos)]


def _short(exc: BaseException, limit: int = 200) -> str:
    text = str(getattr(exc, "error", None) or exc).strip() or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


class OllamaProvider:
    name = "ollama"

    def __init__(
        self,
        host: str,
        *,
        timeout_s: float = 120.0,
        connect_timeout_s: float = 5.0,
        json_shards: int = 8,
        limits: StreamLimits | None = None,
    ) -> None:
        self.host = host
        self.timeout_s = timeout_s
        self.limits = limits or StreamLimits(first_token_floor_s=timeout_s)
        self.speed = SpeedBook()
        timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        # streams: no read timeout here, streaming.py's first-token, stall and overall limits apply instead
        cap = self.limits.max_call_s or None
        stream_timeout = httpx.Timeout(cap, connect=connect_timeout_s)
        self.client = ollama.AsyncClient(host=host, timeout=stream_timeout, limits=CHAT_LIMITS)
        self.json_client = OllamaShards.for_host(host, json_shards, timeout)
        self._no_think: set[str] = set()  # models this server rejected `think` for

    # ---- errors -------------------------------------------------------------------------------------------
    def unreachable_message(self) -> str:
        return (
            f"Ollama is not reachable at {self.host}. Start it with `ollama serve` "
            "(or set OLLAMA_HOST to where it runs)."
        )

    def map_error(self, exc: BaseException, model: str) -> LLMError:
        """The `LLMError` for anything the client raised."""
        if isinstance(exc, LLMError):
            return exc
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | ConnectionError):
            return LLMUnreachable(self.unreachable_message())
        if isinstance(exc, httpx.TimeoutException | TimeoutError):
            return LLMTimeout(
                f"Ollama did not answer within {self.timeout_s:g} s. The model may still be loading or be too slow "
                "for this machine: try again, use a smaller CHAT_MODEL, or raise LLM_TIMEOUT_S."
            )
        if isinstance(exc, ResponseError):
            text = str(exc.error)
            if "does not support tools" in text:
                return ToolsUnsupported(f"{model} does not support tools")
            if looks_like_overflow(text):
                return LLMContextOverflow(f"The conversation is too long for the model's context window ({text}).")
            if exc.status_code == 404 or "not found" in text.lower():
                return LLMModelMissing(
                    f"The model '{model}' is not available in Ollama. Pull it with `ollama pull {model}` "
                    "(or set CHAT_MODEL)."
                )
            return LLMError(
                f"Ollama failed while answering: {_short(exc)}. Check the Ollama logs (the `ollama serve` output), "
                f"make sure `ollama run {model}` works, then try again."
            )
        if isinstance(exc, json.JSONDecodeError | pydantic.ValidationError | httpx.TransportError):
            return LLMBadResponse(
                f"Ollama's answer broke off or could not be read ({_short(exc)}). Check that OLLAMA_HOST "
                f"({self.host}) points at Ollama itself (not a proxy), that `ollama serve` is healthy, and try again."
            )
        return LLMError(f"Ollama failed: {_short(exc)}")

    @staticmethod
    def _think_rejected(exc: BaseException) -> bool:
        return isinstance(exc, ResponseError) and exc.status_code == 400 and "thinking" in str(exc.error).lower()

    # ---- chat -------------------------------------------------------------------------------------------
    def stream_chat(
        self,
        *,
        model: str,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        require_tool: bool = False,  # Ollama has no tool_choice: the system prompt asks instead
        temperature: float | None = None,
    ) -> AsyncGenerator[ChatChunk, None]:
        raw = self._stream(model, [_to_wire(m) for m in messages], tools, temperature)
        return guard_stream(
            raw,
            model=model,
            prompt_tokens=estimate_prompt_tokens(messages, tools),
            limits=self.limits,
            book=self.speed,
            where=f"Ollama at {self.host}",
            probe_url=f"{self.host.rstrip('/')}/api/version",
            quiet_tokens=QUIET_TOOL_TOKENS if tools else 1,  # Ollama sends a tool call once it is complete
        )

    async def _stream(
        self, model: str, wire: list[dict[str, Any]], tools: list[dict[str, Any]] | None, temperature: float | None
    ) -> AsyncGenerator[ChatChunk, None]:
        calls = 0
        redialled = False
        while True:
            think = model not in self._no_think
            started = False
            try:
                extra: dict[str, Any] = {"think": False} if think else {}
                if temperature is not None:
                    extra["options"] = {"temperature": temperature}
                stream = await self.client.chat(model=model, messages=wire, tools=tools, stream=True, **extra)
                async with aclosing(cast(AsyncGenerator[Any, None], stream)):  # the client returns a generator
                    async for part in stream:
                        started = True
                        message = part.message
                        chunk = ChatChunk(content=message.content or "")
                        if getattr(message, "thinking", None):  # reasoning it does not pass on: a sign of life
                            yield ChatChunk()
                        for call in message.tool_calls or []:
                            calls += 1
                            chunk.tool_calls.append(
                                ToolCall(f"call_{calls}", str(call.function.name), dict(call.function.arguments or {}))
                            )
                        if part.done:
                            chunk.done = True
                            chunk.finish_reason = part.done_reason or "stop"
                            chunk.prompt_tokens = int(part.prompt_eval_count or 0)
                            chunk.completion_tokens = int(part.eval_count or 0)
                            chunk.timing = _timing(part)
                        if chunk.content or chunk.tool_calls or chunk.done:
                            yield chunk
                return
            except (asyncio.CancelledError, GeneratorExit):
                raise
            except Exception as exc:
                if not started and not redialled and isinstance(exc, STALE_CONNECTION):
                    # a kept-alive connection the server closed as the request went out (an idle timeout): nothing
                    # was answered yet, so the request is sent once more, on a new connection
                    redialled = True
                    log.debug("Ollama dropped the connection before answering (%r): sending once more", exc)
                    continue
                if started or not think or not self._think_rejected(exc):
                    raise self.map_error(exc, model) from exc
            log.info("Ollama rejects `think` for %s: sending it no more", model)
            self._no_think.add(model)

    async def complete_json(
        self,
        *,
        model: str,
        messages: list[Message],
        schema: dict[str, Any],
        timeout_s: float,
        max_tokens: int | None = None,
    ) -> str:
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": [_to_wire(m) for m in messages],
            "stream": False,
            "format": schema,
            "options": {"temperature": 0, **({"num_predict": max_tokens} if max_tokens else {})},
        }
        try:
            if model not in self._no_think:
                try:
                    response = await asyncio.wait_for(self.json_client.chat(**kwargs, think=False), timeout_s)
                    return str(response.message.content or "")
                except ResponseError as exc:
                    if not self._think_rejected(exc):
                        raise
                    log.info("%s rejects the think option; JSON calls will omit it", model)
                    self._no_think.add(model)
            response = await asyncio.wait_for(self.json_client.chat(**kwargs), timeout_s)
            return str(response.message.content or "")
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception as exc:
            raise self.map_error(exc, model) from exc

    async def complete_logprobs(
        self,
        *,
        model: str,
        messages: list[Message],
        timeout_s: float,
        top_logprobs: int = 20,
        max_tokens: int = 1,
    ) -> LogprobsReply:
        """`logprobs: true, top_logprobs: N` on /api/chat (Ollama >= 0.12.11; older servers ignore both and
        answer without `logprobs`: `tokens` is None)."""
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": [_to_wire(m) for m in messages],
            "stream": False,
            "logprobs": True,
            "top_logprobs": top_logprobs,
            "options": {"temperature": 0, "num_predict": max_tokens},
        }
        try:
            if model not in self._no_think:
                try:
                    response = await asyncio.wait_for(self.json_client.chat(**kwargs, think=False), timeout_s)
                    return _logprobs_reply(response)
                except ResponseError as exc:
                    if not self._think_rejected(exc):
                        raise
                    self._no_think.add(model)
            return _logprobs_reply(await asyncio.wait_for(self.json_client.chat(**kwargs), timeout_s))
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception as exc:
            raise self.map_error(exc, model) from exc

    # ---- status -------------------------------------------------------------------------------------------
    async def list_models(self) -> list[ModelInfo]:
        """/api/tags: every pulled model, with its size and family."""
        try:
            listing = await asyncio.wait_for(self.client.list(), self.timeout_s)
        except Exception as exc:
            raise self.map_error(exc, "") from exc
        return model_infos(listing)

    async def status(self, model: str) -> LLMStatus:
        try:
            listing = await asyncio.wait_for(self.client.list(), 3.0)
            names = model_names(listing)
        except Exception:
            return LLMStatus(self.name, False, model, False, self.unreachable_message())
        available = model in names
        message = (
            None
            if available
            else f"The model '{model}' is not available in Ollama. Pull it with `ollama pull {model}` "
            "(or set CHAT_MODEL)."
        )
        return LLMStatus(self.name, True, model, available, message, await self._context_length(model))

    async def context_window(self, model: str) -> int | None:
        """Ollama runs a model with `num_ctx` tokens (4096 by default since 0.6; the model's own maximum is
        larger) and silently drops the start of longer prompts: fit to the smaller of the two."""
        return min(OLLAMA_DEFAULT_NUM_CTX, await self._context_length(model) or OLLAMA_DEFAULT_NUM_CTX)

    async def _context_length(self, model: str) -> int | None:
        try:
            info = await asyncio.wait_for(self.client.show(model), 3.0)
        except Exception:
            return None
        for key, value in (getattr(info, "modelinfo", None) or {}).items():
            if key.endswith(".context_length") and isinstance(value, int):
                return value
        return None

    async def close(self) -> None:
        await self.client.close()
        await self.json_client.close()


def _timing(part: Any) -> CallTiming | None:
    """`prompt_eval_count`/`prompt_eval_duration` and `eval_count`/`eval_duration` (nanoseconds) of the last part."""
    prompt_ns, eval_ns = part.prompt_eval_duration or 0, part.eval_duration or 0
    if not (prompt_ns or eval_ns):
        return None
    return CallTiming(
        int(part.prompt_eval_count or 0), prompt_ns / 1e9, int(part.eval_count or 0), eval_ns / 1e9, "server"
    )


def _logprobs_reply(response: Any) -> LogprobsReply:
    raw = getattr(response, "logprobs", None)
    entries = None if raw is None else [e.model_dump() if hasattr(e, "model_dump") else e for e in raw]
    tokens, problem = read_logprobs(entries)
    return LogprobsReply(str(response.message.content or ""), tokens, problem)


def _to_wire(message: Message) -> dict[str, Any]:
    """A neutral message in Ollama's format (tool calls with dict arguments, tool results by name)."""
    role = message["role"]
    if role == "assistant" and message.get("tool_calls"):
        return {
            "role": "assistant",
            "content": message.get("content") or "",
            "tool_calls": [
                {"function": {"name": c.name, "arguments": c.arguments if isinstance(c.arguments, dict) else {}}}
                for c in message["tool_calls"]
            ],
        }
    if role == "tool":
        return {"role": "tool", "tool_name": message.get("name", ""), "content": message.get("content", "")}
    return {"role": role, "content": message.get("content", "")}
