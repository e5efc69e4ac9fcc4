"""Timeouts that fit the machine, for every streamed model call of every provider (`guard_stream`).

One wall-clock timeout per call cut off a slow CPU model that was working (a first call took 277 s at load 2)
and waited as long for a dead server. Instead:
- **first token**: the time allowed until the model's first streamed token is sized to the prompt: its tokens ÷
  the model's measured prompt speed (speed.py) × `first_token_factor`, never less than `first_token_floor_s`
  (LLM_TIMEOUT_S); a model never measured is assumed to read `UNMEASURED_PROMPT_TPS` tokens a second (at most
  factor × the floor: 360 s by default);
- **stall**: once streaming, at most `stall_s` (LLM_STALL_TIMEOUT_S) without a new token, more when the server
  holds tokens back (Ollama sends a tool call only once it is complete: `quiet_tokens` ÷ generation speed);
- **cap**: `max_call_s` (LLM_MAX_CALL_S, 0 = none) for the whole call;
- **liveness**: while waiting longer than `probe_interval_s`, the server's `probe_url` is asked (any HTTP answer
  counts); `probe_failures` unanswered probes in a row end the call as unreachable within seconds, however long
  the first-token allowance is. A refused connection fails at once (the provider's own error).
Every call that ends is measured into the provider's `SpeedBook`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass

import httpx

from ragchat.providers.llm.base import ChatChunk, LLMTimeout, LLMUnreachable
from ragchat.providers.llm.speed import CallTiming, ModelSpeed, SpeedBook

log = logging.getLogger(__name__)

UNMEASURED_PROMPT_TPS = 4.0  # a 1.5B model on 2 busy cores reads ~10-40 tokens/s: assume slower until measured
UNMEASURED_GEN_TPS = 0.25  # ... and writes ~0.3-5 tokens/s
QUIET_TOOL_TOKENS = 128  # tokens a server may generate without sending any (a tool call it holds back)


@dataclass(frozen=True)
class StreamLimits:
    first_token_floor_s: float = 120.0
    first_token_factor: float = 3.0
    stall_s: float = 30.0
    max_call_s: float = 3600.0
    probe_interval_s: float = 5.0
    probe_timeout_s: float = 5.0
    probe_failures: int = 2


def _unmeasured_cap(limits: StreamLimits) -> float:
    """A guess from assumed speeds is worth at most factor × the floor (360 s by default)."""
    return limits.first_token_floor_s * limits.first_token_factor


def quiet_allowance(limits: StreamLimits, speed: ModelSpeed, quiet_tokens: int) -> float:
    """Seconds the server may spend writing `quiet_tokens` it does not send (0 when it sends every token)."""
    if quiet_tokens <= 1:
        return 0.0
    if speed.gen_tps:
        return limits.first_token_factor * quiet_tokens / speed.gen_tps
    return min(quiet_tokens / UNMEASURED_GEN_TPS, _unmeasured_cap(limits))


def first_token_timeout(limits: StreamLimits, speed: ModelSpeed, prompt_tokens: int, quiet_tokens: int = 1) -> float:
    """max(floor, factor × (prompt tokens ÷ measured prompt speed + held-back tokens ÷ generation speed)); a model
    never measured gets its tokens ÷ the assumed slow speeds, at most factor × the floor."""
    quiet = quiet_allowance(limits, speed, quiet_tokens)
    if speed.prompt_tps:
        return max(limits.first_token_floor_s, limits.first_token_factor * prompt_tokens / speed.prompt_tps + quiet)
    guess = min(prompt_tokens / UNMEASURED_PROMPT_TPS + quiet, _unmeasured_cap(limits))
    return max(limits.first_token_floor_s, guess)


def stall_timeout(limits: StreamLimits, speed: ModelSpeed, quiet_tokens: int = 1) -> float:
    return max(limits.stall_s, quiet_allowance(limits, speed, quiet_tokens))


class _Prober:
    """Asks `url` every `probe_interval_s` while a call waits; after `probe_failures` misses in a row, ends the
    wait (the caller's timeout is rescheduled to now) and says the server is dead."""

    def __init__(self, url: str, limits: StreamLimits) -> None:
        self.url, self.limits = url, limits
        self.dead = False
        self.scope: asyncio.Timeout | None = None  # the wait in progress

    async def _alive(self, http: httpx.AsyncClient) -> bool:
        try:
            await http.get(self.url)
        except httpx.HTTPError:
            return False
        return True  # any HTTP answer: the server is there

    async def run(self) -> None:
        misses = 0
        async with httpx.AsyncClient(timeout=self.limits.probe_timeout_s) as http:
            while True:
                await asyncio.sleep(self.limits.probe_interval_s)
                misses = 0 if await self._alive(http) else misses + 1
                if misses >= self.limits.probe_failures:
                    self.dead = True
                    if self.scope is not None:
                        self.scope.reschedule(asyncio.get_running_loop().time())
                    return


async def guard_stream(
    raw: AsyncGenerator[ChatChunk, None],
    *,
    model: str,
    prompt_tokens: int,
    limits: StreamLimits,
    book: SpeedBook,
    where: str,
    probe_url: str | None,
    quiet_tokens: int = 1,
) -> AsyncGenerator[ChatChunk, None]:
    """`raw` (a provider's stream) under the first-token, stall and overall limits, measured into `book`.
    Empty chunks from `raw` are signs of life (tokens the provider does not pass on) and are not yielded."""
    speed = book.get(model)
    first_allowed = first_token_timeout(limits, speed, prompt_tokens, quiet_tokens)
    stall_allowed = stall_timeout(limits, speed, quiet_tokens)
    loop = asyncio.get_running_loop()
    began = loop.time()
    cap = began + limits.max_call_s if limits.max_call_s > 0 else math.inf
    first_at: float | None = None
    last_at = began
    content_chunks = 0
    prober = _Prober(probe_url, limits) if probe_url else None
    probing = asyncio.create_task(prober.run(), name="llm-probe") if prober else None
    try:
        async with aclosing(raw):
            while True:
                limit = began + first_allowed if first_at is None else last_at + stall_allowed
                try:
                    async with asyncio.timeout_at(min(limit, cap)) as scope:
                        if prober is not None:
                            prober.scope = scope
                        chunk = await anext(raw)
                except StopAsyncIteration:
                    return
                except TimeoutError as exc:
                    if prober is not None and prober.dead:
                        raise LLMUnreachable(
                            f"{where} stopped answering: it did not respond to {limits.probe_failures} checks in a "
                            "row. Check that the model server is running, then try again."
                        ) from exc
                    raise _timeout(where, limits, first_at is None, limit > cap, first_allowed, stall_allowed,
                                   prompt_tokens, speed) from exc  # fmt: skip
                finally:
                    if prober is not None:
                        prober.scope = None
                now = loop.time()
                last_at = now
                if first_at is None:
                    first_at = now
                if chunk.content:
                    content_chunks += 1
                if chunk.done:
                    book.record(model, _timing(chunk, prompt_tokens, content_chunks, first_at - began, now - first_at))
                if chunk.content or chunk.tool_calls or chunk.done:
                    yield chunk
    finally:
        if probing is not None:
            probing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await probing


def _timing(chunk: ChatChunk, prompt_estimate: int, content_chunks: int, to_first: float, after: float) -> CallTiming:
    """The server's figures when it gave them, else the clock's (prompt: time to the first token)."""
    if chunk.timing is not None:
        return chunk.timing
    return CallTiming(
        chunk.prompt_tokens or prompt_estimate, to_first, chunk.completion_tokens or content_chunks, after
    )


def _timeout(
    where: str,
    limits: StreamLimits,
    before_first: bool,
    capped: bool,
    first_allowed: float,
    stall_allowed: float,
    prompt_tokens: int,
    speed: ModelSpeed,
) -> LLMTimeout:
    if capped:
        return LLMTimeout(
            f"{where} was still answering after {limits.max_call_s:g} s, the most one model call may take "
            "(LLM_MAX_CALL_S). Ask for a shorter answer, use a smaller CHAT_MODEL, or raise LLM_MAX_CALL_S."
        )
    if before_first:
        measured = f" at the measured {speed.prompt_tps:.1f} tokens/s" if speed.prompt_tps else ""
        return LLMTimeout(
            f"{where} did not start answering within {_secs(first_allowed)} s (a prompt of about {prompt_tokens} "
            f"tokens{measured}). The model may still be loading or be too slow for this machine: try again, use a "
            "smaller CHAT_MODEL, or raise LLM_TIMEOUT_S (the least time allowed before the first token)."
        )
    return LLMTimeout(
        f"{where} stopped sending in the middle of its answer: no new token for {_secs(stall_allowed)} s "
        "(LLM_STALL_TIMEOUT_S). Check the model server's logs and try again."
    )


def _secs(seconds: float) -> str:
    return f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.2g}"
