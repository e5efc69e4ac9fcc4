"""A thread's title from its first exchange: one short LLM call after the first answer is saved.

The thread starts titled with the trimmed question (prompts.thread_title); `generate_title` asks the chat
model for a few words, and the service replaces the title only if nobody renamed the thread meanwhile. Any
failure (timeout, invalid JSON, an empty or absurd title) keeps the trimmed question.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import unicodedata
from typing import Any

from ragchat.chat.engine.prompts import thread_title
from ragchat.providers.llm.base import LLMProvider

log = logging.getLogger(__name__)
TITLE_SCHEMA: dict[str, Any] = {
    "title": "ThreadTitle",
    "type": "object",
    "properties": {"title": {"type": "string", "maxLength": 80}},
    "required": ["title"],
}
TITLE_PROMPT = (
    "Write a title for this conversation: 2 to 7 words that name its subject, in the language of the question, "
    'no quotes, no final full stop. Reply as JSON: {"title": "..."}.'
)
EXCHANGE_CHARS = 1500  # of the question and of the answer
_MARKERS = re.compile(r"\[\d{1,3}(?:\s*,\s*\d{1,3})*\]")


def clean_title(raw: str) -> str | None:
    """The model's title made safe to show: one line, no control or format characters, no quotes or
    Markdown around it, at most 60 characters on a word boundary; None when nothing sensible is left."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    title = value.get("title") if isinstance(value, dict) else None
    if not isinstance(title, str):
        return None
    title = "".join(" " if unicodedata.category(c)[0] in "CZ" else c for c in title)
    title = _MARKERS.sub("", title)
    title = " ".join(title.split()).strip(" \"'`*#_.:;-–—“”‘’«»")
    if len(title) < 2 or not any(c.isalnum() for c in title):
        return None
    return thread_title(title)


async def generate_title(llm: LLMProvider, model: str, question: str, answer: str, timeout_s: float) -> str | None:
    """A title for the exchange, or None (the caller keeps the trimmed question)."""
    exchange = f"Question: {question[:EXCHANGE_CHARS]}\n\nAnswer: {_MARKERS.sub('', answer)[:EXCHANGE_CHARS]}"
    messages = [{"role": "system", "content": TITLE_PROMPT}, {"role": "user", "content": exchange}]
    try:
        raw = await asyncio.wait_for(
            llm.complete_json(model=model, messages=messages, schema=TITLE_SCHEMA, timeout_s=timeout_s), timeout_s
        )
    except Exception as exc:  # the fallback title stays; never an error for the user
        log.info("chat: no generated title (%s)", type(exc).__name__)
        return None
    return clean_title(raw)
