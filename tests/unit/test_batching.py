"""QueryBatcher: concurrent callers share forward passes; errors and cancellations reach every caller."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from ragchat.providers.embeddings.batching import QueryBatcher


class Recorder:
    """An `encode` that records its batches; rows are [len(text), index in batch]."""

    def __init__(self, delay: float = 0.0, fail_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.delay, self.fail_on = delay, fail_on
        self.release = threading.Event()
        self.release.set()

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.release.wait(5)
        self.batches.append(list(texts))
        if self.fail_on in texts:
            raise ValueError(f"cannot encode {self.fail_on!r}")
        return np.array([[len(t), i] for i, t in enumerate(texts)], dtype=np.float32)


async def test_lone_query_is_encoded_at_once() -> None:
    enc = Recorder()
    batcher = QueryBatcher(enc)
    out = await batcher.embed(["hello"])
    assert out.tolist() == [[5.0, 0.0]]
    assert enc.batches == [["hello"]]


async def test_queries_arriving_during_a_pass_share_the_next_one() -> None:
    enc = Recorder()
    enc.release.clear()  # hold the first pass until everyone has queued
    batcher = QueryBatcher(enc, max_batch=64)
    first = asyncio.create_task(batcher.embed(["a"]))
    await asyncio.sleep(0.05)
    rest = [asyncio.create_task(batcher.embed(["x" * i])) for i in range(1, 11)]
    await asyncio.sleep(0.05)
    enc.release.set()
    results = await asyncio.gather(first, *rest)
    assert enc.batches == [["a"], ["x" * i for i in range(1, 11)]]
    assert [r[0][0] for r in results] == [1.0] + [float(i) for i in range(1, 11)]  # each caller got its own row


async def test_max_batch_is_respected() -> None:
    enc = Recorder()
    enc.release.clear()
    batcher = QueryBatcher(enc, max_batch=4)
    tasks = [asyncio.create_task(batcher.embed([str(i)])) for i in range(10)]
    await asyncio.sleep(0.05)
    enc.release.set()
    await asyncio.gather(*tasks)
    assert [len(b) for b in enc.batches] == [4, 4, 2]
    assert batcher.batches == 3


async def test_an_error_fails_its_batch_only() -> None:
    enc = Recorder(fail_on="bad")
    enc.release.clear()
    batcher = QueryBatcher(enc, max_batch=2)
    tasks = [asyncio.create_task(batcher.embed([t])) for t in ("bad", "b", "c", "d")]
    await asyncio.sleep(0.05)
    enc.release.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(results[0], ValueError) and isinstance(results[1], ValueError)
    assert [r.tolist() for r in results[2:]] == [[[1.0, 0.0]], [[1.0, 1.0]]]
    assert (await batcher.embed(["ok"])).shape == (1, 2)  # the batcher keeps working


async def test_a_caller_that_gives_up_does_not_break_the_others() -> None:
    enc = Recorder()
    enc.release.clear()
    batcher = QueryBatcher(enc)
    first = asyncio.create_task(batcher.embed(["first"]))
    await asyncio.sleep(0.05)
    quitter = asyncio.create_task(batcher.embed(["quitter"]))
    stayer = asyncio.create_task(batcher.embed(["stayer"]))
    await asyncio.sleep(0.01)
    quitter.cancel()
    enc.release.set()
    assert (await stayer).tolist() == [[6.0, 0.0]]
    await first
    with pytest.raises(asyncio.CancelledError):
        await quitter
    assert enc.batches == [["first"], ["stayer"]]  # the cancelled query was never encoded


def test_each_event_loop_gets_its_own_queue() -> None:
    enc = Recorder()
    batcher = QueryBatcher(enc)
    assert asyncio.run(batcher.embed(["one"])).tolist() == [[3.0, 0.0]]
    assert asyncio.run(batcher.embed(["three"])).tolist() == [[5.0, 0.0]]
