"""Tests of the per-minute limits (RATE_*_PER_MIN): the counters are fixed one-minute windows
(server/ragchat/db/ratelimit.py), so a run of requests that reaches the next window starts counting again. A
busy machine makes that likely; these helpers keep each counted run inside one window."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
WINDOW_S = 60
ROOM_S = 40  # what a run of requests is given to stay inside one window


def window() -> int:
    return int(time.time() // WINDOW_S)


async def next_window() -> int:
    await asyncio.sleep(WINDOW_S - time.time() % WINDOW_S + 0.2)
    return window()


async def a_fresh_window(room_s: float = ROOM_S) -> int:
    """Now, if at least `room_s` of the current window is left, else the next window's start: its number."""
    if WINDOW_S - time.time() % WINDOW_S < room_s:
        return await next_window()
    return window()


async def in_one_window(run: Callable[[int], Awaitable[T]], tries: int = 3) -> tuple[int, T]:
    """`run(attempt)` inside one window: when it reached the next window (a very busy machine), it runs again at
    the start of a fresh one (give each attempt new names where the server remembers them). (window, result)."""
    for attempt in range(tries):
        start = await a_fresh_window()
        result = await run(attempt)
        if window() == start:
            return start, result
        await next_window()  # that window's counts are spent
    raise AssertionError(f"{tries} runs each reached the next rate-limit window")
