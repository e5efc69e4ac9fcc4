"""LLM-assisted boundary choice for the semantic chunker (CHUNK_SEMANTIC_LLM=true).

Where the embeddings offer two or three candidate cuts for a chunk, the language model is shown the
sentences on each side of every candidate and asked which one ends a topic, with a JSON schema; the reply
is validated (`parse_reply`: think blocks and code fences stripped). Any failure — a timeout, an error, an
invalid reply or a number outside the candidates — keeps the embeddings' choice (chunk_semantic.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pydantic import BaseModel, Field

from ragchat.documents.chunking.semantic import Choose
from ragchat.providers.llm.replies import parse_reply

log = logging.getLogger(__name__)

SIDE_CHARS = 300  # of each sentence shown to the model


class CutChoice(BaseModel):
    cut: int = Field(ge=1, description="the number of the candidate boundary where the topic changes most")


SCHEMA = CutChoice.model_json_schema()


def build_messages(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    options = "\n\n".join(
        f"{i}. …{before[-SIDE_CHARS:]}\n   ||\n   {after[:SIDE_CHARS]}…" for i, (before, after) in enumerate(pairs, 1)
    )
    return [
        {
            "role": "system",
            "content": "You split documents into passages for search. Given numbered candidate boundaries (the "
            "text before and after '||'), choose the one where one topic ends and another begins. "
            'Answer with JSON only: {"cut": <number>}.',
        },
        {"role": "user", "content": options},
    ]


def llm_chooser(llm: Any, model: str, loop: asyncio.AbstractEventLoop, timeout_s: float = 10.0) -> Choose:
    """A `Choose` for a worker thread: asks `llm` on `loop` (where its client lives), at most `timeout_s`."""

    def choose(pairs: list[tuple[str, str]]) -> int | None:
        call = llm.complete_json(model=model, messages=build_messages(pairs), schema=SCHEMA, timeout_s=timeout_s)
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(call, timeout_s), loop)
        try:
            reply = future.result(timeout_s + 1)
        except Exception as exc:  # timeout, provider error: the embeddings' choice stands
            future.cancel()
            log.info("semantic chunking: the language model gave no boundary (%s)", type(exc).__name__)
            return None
        parsed = parse_reply(reply, CutChoice)
        if parsed is None or parsed.cut > len(pairs):
            return None
        return parsed.cut - 1

    return choose
