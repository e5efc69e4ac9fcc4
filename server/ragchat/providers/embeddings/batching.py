"""Natural batching of query embeddings: concurrent callers share one forward pass.

A lone query is encoded at once (no waiting window). While a forward pass runs, newly arriving queries
queue; when it finishes, all of them (up to `max_batch`) go into the next pass together. Under load, 200
chats that search at the same moment cost a few batched passes instead of 200 single ones.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Executor

import numpy as np

Encode = Callable[[list[str]], np.ndarray]


class _LoopState:
    def __init__(self) -> None:
        self.pending: list[tuple[str, asyncio.Future[np.ndarray]]] = []
        self.worker: asyncio.Task[None] | None = None


class QueryBatcher:
    """`await embed(texts)` → one row per text; `encode` runs on `executor` (default: asyncio's), one batch
    at a time per event loop."""

    def __init__(self, encode: Encode, max_batch: int = 64, executor: Executor | None = None) -> None:
        self._encode = encode
        self.max_batch = max(1, max_batch)
        self.executor = executor
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()
        self.batches = 0  # forward passes run (for tests and benches)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            state = self._states[loop] = _LoopState()
        futures = [loop.create_future() for _ in texts]
        state.pending.extend(zip(texts, futures, strict=True))
        if state.worker is None or state.worker.done():
            state.worker = loop.create_task(self._drain(state))
        rows = await asyncio.gather(*futures)
        return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    async def _drain(self, state: _LoopState) -> None:
        batch: list[tuple[str, asyncio.Future[np.ndarray]]] = []
        try:
            while state.pending:
                batch, state.pending = state.pending[: self.max_batch], state.pending[self.max_batch :]
                batch = [(text, fut) for text, fut in batch if not fut.done()]  # drop callers that gave up
                if not batch:
                    continue
                self.batches += 1
                try:
                    texts = [text for text, _ in batch]
                    vectors = await asyncio.get_running_loop().run_in_executor(self.executor, self._encode, texts)
                except Exception as exc:  # every caller in this batch gets the error; the next batch runs
                    _fail(batch, exc)
                    continue
                for (_, fut), vector in zip(batch, vectors, strict=True):
                    if not fut.done():
                        fut.set_result(vector)
        except BaseException:  # cancelled (loop shutting down): nobody may be left waiting
            _fail(batch + state.pending, RuntimeError("query embedding stopped"))
            state.pending = []
            raise


def _fail(waiters: list[tuple[str, asyncio.Future[np.ndarray]]], exc: Exception) -> None:
    for _, fut in waiters:
        if not fut.done():
            fut.set_exception(exc)
