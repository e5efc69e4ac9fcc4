"""Whether the documents cover a question: "not in your documents" as an answer of its own.

A turn is *not covered* when it searched and every search's best passage fell below CONFIDENCE_FLOOR (the
confidence of the passages the model was given, `tool_result.confidence`). The model is told so in the tool
message (prompts.py) and asked to say the documents do not cover it; the page then says it plainly and offers
to search everything when the thread was scoped. With `documents_only` (a user's preference, a thread's
override) the model is not asked at all: the turn ends with `REFUSAL`, so nothing comes from its own knowledge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

NOT_COVERED = "not_covered"  # the turn's finish_reason when documents_only refused
REFUSAL = (
    "Your documents don't cover this: none of the passages found matches the question closely enough, "
    "and this chat answers only from your documents."
)


def _insufficient(result: Mapping[str, Any]) -> bool:
    confidence = result.get("confidence") or {}
    return bool(confidence.get("insufficient", confidence.get("insufficient_confidence", False)))


def not_covered(tool_results: Iterable[Mapping[str, Any]]) -> bool:
    """The turn searched, and no search found a passage that matches well enough."""
    results = list(tool_results)
    return bool(results) and all(_insufficient(r) for r in results)
