"""A first measurement of the chat model's speed when the server starts, before anyone asks.

The first question's estimate ("about 40 s") and its first-token allowance come from the model's measured speed
(speed.py). On a fresh install, or with a model never measured here (the speeds are kept across restarts:
chat/store/speeds.py), there is none, so the first question of a slow CPU model got no estimate and only
`LLM_TIMEOUT_S` to start answering. `warm_up` makes one short streamed call in the background when the server
starts (`LLM_WARMUP`, on by default): a prompt of a few hundred tokens and a reply of a few dozen, measured like
every call. On Ollama it also loads the model into memory, which the first question would otherwise wait for.
It runs only for a model with no figures, and a failure (no server, no such model) is logged and forgotten:
the health banner says what is wrong.
"""

from __future__ import annotations

import asyncio
import logging

from ragchat.providers.llm.base import LLMError, LLMProvider, Message

log = logging.getLogger(__name__)

TIMEOUT_S = 900.0  # the whole warm-up call, on the slowest machine (streaming.py also applies LLM_TIMEOUT_S…)

# ~250 tokens of plain prose the model reads (enough for a prompt speed: speed.MIN_PROMPT_TOKENS is 16), then a
# reply of ~20 tokens (enough for an answer speed: MIN_COMPLETION_TOKENS is 4), the same for every model
PASSAGE = (
    "The library opens at nine in the morning and closes at six in the evening on weekdays. On Saturdays it "
    "opens at ten and closes at four; it is closed on Sundays and public holidays. Members may borrow up to "
    "twelve books at a time for three weeks, and renew them twice unless another member has reserved them. "
    "Reference works, newspapers and rare books stay in the reading room. The reading room has forty seats, "
    "six computers and a scanner that members may use free of charge for up to thirty pages a day. Printing "
    "costs ten cents a page in black and white and fifty cents a page in colour. Lost books are replaced at "
    "the price of a new copy plus a handling fee of five euros. Children under twelve need a parent's "
    "signature to join, and their books are kept in a separate room on the ground floor."
)
MESSAGES: list[Message] = [
    {"role": "system", "content": "You are a helpful assistant. Follow the instruction exactly."},
    {"role": "user", "content": f"{PASSAGE}\n\nCount from 1 to 15 in words, separated by commas. Nothing else."},
]


async def warm_up(llm: LLMProvider, model: str, *, timeout_s: float) -> bool:
    """One measured call when `model` has no measured speed yet; True when it was measured."""
    if llm.speed.get(model).samples:
        return False
    try:
        async with asyncio.timeout(timeout_s):
            async for _ in llm.stream_chat(model=model, messages=MESSAGES, temperature=0.0):
                pass
    except (LLMError, TimeoutError) as exc:
        log.info("warm-up: %s was not measured: %s", model, exc)
        return False
    measured = llm.speed.get(model)
    if measured.prompt_tps:
        log.info("warm-up: %s reads %.1f tokens/s on this machine", model, measured.prompt_tps)
    return bool(measured.samples)
