"""Timeouts that fit the machine (issue 46, item 3): the first-token, stall and overall limits and the liveness
probe of providers/llm/streaming.py, and the measured speed (speed.py), against the fake LLM servers over real
HTTP for both protocols; then the chat stream's `estimate` event before the first token.

The timing margins are wide (a limit is always several times the scripted pause) so a busy machine passes."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from uuid import UUID

import httpx
import pytest

from ragchat.providers.llm.base import ChatChunk, LLMProvider, LLMTimeout, LLMUnreachable
from ragchat.providers.llm.ollama import OllamaProvider
from ragchat.providers.llm.openai import OpenAIProvider
from ragchat.providers.llm.speed import CallTiming, estimate_prompt_tokens
from ragchat.providers.llm.streaming import StreamLimits, first_token_timeout
from tests.fakes.ollama_server import Reply, closed_port_url
from tests.fakes.plugin import LLMFake
from tests.support.chat import chat, text_of

MODEL = "llama3.2"
MESSAGES = [{"role": "user", "content": "How many holiday days do I get? " * 20}]


def provider_for(kind: str, url: str, limits: StreamLimits) -> LLMProvider:
    if kind == "openai":
        return OpenAIProvider(f"{url}/v1" if not url.endswith("/v1") else url, limits=limits)
    return OllamaProvider(url, limits=limits)


@pytest.fixture
async def make(llm: LLMFake) -> AsyncIterator[Callable[..., LLMProvider]]:
    made: list[LLMProvider] = []

    def build(url: str | None = None, **limits: Any) -> LLMProvider:
        provider = provider_for(llm.provider, url or llm.fake.url, StreamLimits(**limits))
        made.append(provider)
        return provider

    yield build
    for provider in made:
        await provider.close()


async def collect(provider: LLMProvider) -> list[ChatChunk]:
    return [chunk async for chunk in provider.stream_chat(model=MODEL, messages=MESSAGES)]


async def test_slow_start_and_slow_stream_is_not_cut_off(llm: LLMFake, make: Callable[..., LLMProvider]) -> None:
    """The first token comes after longer than LLM_TIMEOUT_S, but the measured prompt speed says a prompt this long
    takes that long: the call waits for it, then streams slowly (each pause well under the stall limit)."""
    provider = make(first_token_floor_s=0.5, stall_s=3.0, probe_interval_s=0.3, probe_timeout_s=2.0)
    # this machine reads 20 tokens/s: the prompt's ~220 tokens allow 3 × 11 s before the first token
    provider.speed.record(MODEL, CallTiming(prompt_tokens=2000, prompt_s=100.0, completion_tokens=0, completion_s=0))
    allowed = first_token_timeout(provider.limits, provider.speed.get(MODEL), estimate_prompt_tokens(MESSAGES))
    assert allowed == pytest.approx(3 * estimate_prompt_tokens(MESSAGES) / 20) and allowed > 30
    words = [f" w{i}" for i in range(8)]
    llm.fake.enqueue(Reply.hang(2.0, Reply.tokens(words, token_delay=0.3)))
    chunks = await collect(provider)
    assert "".join(c.content for c in chunks) == "".join(words)
    assert chunks[-1].done
    # the old single timeout (here 0.5 s) would have ended the call before its first token
    [record] = llm.fake.chat_requests
    assert record.first_byte_at is not None and record.first_byte_at - record.started_at >= 0.5


async def test_first_token_past_its_allowance_times_out(llm: LLMFake, make: Callable[..., LLMProvider]) -> None:
    provider = make(first_token_floor_s=0.5, probe_interval_s=0.2, probe_timeout_s=2.0)
    # 1000 tokens/s: the ~220-token prompt is allowed 3 × 0.22 s (more than the 0.5 s floor)
    provider.speed.record(MODEL, CallTiming(prompt_tokens=1000, prompt_s=1.0, completion_tokens=0, completion_s=0))
    allowed = 3 * estimate_prompt_tokens(MESSAGES) / 1000
    assert allowed == first_token_timeout(provider.limits, provider.speed.get(MODEL), estimate_prompt_tokens(MESSAGES))
    llm.fake.enqueue(Reply.hang(30.0, Reply.text("too late")))
    began = time.monotonic()
    with pytest.raises(LLMTimeout, match=f"did not start answering within {allowed:.2g} s"):
        await collect(provider)
    assert time.monotonic() - began < 30  # ended by the allowance, not by the server


async def test_stall_mid_stream_is_detected(llm: LLMFake, make: Callable[..., LLMProvider]) -> None:
    """Tokens, then nothing while the server stays up (its probe answers): ended after the stall limit."""
    provider = make(first_token_floor_s=60.0, stall_s=1.0, probe_interval_s=0.2, probe_timeout_s=2.0)
    llm.fake.enqueue(Reply.tokens([" one", " two", " three"], token_delay=40.0))
    began = time.monotonic()
    seen: list[str] = []
    with pytest.raises(LLMTimeout, match="no new token for 1 s") as caught:
        async for chunk in provider.stream_chat(model=MODEL, messages=MESSAGES):
            seen.append(chunk.content)
    assert seen == [" one"] and caught.value.code == "llm_timeout"
    assert time.monotonic() - began < 40  # before the server's next token


async def test_refused_connection_fails_fast(llm: LLMFake, make: Callable[..., LLMProvider]) -> None:
    provider = make(closed_port_url(), first_token_floor_s=60.0)
    began = time.monotonic()
    with pytest.raises(LLMUnreachable):
        await collect(provider)
    assert time.monotonic() - began < 60  # not the first-token allowance


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A port that accepts connections (the kernel's backlog) and never answers a byte: a hung server."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


async def test_silent_server_is_found_dead_by_the_probe(
    llm: LLMFake, make: Callable[..., LLMProvider], silent_url: str
) -> None:
    """No bytes at all: a long first-token allowance (10 min) is not waited out, the probes end the call."""
    provider = make(silent_url, first_token_floor_s=600.0, probe_interval_s=0.2, probe_timeout_s=0.5)
    began = time.monotonic()
    with pytest.raises(LLMUnreachable, match="did not respond to 2 checks in a row"):
        await asyncio.wait_for(collect(provider), 120)
    assert time.monotonic() - began < 120


async def test_speed_is_measured_on_every_call(llm: LLMFake, make: Callable[..., LLMProvider]) -> None:
    """From the server's timings where it reports them (Ollama's durations), else the clock; smoothed."""
    provider = make()
    llm.fake.enqueue(Reply.tokens([f" t{i}" for i in range(6)], token_delay=0.05))
    await collect(provider)
    speed = provider.speed.get(MODEL)
    assert speed.samples == 1 and speed.prompt_tps and speed.gen_tps and speed.answer_tokens
    if llm.provider == "ollama":  # the server's counts: eval_count is the deltas + 1 in the fake
        assert speed.answer_tokens == 7
    else:  # the clock's: one token per streamed delta
        assert speed.answer_tokens == 6
    before = speed.gen_tps
    provider.speed.record(MODEL, CallTiming(100, 1.0, 100, 100 / (before * 2)))
    assert provider.speed.get(MODEL).gen_tps == pytest.approx(0.7 * before + 0.3 * before * 2)


async def test_estimate_event_before_the_first_token(
    corpus: dict[str, UUID], live_app: Callable[..., Any], llm: LLMFake
) -> None:
    """The model was measured at 10 prompt tokens/s and 2 answer tokens/s (100-token answers): before its call the
    stream says how long the first token will take (prompt tokens ÷ 10) and the whole answer (+ 100 ÷ 2 s)."""
    provider = provider_for(llm.provider, llm.fake.url, StreamLimits())
    provider.speed.record(MODEL, CallTiming(prompt_tokens=1000, prompt_s=100.0, completion_tokens=100, completion_s=50))
    server = live_app(llm=provider, chat_model=MODEL, chat_use_tools=False)  # search, then one model call
    llm.fake.enqueue(Reply.text("Employees get 25 days of paid holiday per year [1]."))
    events = await chat(server.url, {"message": "How many holiday days do I get?"})
    await provider.close()
    names = [name for name, _ in events]
    [estimate] = [data for name, data in events if name == "estimate"]
    assert names.index("tool_result") < names.index("estimate") < names.index("token"), names
    assert estimate["stage"] == "reading" and estimate["passages"] > 0 and estimate["samples"] == 1
    assert estimate["prompt_tps"] == pytest.approx(10.0) and estimate["gen_tps"] == pytest.approx(2.0)
    assert estimate["first_token_s"] == pytest.approx(estimate["prompt_tokens"] / 10.0)
    assert estimate["total_s"] == pytest.approx(estimate["first_token_s"] + 100 / 2.0)
    assert text_of(events) == "Employees get 25 days of paid holiday per year [1]."
    assert provider.speed.get(MODEL).samples == 2  # the call itself was measured too


async def test_the_rerank_cost_follows_the_measured_speed(
    corpus: dict[str, UUID], live_app: Callable[..., Any], llm: LLMFake
) -> None:
    """GET /api/search/rerank-cost (the settings page): the calls a chat search's rerank makes, and no seconds
    until the model was measured; then the seconds at its measured speed (here 10 prompt and 2 answer tokens/s)."""
    provider = provider_for(llm.provider, llm.fake.url, StreamLimits())
    server = live_app(
        llm=provider, chat_model=MODEL, chat_search_limit=4, rerank_candidates_factor=2, rerank_method="logprobs"
    )
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            before = (await client.get(f"{server.url}/api/search/rerank-cost")).json()
            provider.speed.record(MODEL, CallTiming(1000, 100.0, 100, 50.0))
            after = (await client.get(f"{server.url}/api/search/rerank-cost")).json()
    finally:
        await provider.close()
    assert (before["calls"], before["candidates"], before["method"], before["model"]) == (8, 8, "logprobs", MODEL)
    assert before["seconds"] is None and before["measured_calls"] == 0 and before["provider"] == "llm"
    per_call = (1000 / 3 + 24) / 10 + 1 / 2  # a passage cut to RERANK_PASSAGE_CHARS read, one token written
    assert after["seconds"] == pytest.approx(8 * per_call, abs=0.1)
    assert after["prompt_tokens_per_s"] == pytest.approx(10.0) and after["measured_calls"] == 1
