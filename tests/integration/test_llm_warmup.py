"""LLM_WARMUP (providers/llm/warmup.py): a server that starts with a chat model never measured makes one short
streamed call to measure it, so the first question already has its estimate and a first-token allowance fitted to
the model; a model with figures (kept across restarts) is not called; a dead LLM server does not stop the start.
Over real HTTP against the fake LLM servers of both protocols."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from ragchat.providers.llm import build_llm
from ragchat.providers.llm.speed import CallTiming
from ragchat.providers.llm.warmup import PASSAGE
from ragchat.settings import LLMSettings
from tests.fakes.ollama_server import Reply, closed_port_url
from tests.fakes.plugin import LLMFake

MODEL = "cpu-model:1.5b"
COUNT = "one, two, three, four, five, six, seven, eight, nine, ten, eleven, twelve, thirteen, fourteen, fifteen"


async def _measured(provider: Any, model: str, timeout_s: float = 60.0) -> bool:
    """Polls the provider's book: the warm-up runs in the background of the start (no wall-clock assert)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while loop.time() < end:
        if provider.speed.get(model).samples:
            return True
        await asyncio.sleep(0.1)
    return False


async def test_a_model_never_measured_is_measured_when_the_server_starts(
    live_app: Callable[..., Any], llm: LLMFake
) -> None:
    llm.fake.enqueue(Reply.text(COUNT))
    if hasattr(llm.fake, "models"):  # the OpenAI fake serves only the models it lists
        llm.fake.models.append(MODEL)  # type: ignore[union-attr]
    provider = build_llm(LLMSettings(**llm.settings, chat_model=MODEL))
    try:
        server = live_app(llm=provider, chat_model=MODEL, llm_warmup=True)
        assert await _measured(provider, MODEL)
        [call] = llm.fake.chat_requests
        assert PASSAGE in str(call.body) and call.body.get("model") == MODEL
        speed = provider.speed.get(MODEL)
        assert speed.prompt_tps and speed.samples == 1
        async with httpx.AsyncClient(timeout=30) as client:  # the settings page's rerank cost now has seconds
            cost = (await client.get(f"{server.url}/api/search/rerank-cost")).json()
        assert cost["measured_calls"] == 1 and cost["seconds"] is not None
    finally:
        await provider.close()


async def test_a_measured_model_is_not_called(live_app: Callable[..., Any], llm: LLMFake) -> None:
    provider = build_llm(LLMSettings(**llm.settings, chat_model=MODEL))
    provider.speed.record(MODEL, CallTiming(prompt_tokens=500, prompt_s=10.0, completion_tokens=50, completion_s=5.0))
    try:
        server = live_app(llm=provider, chat_model=MODEL, llm_warmup=True)
        async with httpx.AsyncClient(timeout=30) as client:
            assert (await client.get(f"{server.url}/livez")).status_code == 200
        await asyncio.sleep(1.0)  # a warm-up would have been sent by now (the fake answers at once)
        assert llm.fake.chat_requests == []
    finally:
        await provider.close()


@pytest.mark.parametrize("protocol", ["ollama", "openai"])
async def test_a_dead_llm_server_does_not_stop_the_start(live_app: Callable[..., Any], protocol: str) -> None:
    url = closed_port_url()
    where = {"llm_provider": protocol, "ollama_host": url, "openai_base_url": f"{url}/v1"}
    provider = build_llm(LLMSettings(**where, chat_model=MODEL))
    try:
        server = live_app(llm=provider, chat_model=MODEL, llm_warmup=True)
        async with httpx.AsyncClient(timeout=30) as client:
            assert (await client.get(f"{server.url}/livez")).status_code == 200
            assert (await client.get(f"{server.url}/api/documents")).status_code == 200
        assert provider.speed.get(MODEL).samples == 0
    finally:
        await provider.close()
