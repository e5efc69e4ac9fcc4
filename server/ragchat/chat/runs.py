"""Answers that outlive their request: one `Run` per answer being generated, in a per-process registry.

A run is an asyncio task that drives the turn's events (service.py: it saves the answer whatever happens)
into a replay buffer. Every HTTP stream of the answer, the POST that asked and any
`GET /api/threads/{id}/stream`, is a subscriber reading that buffer from a sequence number: a subscriber
that goes away just stops reading. Only `stop()` (POST .../stop, a revoked credential, shutdown) ends a run
early; its partial answer is then saved `incomplete`.

The buffer is small whatever the answer's length: the answer text once, one integer per event (how long the
text was after it), and the few other events (thread, tool calls and results, citations, done or error).
Replaying from any sequence number gives the same stream coalesced: the text between two other events is
one `token` event, whose id is the last token's sequence number, so a client that resumes with
`Last-Event-ID` gets no gap and no duplicate. A finished run stays `GRACE_S` seconds (late resumes get its
end), then only the database has it.

A run lives in the process that started it; see docs/SSE.md for deployments with several processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from array import array
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from uuid import UUID

from ragchat.chat.engine.faults import ChatFault
from ragchat.chat.engine.loop import ChatEvent

log = logging.getLogger(__name__)
GRACE_S = 30.0  # a finished run is kept this long for late resumes
HEARTBEAT_S = 5.0  # how often a running answer's row is refreshed (repository.STALE_S declares it dead)
GUARD_EVERY_S = 2.0  # how often the asker's credential is checked
STOP_WAIT_S = 45.0  # stop() waits at most this long for the partial answer to be saved
STOPPED = ChatFault("stopped", "Stopped — this answer is incomplete.")
SHUTDOWN = ChatFault("interrupted", "The server stopped while answering: this answer is incomplete.")
REVOKED = ChatFault(
    "unauthorized", "your session ended (logged out, API token revoked, or account disabled): log in again"
)
Guard = Callable[[], Awaitable[bool]]


class Run:
    """One answer being generated: its events so far, numbered from 1, and a wake-up for subscribers."""

    def __init__(self, thread_id: UUID, message_id: UUID, owner_id: UUID, seed: str = "") -> None:
        self.thread_id = thread_id
        self.message_id = message_id
        self.owner_id = owner_id
        self.text = seed  # a continued answer's text so far, then every token's delta
        self._ends = array("Q", [len(seed)])  # _ends[seq]: len(text) after event seq
        self._others: list[tuple[int, ChatEvent]] = []  # the events that are not tokens, with their seq
        self._changed = asyncio.Event()
        self.finished = False
        self.ended = False  # `done` or `error` was published
        self.stop_fault: ChatFault | None = None
        self.task: asyncio.Task[None] | None = None

    @property
    def head(self) -> int:
        """The sequence number of the last event (0: none yet)."""
        return len(self._ends) - 1

    def publish(self, event: ChatEvent) -> None:
        self.ended = self.ended or event.event in ("done", "error")
        if event.event == "token":
            self.text += event.data["delta"]
        else:
            self._others.append((len(self._ends), event))
        self._ends.append(len(self.text))
        self._wake()

    def finish(self) -> None:
        self.finished = True
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def replay(self, after: int, upto: int | None = None, *, seed: bool = False) -> list[tuple[int, ChatEvent]]:
        """Events `after` < seq <= `upto` (default: all so far), consecutive tokens merged into one. `seed`: a
        replay from the start also sends a continued answer's earlier text, as a token after `thread`."""
        upto = self.head if upto is None else min(upto, self.head)
        after = max(0, min(after, upto))
        out: list[tuple[int, ChatEvent]] = []
        pos = self._ends[after]
        for seq, event in self._others:
            if seq <= after:
                continue
            if seq > upto:
                break
            if self._ends[seq] > pos:
                out.append((seq - 1, ChatEvent("token", {"delta": self.text[pos : self._ends[seq]]})))
                pos = self._ends[seq]
            out.append((seq, event))
            if seed and seq == 1 and self._ends[0]:
                out.append((seq, ChatEvent("token", {"delta": self.text[: self._ends[0]]})))
        if self._ends[upto] > pos:
            out.append((upto, ChatEvent("token", {"delta": self.text[pos : self._ends[upto]]})))
        return out

    async def follow(self, after: int = 0, *, seed: bool = False) -> AsyncIterator[tuple[int, ChatEvent]]:
        """Events after `after`, then live ones until the run ends; a slow reader gets tokens merged. `seed`:
        see `replay`."""
        cursor = after
        while True:
            changed = self._changed
            head = self.head
            if head > cursor:
                for item in self.replay(cursor, head, seed=seed and cursor == 0):
                    yield item
                cursor = head
                continue
            if self.finished:
                return
            await changed.wait()

    def stop(self, fault: ChatFault) -> bool:
        """Cancel the run (its partial answer is saved with `fault`); False when it had ended already."""
        if self.finished or self.ended or self.task is None or self.task.done():
            return False
        if self.stop_fault is None:
            self.stop_fault = fault
        self.task.cancel()
        return True

    async def wait(self, timeout: float = STOP_WAIT_S) -> None:  # noqa: ASYNC109
        """Until the run's task has ended (its answer saved)."""
        if self.task is not None:
            await asyncio.wait([self.task], timeout=timeout)


