"""`/api/health`'s LLM status: one failed probe after a good one is confirmed before the page says the model
is away (a busy machine can make one listing miss its time limit), a real outage shows on the next look."""

from __future__ import annotations

import asyncio

from ragchat.providers.llm.base import LLMStatus
from ragchat.providers.llm.status_cache import StatusCache


class Probed:
    """An LLM whose status probes answer from a script: True reachable, False not."""

    name = "ollama"

    def __init__(self, answers: list[bool]) -> None:
        self.answers = answers
        self.calls = 0

    async def status(self, model: str) -> LLMStatus:
        up = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return LLMStatus(self.name, up, model, up, None if up else "Ollama is not reachable")


async def settle(cache: StatusCache) -> LLMStatus:
    """get(), then wait for the background probe it started, then get() again."""
    await cache.get()
    if cache._probe is not None:  # the background probe get() may have started
        await cache._probe
    return await cache.get()


async def test_one_missed_probe_after_a_good_one_is_confirmed_before_it_shows() -> None:
    llm = Probed([True, False, True, False, True])
    cache = StatusCache(llm, "m", refresh_s=0.0)  # type: ignore[arg-type]
    assert (await cache.get()).reachable
    seen = [(await settle(cache)).reachable for _ in range(4)]  # each miss doubted, probed again: up
    assert seen == [True] * 4 and llm.calls >= 5
    await cache.close()


async def test_an_outage_shows_on_the_second_failed_probe() -> None:
    llm = Probed([True, False, False])
    cache = StatusCache(llm, "m", refresh_s=0.0)  # type: ignore[arg-type]
    assert (await cache.get()).reachable
    seen = [(await settle(cache)).reachable for _ in range(3)]
    assert seen[-1] is False and llm.calls <= 6
    await cache.close()


async def test_down_from_the_start_shows_at_once() -> None:
    cache = StatusCache(Probed([False]), "m", refresh_s=60.0)  # type: ignore[arg-type]
    assert not (await cache.get()).reachable
    await asyncio.sleep(0)
    await cache.close()
