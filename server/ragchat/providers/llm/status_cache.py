"""The chat model's status for `/api/health`, probed in the background and read from memory.

Every open tab polls `/api/health`; asking the LLM server each time (a listing and a model's details, 3 s
timeout each) made the page slow exactly when the LLM was down. `StatusCache.get` answers from the last probe
and starts a new one in the background once that is older than `refresh_s`; only the very first call waits
for a probe. A failed probe after a good one is confirmed by a second probe before health says the model is
away: on a busy machine (an Ollama generating on the same CPU) one listing can miss its 3 s, and the page then
showed "not reachable" for a whole `refresh_s` while chat worked.
"""

from __future__ import annotations

import asyncio
import logging
import time

from ragchat.providers.llm.base import LLMProvider, LLMStatus

log = logging.getLogger(__name__)


class StatusCache:
    def __init__(self, llm: LLMProvider, model: str, *, refresh_s: float = 15.0) -> None:
        self.llm = llm
        self.model = model
        self.refresh_s = refresh_s
        self._value: LLMStatus | None = None
        self._checked_at = 0.0
        self._probe: asyncio.Task[LLMStatus] | None = None
        self._doubting = False  # a probe failed after a good one: the next one confirms or clears it

    def start(self) -> None:
        """Probe now, without waiting (the server's start)."""
        self._refresh()

    def _refresh(self) -> asyncio.Task[LLMStatus]:
        if self._probe is None or self._probe.done():
            self._probe = asyncio.create_task(self._run(), name="llm-status")
        return self._probe

    async def _run(self) -> LLMStatus:
        try:
            value = await self.llm.status(self.model)
        except Exception as exc:  # a provider's status() answers in words; anything else is unreachable too
            log.warning("the LLM status probe failed: %s", type(exc).__name__)
            value = LLMStatus(self.llm.name, False, self.model, False, f"the LLM status probe failed: {exc}")
        previous = self._value
        if not value.reachable and previous is not None and previous.reachable and not self._doubting:
            self._doubting = True  # keep the good answer; the next get() probes again at once
            self._checked_at = float("-inf")
            return previous
        self._doubting = False
        self._value, self._checked_at = value, time.monotonic()
        return value

    async def get(self) -> LLMStatus:
        """The last probe's result (a new probe starts in the background when it is stale)."""
        if self._value is None:
            return await asyncio.shield(self._refresh())
        if time.monotonic() - self._checked_at > self.refresh_s:
            self._refresh()
        return self._value

    async def close(self) -> None:
        if self._probe is not None and not self._probe.done():
            self._probe.cancel()
            await asyncio.gather(self._probe, return_exceptions=True)
