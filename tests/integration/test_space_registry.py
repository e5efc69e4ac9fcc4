"""The embedder of a stored space is built once, however many searches ask for it at the same moment, and the
app builds it when it starts (issue 45: a model load on the first search timed out on a busy machine)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from ragchat.core.errors import BadRequest, ServiceUnavailable
from ragchat.vectors.registry import SpaceRegistry


class Model:
    def __init__(self, provider: str, model_name: str) -> None:
        self.provider, self.model_name = provider, model_name
        self.closed = False

    async def close(self) -> None:
        self.closed = True


class Factory:
    """Builds a model in 0.3 s on a worker thread (as a real load does), or fails the first `fail` times."""

    def __init__(self, fail: int = 0) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail = fail
        self.lock = threading.Lock()

    def __call__(self, provider: str, model: str) -> Any:
        with self.lock:
            self.calls.append((provider, model))
            failing = len(self.calls) <= self.fail
        time.sleep(0.3)
        if failing:
            raise OSError("weights not found")
        return Model(provider, model)


async def test_searches_that_arrive_together_share_one_load() -> None:
    factory = Factory()
    spaces = SpaceRegistry(None, Model("ollama", "nomic-embed-text"), factory)  # type: ignore[arg-type]
    got = await asyncio.gather(*(spaces.embedder_for("sentence-transformers", "m") for _ in range(8)))
    assert factory.calls == [("sentence-transformers", "m")] and len({id(e) for e in got}) == 1
    assert await spaces.embedder_for("sentence-transformers", "m") is got[0]
    await spaces.close()
    assert got[0].closed  # built here, closed here


async def test_a_failed_load_is_said_and_tried_again() -> None:
    factory = Factory(fail=1)
    spaces = SpaceRegistry(None, Model("ollama", "x"), factory)  # type: ignore[arg-type]
    with pytest.raises(ServiceUnavailable, match="ragchat reembed"):
        await spaces.embedder_for("sentence-transformers", "m")
    with pytest.raises(BadRequest):  # asked for by name (a re-embed): the caller's mistake
        await SpaceRegistry(None, Model("o", "x"), Factory(fail=1)).embedder_for(  # type: ignore[arg-type]
            "sentence-transformers", "m", requested=True
        )
    assert (await spaces.embedder_for("sentence-transformers", "m")).model_name == "m"
    assert len(factory.calls) == 2


async def test_a_known_embedder_is_used_and_never_closed_here() -> None:
    factory = Factory()
    known = Model("sentence-transformers", "all-MiniLM-L6-v2")
    spaces = SpaceRegistry(None, Model("ollama", "x"), factory, known=[known])  # type: ignore[arg-type]
    assert await spaces.embedder_for("sentence-transformers", "all-MiniLM-L6-v2") is known
    await spaces.close()
    assert factory.calls == [] and not known.closed


async def test_the_stored_model_is_loaded_when_the_server_starts(pool: Any) -> None:
    """`warm()` (the app's start) loads the active space's model, so the first search finds it loaded."""
    from ragchat.vectors import store

    async with pool.connection() as conn:
        await store.create_space(conn, "sentence-transformers", "stored-model", 8, "active")
    factory = Factory()
    spaces = SpaceRegistry(pool, Model("ollama", "nomic-embed-text"), factory, refresh_s=0.0)
    await spaces.warm()
    assert factory.calls == [("sentence-transformers", "stored-model")]
    active = await spaces.active()
    assert active is not None and active.embedder.model_name == "stored-model" and len(factory.calls) == 1
    await spaces.close()


async def test_the_first_space_another_process_creates_is_seen_at_once(pool: Any) -> None:
    """A server that found no space yet reads again on every search (a separate `ragchat worker` creates the
    space with the first document: searches just after it must use the vectors); a found space is cached."""
    from ragchat.vectors import store

    spaces = SpaceRegistry(pool, Model("ollama", "nomic-embed-text"), Factory(), refresh_s=3600.0)
    assert await spaces.active_space() is None
    async with pool.connection() as conn:
        first = await store.create_space(conn, "sentence-transformers", "stored-model", 8, "active")
    assert (await spaces.active_space()) == first
    async with pool.connection() as conn:
        retire = "UPDATE embedding_spaces SET state = 'retired', retired_at = now() WHERE id = %s"
        await conn.execute(retire, (first.id,))
    assert (await spaces.active_space()) == first  # cached until refresh_s has passed
    await spaces.close()
