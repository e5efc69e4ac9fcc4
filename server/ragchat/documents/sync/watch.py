"""Keeping a folder synced (`ragchat sync DIR --watch`): a sync after every burst of changes, and every
`interval_s` regardless (the polling fallback: it is all there is when the folder cannot be watched).

Changes come from `watchfiles` (inotify on Linux), watching each folder the last sync listed on its own: a
recursive watch would follow symlinks out of the folder (a link to / would watch the whole disk). When the
set of folders changes the watcher is started again over the new set. Stopping (`stop` set: Ctrl-C, SIGTERM)
cancels a sync under way; every step of one is its own transaction, and documents it left queued are
ingested by the next run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from ragchat.documents.sync.service import FolderSync, SyncReport

log = logging.getLogger(__name__)
T = TypeVar("T")

DEBOUNCE_MS = 1000  # changes within this are one burst (a file written in many pieces, a folder copied in)
QUIET_MS = 300  # ...and a burst ends after this long without a change
READY_MS = 500  # how often an idle watcher wakes (its first wake-up says it is watching)
_GIVE_UP_AFTER = 3  # watcher failures in a row before polling alone


async def run_until_stopped(sync: FolderSync, stop: asyncio.Event) -> SyncReport:
    """One sync, cancelled when `stop` is set first (its report then says `stopped`)."""
    done = await _first(sync.run(), stop)
    if done is None:
        sync.report.stopped = True
        return sync.report
    return done


async def watch(
    sync: FolderSync,
    stop: asyncio.Event,
    *,
    interval_s: float,
    on_report: Callable[[SyncReport], None],
    on_note: Callable[[str], None] = lambda _m: None,
) -> SyncReport | None:
    """Sync now, then after each burst of changes and every `interval_s`, until `stop`. Returns the last
    report (the stopped one if a sync was under way)."""
    watcher = _Watcher(on_note)
    last: SyncReport | None = None
    try:
        while not stop.is_set():
            watcher.changed.clear()  # a change from now on (during this sync too) calls for another
            try:
                last = await run_until_stopped(sync, stop)
            except Exception as exc:  # the database is away, ...: a watcher keeps going and tries again
                log.debug("sync failed", exc_info=True)
                on_note(f"the sync failed ({_first_line(exc)}); trying again in {interval_s:g}s")
                await watcher.wait(stop, interval_s)
                continue
            on_report(last)
            if last.stopped:
                break
            if await watcher.follow(last.folders):
                continue  # sync once more: what changed while the watcher was starting was not seen
            await watcher.wait(stop, interval_s)
    finally:
        await watcher.close()
    return last


async def _first(work: Awaitable[T], stop: asyncio.Event) -> T | None:
    task = asyncio.ensure_future(work)
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return None


class _Watcher:
    """watchfiles over a set of folders (each on its own, not recursively), setting `changed` on changes."""

    def __init__(self, on_note: Callable[[str], None]) -> None:
        self.changed = asyncio.Event()
        self.on_note = on_note
        self.folders: frozenset[str] = frozenset()
        self.task: asyncio.Task[None] | None = None
        self.retired: set[asyncio.Task[None]] = set()  # stopped watchers still winding down
        self.stop_watching = asyncio.Event()
        self.failures = 0
        self.polling = False  # gave up watching: only the interval's syncs

    async def follow(self, folders: Sequence[str]) -> bool:
        """Watch these folders: True when the watcher (re)started (once it watches, or failed to)."""
        wanted = frozenset(folders)
        running = self.task is not None and not self.task.done()
        if self.polling or not wanted or (running and wanted == self.folders):
            return False
        self._stop_task()
        self.folders = wanted
        self.stop_watching = asyncio.Event()
        ready = asyncio.Event()
        self.task = asyncio.create_task(self._run(sorted(wanted), self.stop_watching, ready), name="sync-watcher")
        waiters = [asyncio.create_task(ready.wait()), self.task]
        await asyncio.wait(waiters, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        waiters[0].cancel()
        return True

    async def _run(self, folders: list[str], stop: asyncio.Event, ready: asyncio.Event) -> None:
        from watchfiles import awatch

        try:
            async for changes in awatch(
                *folders,
                watch_filter=_not_hidden,
                debounce=DEBOUNCE_MS,
                step=QUIET_MS,
                stop_event=stop,
                recursive=False,
                rust_timeout=READY_MS,
                yield_on_timeout=True,  # an empty set every READY_MS: the first one says it watches
            ):
                ready.set()
                self.failures = 0
                if changes:
                    self.changed.set()
        except Exception as exc:  # a folder went away meanwhile, too many watches (inotify limit), ...
            self.failures += 1
            if self.failures >= _GIVE_UP_AFTER:
                self.polling = True
                self.on_note(f"cannot watch the folder for changes ({exc}); syncing every interval instead")
            else:
                log.info("folder watcher stopped (%s); it starts again after the next sync", exc)
            self.changed.set()  # sync again: the folders may have changed

    async def wait(self, stop: asyncio.Event, interval_s: float) -> None:
        """Until a change, `stop`, or `interval_s`."""
        waiters = [asyncio.create_task(self.changed.wait()), asyncio.create_task(stop.wait())]
        try:
            await asyncio.wait(waiters, timeout=interval_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    def _stop_task(self) -> None:
        self.stop_watching.set()
        if self.task is not None and not self.task.done():
            self.retired.add(self.task)
            self.task.add_done_callback(self.retired.discard)

    async def close(self) -> None:
        self._stop_task()
        tasks = [*self.retired, *([self.task] if self.task else [])]
        if tasks:
            await asyncio.wait(tasks, timeout=5)


def _first_line(exc: Exception) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return text.splitlines()[0]


def _not_hidden(_change: object, path: str) -> bool:
    """Hidden files are never synced: their changes (editors' swap files) call for no sync."""
    return not os.path.basename(path).startswith(".")
