"""Reading a JSON object out of a model's reply: reasoning blocks, code fences and prose around it dropped,
then validated by a Pydantic model. Used by every validated-schema call (rerank, citation judge, eval questions)."""

from __future__ import annotations

import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

_THINK_BLOCK = re.compile(r"<(think|thinking)>.*?</\1>", re.S | re.I)
_THINK_CLOSE = re.compile(r"</(?:think|thinking)>", re.I)
_THINK_OPEN = re.compile(r"<(?:think|thinking)>", re.I)
_FENCE = re.compile(r"```[\w+-]*")


def clean_reply(text: str) -> str:
    """Strip `<think>` blocks, code fences and prose around the JSON object of a model reply."""
    text = _THINK_BLOCK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:  # reasoning whose opening tag was part of the prompt template: drop everything up to its end
        text = text[closes[-1].end() :]
    opened = _THINK_OPEN.search(text)
    if opened:  # unterminated reasoning (cut off): it is not an answer
        text = text[: opened.start()]
    text = _FENCE.sub("", text)
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        return text[start : end + 1]
    return text.strip()


def parse_reply(text: str | None, model: type[T]) -> T | None:
    """The reply validated as `model`, or None when there is no valid object in it."""
    if not text:
        return None
    try:
        return model.model_validate_json(clean_reply(text))
    except (ValidationError, ValueError):
        return None
