"""The chat models' measured speeds outlive a restart (chat/store/speeds.py, migration 0031): the runtime saves
them when it closes and restores them when it opens, so the first answer after a restart already has an
estimate and a first-token allowance that fits the model. A broken saved row is skipped, never trusted."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from ragchat.chat.store.speeds import SpeedKeeper
from ragchat.providers.llm import build_llm
from ragchat.providers.llm.speed import CallTiming, SpeedBook, estimate_prompt_tokens
from ragchat.runtime import Overrides, open_runtime
from ragchat.settings import Settings
from tests.fakes.ollama_server import closed_port_url

MODEL = "slow-cpu-model:1.5b"
MESSAGES = [{"role": "user", "content": "How many holiday days do I get? " * 20}]


def _settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"ollama_host": closed_port_url(), "chat_model": MODEL})


async def test_speeds_measured_before_a_restart_are_there_after_it(settings: Settings, embedder: Any) -> None:
    s = _settings(settings)
    first = build_llm(s.llm)
    async with open_runtime(s, Overrides(embedder=embedder, llm=first)) as rt:
        assert rt.llm.speed.get(MODEL).samples == 0  # a fresh database: nothing saved
        rt.llm.speed.record(MODEL, CallTiming(prompt_tokens=800, prompt_s=40.0, completion_tokens=120, completion_s=30))
    await first.close()
    with psycopg.connect(settings.database.database_url) as conn:
        [(prompt_tps, samples)] = conn.execute("SELECT prompt_tps, samples FROM llm_speeds").fetchall()
    assert prompt_tps == pytest.approx(20.0) and samples == 1

    second = build_llm(s.llm)  # a new process: its book starts empty
    try:
        async with open_runtime(s, Overrides(embedder=embedder, llm=second)) as rt:
            speed = rt.llm.speed.get(MODEL)
            assert (speed.prompt_tps, speed.gen_tps, speed.samples) == (pytest.approx(20.0), pytest.approx(4.0), 1)
            estimate = rt.llm.speed.estimate(MODEL, estimate_prompt_tokens(MESSAGES))
            assert estimate.first_token_s == pytest.approx(estimate_prompt_tokens(MESSAGES) / 20.0)
    finally:
        await second.close()


async def test_a_broken_saved_row_is_skipped(settings: Settings, pool: Any) -> None:
    with psycopg.connect(settings.database.database_url, autocommit=True) as conn:
        conn.execute(
            """INSERT INTO llm_speeds (model, prompt_tps, gen_tps, answer_tokens, samples) VALUES
               ('nan-model', 'NaN', 'NaN', 10, 3), ('huge-model', 1e300, NULL, NULL, 1),
               ('good-model', 50, 5, 200, 7)"""
        )
    book = SpeedBook()
    assert await SpeedKeeper(pool, book).restore() == 1
    assert book.get("good-model").prompt_tps == pytest.approx(50.0)
    assert book.get("nan-model").samples == 0 and book.get("huge-model").samples == 0


async def test_nothing_is_written_until_a_speed_moved(pool: Any) -> None:
    book = SpeedBook()
    keeper = SpeedKeeper(pool, book)
    await keeper.restore()
    assert await keeper.save() is False
    book.record(MODEL, CallTiming(prompt_tokens=100, prompt_s=2.0, completion_tokens=10, completion_s=1.0))
    assert await keeper.save() is True
    assert await keeper.save() is False  # saved: nothing moved since