class RunRegistry:
    """The runs of this process, by thread (one answer at a time per thread)."""

    def __init__(self, grace_s: float = GRACE_S, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.grace_s = grace_s
        self.heartbeat_s = heartbeat_s
        self._runs: dict[UUID, Run] = {}
        self._closing = False

    def get(self, thread_id: UUID) -> Run | None:
        return self._runs.get(thread_id)

    def running(self, thread_id: UUID) -> Run | None:
        run = self._runs.get(thread_id)
        return run if run is not None and not run.finished else None

    def start(
        self,
        run: Run,
        events: AsyncGenerator[ChatEvent, None],
        *,
        beat: Callable[[], Awaitable[None]] | None = None,
        guard: Guard | None = None,
    ) -> Run:
        """Drive `events` into `run` from a task of its own; `beat()` every HEARTBEAT_S; `guard()` false stops it."""
        if self._closing:
            raise RuntimeError("the server is shutting down")
        self._runs[run.thread_id] = run
        run.task = asyncio.create_task(self._drive(run, events, beat, guard), name=f"chat-run-{run.message_id}")
        return run

    async def _drive(
        self,
        run: Run,
        events: AsyncGenerator[ChatEvent, None],
        beat: Callable[[], Awaitable[None]] | None,
        guard: Guard | None,
    ) -> None:
        side = []
        if beat is not None:
            side.append(asyncio.create_task(_every(self.heartbeat_s, beat, "heartbeat")))
        if guard is not None:
            side.append(asyncio.create_task(_watch(run, guard)))
        try:
            async with aclosing(events) as stream:
                async for event in stream:
                    run.publish(event)
        except asyncio.CancelledError:  # stopped: the turn saved its partial answer before this
            if not run.ended:  # (a stop that came after the answer's last event changes nothing)
                run.publish(ChatEvent("error", (run.stop_fault or STOPPED).to_json()))
        except Exception:
            log.exception("chat run %s failed", run.message_id)
            run.publish(ChatEvent("error", {"code": "internal_error", "message": "Something went wrong."}))
        finally:
            for task in side:
                task.cancel()
            run.finish()
            asyncio.get_running_loop().call_later(self.grace_s, self._forget, run)

    def _forget(self, run: Run) -> None:
        if self._runs.get(run.thread_id) is run:
            del self._runs[run.thread_id]

    async def stop(self, thread_id: UUID, fault: ChatFault = STOPPED) -> bool:
        """Stop the thread's run and wait until its partial answer is saved; False when none was running."""
        run = self.running(thread_id)
        if run is None or not run.stop(fault):
            return False
        await run.wait()
        return True

    async def close(self) -> None:
        """Shutdown: stop every run (saved incomplete, "interrupted") and wait for the saves."""
        self._closing = True
        runs = [run for run in self._runs.values() if run.stop(SHUTDOWN)]
        if runs:
            await asyncio.gather(*(run.wait() for run in runs))
        self._runs.clear()


async def _every(interval: float, action: Callable[[], Awaitable[None]], what: str) -> None:
    while True:
        await asyncio.sleep(interval)
        try:
            await action()
        except Exception as exc:  # the database hiccuped: try again next time
            log.warning("chat run %s failed: %r", what, exc)


async def _watch(run: Run, guard: Guard) -> None:
    """Stop the run once the asker's session or token stops being valid."""
    while True:
        await asyncio.sleep(GUARD_EVERY_S)
        with contextlib.suppress(Exception):  # the database hiccuped: keep going, check again next time
            if not await guard():
                run.stop(REVOKED)
                return
