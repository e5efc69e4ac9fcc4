"""How fast each chat model reads a prompt and writes an answer on this machine, measured on every streamed call.

A call's figures come from the server when it reports them (Ollama: `prompt_eval_count`/`prompt_eval_duration`
and `eval_count`/`eval_duration`; llama.cpp's OpenAI server: `timings.prompt_n`/`prompt_ms` and
`predicted_n`/`predicted_ms`), else from the wall clock: the time to the first token reads the prompt, the time
after it writes the answer. `SpeedBook` keeps an exponentially smoothed figure per model (in memory; `snapshot`
and `restore` for whoever keeps it across restarts) and turns it into what the chat page shows ("about 40 s")
and into the first-token and stall timeouts of streaming.py.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

CHARS_PER_TOKEN = 3.0  # as chat/engine/budget.py: on the safe (long) side for English and code
MESSAGE_OVERHEAD = 8  # role markers and separators of a chat template, per message
SMOOTHING = 0.3  # weight of the newest call in the smoothed figures
MIN_PROMPT_TOKENS = 16  # fewer prompt tokens (a cached prompt) say little about the prompt speed
MIN_COMPLETION_TOKENS = 4
DEFAULT_ANSWER_TOKENS = 200  # the answer length assumed before any answer was measured


def estimate_prompt_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
    """The prompt's tokens, estimated from its characters (the server counts exactly only once it has read it)."""
    chars = 0
    for message in messages:
        chars += len(str(message.get("content") or ""))
        for call in message.get("tool_calls") or []:
            arguments = getattr(call, "arguments", "")
            chars += len(getattr(call, "name", "")) + len(
                arguments if isinstance(arguments, str) else json.dumps(arguments)
            )
    tool_chars = len(json.dumps(tools)) if tools else 0
    return int((chars + tool_chars) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD * len(messages) + 1


@dataclass(frozen=True)
class CallTiming:
    """One call's measurement: tokens and seconds for reading the prompt and for writing the answer (0 when
    unknown); `source` is "server" (its reported timings) or "clock" (measured here, speed.py)."""

    prompt_tokens: int
    prompt_s: float
    completion_tokens: int
    completion_s: float
    source: str = "clock"


@dataclass
class ModelSpeed:
    """A model's smoothed speeds in tokens per second (None until measured) and answer length in tokens."""

    prompt_tps: float | None = None
    gen_tps: float | None = None
    answer_tokens: float | None = None
    samples: int = 0
    updated_at: float = 0.0  # time.time()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Estimate:
    """What a call about to start will take: `first_token_s` to read the prompt, `total_s` with a usual answer
    (None when the model was never measured)."""

    prompt_tokens: int
    first_token_s: float | None
    total_s: float | None
    prompt_tps: float | None
    gen_tps: float | None
    samples: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _smooth(old: float | None, new: float) -> float:
    return new if old is None else (1 - SMOOTHING) * old + SMOOTHING * new


class SpeedBook:
    """Smoothed speeds per model, shared by every call of one provider (one process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._speeds: dict[str, ModelSpeed] = {}
        self.version = 0  # bumped on every change (a keeper saves when it moved)

    def get(self, model: str) -> ModelSpeed:
        with self._lock:
            speed = self._speeds.get(model)
            return ModelSpeed(**asdict(speed)) if speed is not None else ModelSpeed()

    def record(self, model: str, timing: CallTiming) -> ModelSpeed:
        """Fold one call's figures into the model's smoothed speeds; too-small counts are left out."""
        with self._lock:
            speed = self._speeds.setdefault(model, ModelSpeed())
            changed = False
            if timing.prompt_tokens >= MIN_PROMPT_TOKENS and timing.prompt_s > 0:
                speed.prompt_tps = _smooth(speed.prompt_tps, timing.prompt_tokens / timing.prompt_s)
                changed = True
            if timing.completion_tokens >= MIN_COMPLETION_TOKENS and timing.completion_s > 0:
                speed.gen_tps = _smooth(speed.gen_tps, timing.completion_tokens / timing.completion_s)
                speed.answer_tokens = _smooth(speed.answer_tokens, float(timing.completion_tokens))
                changed = True
            if changed:
                speed.samples += 1
                speed.updated_at = time.time()
                self.version += 1
            return ModelSpeed(**asdict(speed))

    def estimate(self, model: str, prompt_tokens: int) -> Estimate:
        """`first_token_s` = prompt tokens ÷ prompt speed; `total_s` adds the usual answer ÷ generation speed."""
        speed = self.get(model)
        first = None if not speed.prompt_tps else prompt_tokens / speed.prompt_tps
        total = None
        if first is not None and speed.gen_tps:
            total = first + (speed.answer_tokens or DEFAULT_ANSWER_TOKENS) / speed.gen_tps
        return Estimate(prompt_tokens, first, total, speed.prompt_tps, speed.gen_tps, speed.samples)

    def snapshot(self) -> dict[str, ModelSpeed]:
        with self._lock:
            return {model: ModelSpeed(**asdict(speed)) for model, speed in self._speeds.items()}

    def restore(self, speeds: dict[str, ModelSpeed]) -> None:
        """Start from figures kept earlier (models measured in this process keep theirs)."""
        with self._lock:
            for model, speed in speeds.items():
                self._speeds.setdefault(model, ModelSpeed(**asdict(speed)))
