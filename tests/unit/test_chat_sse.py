"""Token coalescing between the chat loop and the SSE response."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from ragchat.chat.api.sse import coalesce_tokens, server_sent_events
from ragchat.chat.engine.loop import ChatEvent


def token(delta: str) -> ChatEvent:
    return ChatEvent("token", {"delta": delta})


async def test_tokens_ready_together_are_merged_and_order_is_kept() -> None:
    async def burst() -> AsyncIterator[ChatEvent]:
        yield ChatEvent("thread", {"thread_id": "t"})
        for delta in ("a", "b", "c"):  # no await in between: they are all waiting when the reader looks
            yield token(delta)
        yield ChatEvent("tool_call", {"id": "call_1"})
        yield token("d")
        yield ChatEvent("done", {})

    out = [e async for e in coalesce_tokens(burst())]
    assert out == [
        ChatEvent("thread", {"thread_id": "t"}),
        token("abc"),
        ChatEvent("tool_call", {"id": "call_1"}),
        token("d"),
        ChatEvent("done", {}),
    ]


async def test_tokens_are_not_held_back_when_the_reader_keeps_up() -> None:
    async def paced() -> AsyncIterator[ChatEvent]:
        for delta in ("a", "b", "c"):
            await asyncio.sleep(0.01)
            yield token(delta)

    assert [e async for e in coalesce_tokens(paced())] == [token("a"), token("b"), token("c")]


async def test_cancelling_the_reader_cancels_the_producer_and_waits_for_its_cleanup() -> None:
    cleaned: list[str] = []

    async def endless() -> AsyncIterator[ChatEvent]:
        try:
            while True:
                yield token("x")
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)  # e.g. saving the partial answer
            cleaned.append("saved")
            raise

    async def read() -> None:
        async for _ in server_sent_events(endless()):
            pass

    task = asyncio.create_task(read())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["saved"]


async def test_a_producer_bug_reaches_the_reader() -> None:
    async def broken() -> AsyncIterator[ChatEvent]:
        yield token("a")
        raise RuntimeError("bug")

    seen: list[ChatEvent] = []
    with pytest.raises(RuntimeError, match="bug"):
        async for event in coalesce_tokens(broken()):
            seen.append(event)
    assert seen == [token("a")]
