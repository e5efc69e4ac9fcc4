"""What an LLM rerank of one search costs at the rerank model's measured speed (the settings page shows it).

The figures come from the provider's `SpeedBook` (providers/llm/speed.py: prompt and generation tokens per
second, smoothed over this process's streamed calls). The calls are counted as `rerank.py` makes them: one per
candidate (`limit × RERANK_CANDIDATES_FACTOR`) for `json` and `logprobs`, one per `RERANK_LISTWISE_SIZE`
candidates for `listwise`. Each call reads a passage cut to `RERANK_PASSAGE_CHARS` plus the part of the
instructions the server's prompt cache does not keep, and writes about a dozen tokens (`json`) or one. The calls
are counted one after the other, as a CPU server with one slot runs them: with more slots (`OLLAMA_NUM_PARALLEL`,
llama.cpp's `--parallel`) on a GPU they overlap and take less. The early stop can only shorten it. An estimate
to decide with, not a promise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from ragchat.providers.llm.speed import CHARS_PER_TOKEN, ModelSpeed
from ragchat.settings import RetrievalSettings

UNCACHED_PROMPT_TOKENS = 24  # the call's own framing after the cached prefix (labels, the "Passage:" lines)
REPLY_TOKENS = {"json": 12, "logprobs": 1, "listwise": 1}  # session 13's log: a JSON score reply is ~12 tokens


@dataclass(frozen=True)
class RerankCost:
    """One search's rerank: `calls` made, `seconds` at the measured speed (None until the model was measured,
    or when a cross-encoder server reranks: `RERANK_PROVIDER=http`)."""

    calls: int
    candidates: int
    method: str
    seconds: float | None


def rerank_cost(speed: ModelSpeed, settings: RetrievalSettings, limit: int) -> RerankCost:
    candidates = max(1, limit) * max(1, settings.rerank_candidates_factor)
    method = settings.rerank_method
    if method == "listwise":
        calls = math.ceil(candidates / settings.rerank_listwise_size)
        passages_per_call = min(candidates, settings.rerank_listwise_size)
    else:
        calls, passages_per_call = candidates, 1
    if settings.rerank_provider != "llm" or not speed.prompt_tps or not speed.gen_tps:
        return RerankCost(calls, candidates, method, None)
    prompt = passages_per_call * settings.rerank_passage_chars / CHARS_PER_TOKEN + UNCACHED_PROMPT_TOKENS
    per_call = prompt / speed.prompt_tps + REPLY_TOKENS.get(method, 12) / speed.gen_tps
    return RerankCost(calls, candidates, method, round(calls * per_call, 1))


class RerankCostOut(BaseModel):
    """GET /api/search/rerank-cost: what turning LLM rerank on costs a chat search on this server."""

    provider: Literal["llm", "http"] = Field(description="RERANK_PROVIDER: the LLM, or a cross-encoder server")
    model: str | None = Field(description="the model that would rerank (RERANK_MODEL, else CHAT_MODEL)")
    method: str = Field(description="RERANK_METHOD: json, logprobs or listwise")
    candidates: int = Field(description="passages scored per chat search: CHAT_SEARCH_LIMIT × RERANK_CANDIDATES_FACTOR")
    calls: int = Field(description="LLM calls per chat search")
    seconds: float | None = Field(
        description="about this long per chat search at the model's measured speed, calls one after another as a "
        "CPU server with one slot runs them; null until the model has answered once in this process, or with "
        "a cross-encoder server"
    )
    prompt_tokens_per_s: float | None = Field(description="the model's measured prompt reading speed")
    measured_calls: int = Field(description="the calls the speed was measured on (0: not yet)")
