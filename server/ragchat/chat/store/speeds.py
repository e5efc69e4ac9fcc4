"""The chat models' measured speeds, kept across restarts (table `llm_speeds`, migration 0031).

The provider's `SpeedBook` (providers/llm/speed.py) measures every streamed call in memory; without this, a
restart forgot them, so the first answer after it showed no estimate and its first-token allowance fell back to
`LLM_TIMEOUT_S`. `SpeedKeeper.restore` loads the saved figures when the runtime opens (figures measured in this
process win), `run` saves them every `interval_s` while they moved, and `save` once more when the runtime
closes. A saved row that is not a usable speed (hand-edited, or from a broken version) is skipped, never
trusted: a speed of zero would make every estimate infinite.
"""

from __future__ import annotations

import asyncio
import logging
import math
from datetime import UTC, datetime

import psycopg

from ragchat.db.pool import Pool
from ragchat.providers.llm.speed import ModelSpeed, SpeedBook

log = logging.getLogger(__name__)

SAVE_INTERVAL_S = 30.0
MAX_MODELS = 200  # rows read back: a server's models, not an unbounded history
MAX_TPS = 1e6  # tokens a second no model reaches: a larger saved figure is a broken row


def _usable(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) and 0 < value < MAX_TPS else None


class SpeedKeeper:
    def __init__(self, pool: Pool, book: SpeedBook, *, interval_s: float = SAVE_INTERVAL_S) -> None:
        self.pool = pool
        self.book = book
        self.interval_s = interval_s
        self._saved_version = -1

    async def restore(self) -> int:
        """Load the saved speeds (models this process measured keep theirs); the number of models restored.
        A database error is logged, not raised: the server starts without the figures."""
        try:
            async with self.pool.connection() as conn:
                rows = await (
                    await conn.execute(
                        "SELECT model, prompt_tps, gen_tps, answer_tokens, samples, updated_at FROM llm_speeds"
                        " ORDER BY updated_at DESC LIMIT %s",
                        (MAX_MODELS,),
                    )
                ).fetchall()
        except psycopg.Error as exc:
            log.warning("speeds: the saved model speeds were not read: %s", exc)
            return 0
        speeds: dict[str, ModelSpeed] = {}
        for row in rows:
            prompt, gen = _usable(row["prompt_tps"]), _usable(row["gen_tps"])
            if prompt is None and gen is None:
                continue
            speeds[row["model"]] = ModelSpeed(
                prompt_tps=prompt,
                gen_tps=gen,
                answer_tokens=_usable(row["answer_tokens"]),
                samples=max(0, int(row["samples"] or 0)),
                updated_at=row["updated_at"].timestamp(),
            )
        self.book.restore(speeds)
        self._saved_version = self.book.version
        return len(speeds)

    async def save(self) -> bool:
        """Write the figures that moved since the last save; False when nothing moved or the write failed."""
        version = self.book.version
        if version == self._saved_version:
            return False
        rows = [
            (model, prompt, gen, _usable(s.answer_tokens), s.samples, datetime.fromtimestamp(s.updated_at, UTC))
            for model, s in self.book.snapshot().items()
            for prompt, gen in [(_usable(s.prompt_tps), _usable(s.gen_tps))]
            if s.samples and 0 < len(model) <= 200 and (prompt or gen)
        ]
        try:
            async with self.pool.connection() as conn:
                async with conn.cursor() as cur:
                    await cur.executemany(
                        """INSERT INTO llm_speeds (model, prompt_tps, gen_tps, answer_tokens, samples, updated_at)
                           VALUES (%s, %s, %s, %s, %s, %s)
                           ON CONFLICT (model) DO UPDATE SET prompt_tps = EXCLUDED.prompt_tps,
                               gen_tps = EXCLUDED.gen_tps, answer_tokens = EXCLUDED.answer_tokens,
                               samples = EXCLUDED.samples, updated_at = EXCLUDED.updated_at""",
                        rows,
                    )
        except psycopg.Error as exc:
            log.warning("speeds: the model speeds were not saved: %s", exc)
            return False
        self._saved_version = version
        return True

    async def run(self) -> None:
        """Save every `interval_s` while the figures move (the runtime's background task)."""
        while True:
            await asyncio.sleep(self.interval_s)
            await self.save()
