"""Chat events to server-sent events, with token coalescing for busy servers and slow clients.

The turn's events are produced by their own task into a queue, so reading from Ollama never waits for the
client's socket. When several `token` events are ready together (the client or the server fell behind),
they go out as one event whose `delta` is their concatenation, which the protocol allows: clients
concatenate deltas. With a client that keeps up, every token is sent as soon as it arrives.

A guard (the caller's credential check) can end a stream: a logout, a revoked token or a disabled user
stops the answer with an `error` event; the partial answer is saved as for a disconnect.

If the response is cancelled (the client went away), the producer task is cancelled and awaited, so the
turn saves its partial answer before the response finishes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Any

import anyio
from sse_starlette import JSONServerSentEvent

from ragchat.chat.engine.loop import ChatEvent
from ragchat.chat.runs import Run
from ragchat.observability import metrics

_END = object()
GUARD_EVERY_S = 2.0
REVOKED = "your session ended (logged out, API token revoked, or account disabled): log in again"
log = logging.getLogger(__name__)
Guard = Callable[[], Awaitable[bool]]


async def coalesce_tokens(
    events: AsyncGenerator[ChatEvent, None], guard: Guard | None = None, guard_every_s: float = GUARD_EVERY_S
) -> AsyncGenerator[ChatEvent, None]:
    """`events`, run in a task of their own; consecutive `token` events already waiting are merged.
    `guard()` is awaited every `guard_every_s`: once it says False the stream ends with an `error` event."""
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def watch() -> None:
        assert guard is not None
        while True:
            await asyncio.sleep(guard_every_s)
            try:
                valid = await guard()
            except Exception:  # the database hiccuped: keep streaming, check again next time
                log.warning("could not re-check the caller's credential", exc_info=True)
                continue
            if not valid:
                queue.put_nowait(ChatEvent("error", {"code": "unauthorized", "message": REVOKED}))
                queue.put_nowait(_END)
                return

    async def produce() -> None:
        try:
            async with aclosing(events) as stream:
                async for event in stream:
                    queue.put_nowait(event)
        except Exception as exc:  # a bug in the producer: surface it in the response task
            queue.put_nowait(exc)
        finally:
            queue.put_nowait(_END)

    producer = asyncio.create_task(produce())
    watcher = asyncio.create_task(watch()) if guard is not None else None
    try:
        while True:
            batch = [await queue.get()]
            while not queue.empty():
                batch.append(queue.get_nowait())
            deltas: list[str] = []
            for item in batch:
                if isinstance(item, ChatEvent) and item.event == "token":
                    deltas.append(item.data["delta"])
                    continue
                if deltas:
                    yield ChatEvent("token", {"delta": "".join(deltas)})
                    deltas = []
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
            if deltas:
                yield ChatEvent("token", {"delta": "".join(deltas)})
    finally:
        if watcher is not None:
            watcher.cancel()
        if not producer.done():
            producer.cancel()
        with anyio.CancelScope(shield=True):  # let the turn save what it has before the response ends
            await asyncio.wait([producer])


async def server_sent_events(
    events: AsyncGenerator[ChatEvent, None], guard: Guard | None = None
) -> AsyncGenerator[JSONServerSentEvent, None]:
    """What EventSourceResponse sends: `event: <name>` and one `data:` line of compact JSON."""
    metrics.SSE_STREAMS.inc()
    try:
        async with aclosing(coalesce_tokens(events, guard)) as stream:
            async for item in stream:
                yield JSONServerSentEvent(data=item.data, event=item.event)
    finally:
        metrics.SSE_STREAMS.dec()


async def run_events(run: Run, after: int = 0, *, seed: bool = False) -> AsyncGenerator[JSONServerSentEvent, None]:
    """A subscriber of a chat run (runs.py): its events after sequence number `after`, then live ones, each
    with the id `<message_id>:<seq>` (what `Last-Event-ID` sends back to resume). `seed`: a replay from the
    start includes a continued answer's earlier text (an attach); the asker's own stream does not."""
    metrics.SSE_STREAMS.inc()
    try:
        async for seq, item in run.follow(after, seed=seed):
            yield JSONServerSentEvent(data=item.data, event=item.event, id=f"{run.message_id}:{seq}")
    finally:
        metrics.SSE_STREAMS.dec()
