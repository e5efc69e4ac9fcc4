"""The replay buffer of a chat run (server/ragchat/chat/runs.py): resuming from any event id gives the rest of the
stream, tokens merged, no gap, no duplicate; subscribers follow live events; stop cancels."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator

from ragchat.chat.engine.faults import ChatFault
from ragchat.chat.engine.loop import ChatEvent
from ragchat.chat.runs import Run, RunRegistry


def tok(text: str) -> ChatEvent:
    return ChatEvent("token", {"delta": text})


STREAM = [
    ChatEvent("thread", {"thread_id": "t"}),
    tok("Hel"),
    tok("lo"),
    ChatEvent("tool_call", {"id": "call_1"}),
    ChatEvent("tool_result", {"id": "call_1"}),
    tok(" wor"),
    tok("ld"),
    tok("."),
    ChatEvent("done", {}),
]


def new_run(seed: str = "") -> Run:
    return Run(uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), seed=seed)


def test_replay_from_every_id_is_the_rest_of_the_stream() -> None:
    run = new_run()
    for event in STREAM:
        run.publish(event)
    assert run.head == len(STREAM)
    full = run.replay(0)
    assert [e.event for _, e in full] == ["thread", "token", "tool_call", "tool_result", "token", "done"]
    assert [seq for seq, _ in full] == [1, 3, 4, 5, 8, 9]  # a merged token carries its last token's seq
    for after in range(len(STREAM) + 1):
        rest = run.replay(after)
        expected = [e for e in STREAM[after:]]
        assert "".join(e.data["delta"] for _, e in rest if e.event == "token") == "".join(
            e.data["delta"] for e in expected if e.event == "token"
        )
        assert [e.event for _, e in rest if e.event != "token"] == [e.event for e in expected if e.event != "token"]
        assert all(seq > after for seq, _ in rest)


def test_a_continued_answer_replays_its_earlier_text_only_when_asked() -> None:
    run = new_run(seed="Earlier")
    run.publish(ChatEvent("thread", {}))
    assert run.replay(0, seed=True) == [(1, ChatEvent("thread", {})), (1, tok("Earlier"))]
    run.publish(tok(" more"))
    assert run.replay(0) == [(1, ChatEvent("thread", {})), (2, tok(" more"))]
    assert "".join(e.data["delta"] for _, e in run.replay(0, seed=True) if e.event == "token") == "Earlier more"
    assert run.replay(1) == [(2, tok(" more"))]


async def test_subscribers_follow_live_and_a_stop_ends_the_run() -> None:
    registry = RunRegistry(grace_s=0.05)
    gate = asyncio.Event()
    saved: list[str] = []

    async def events() -> AsyncGenerator[ChatEvent, None]:
        yield ChatEvent("thread", {})
        yield tok("a")
        try:
            await gate.wait()
        except asyncio.CancelledError:
            saved.append("incomplete")
            raise
        yield tok("b")  # pragma: no cover (stopped before)

    run = registry.start(new_run(), events())

    async def collect(after: int) -> list[tuple[int, ChatEvent]]:
        return [item async for item in run.follow(after)]

    one, two = asyncio.create_task(collect(0)), asyncio.create_task(collect(1))
    await asyncio.sleep(0.05)
    assert registry.running(run.thread_id) is run
    assert await registry.stop(run.thread_id, ChatFault("stopped", "Stopped."))
    first, second = await one, await two
    assert [e.event for _, e in first] == ["thread", "token", "error"] and saved == ["incomplete"]
    assert second == first[1:] and first[-1][1].data == {"code": "stopped", "message": "Stopped."}
    assert not await registry.stop(run.thread_id)
    await asyncio.sleep(0.1)
    assert registry.get(run.thread_id) is None  # forgotten after the grace period
