"""Standalone search queries for retrieve-then-answer: "and what about the second one?" searches nothing
useful, so a follow-up is rewritten from the thread into a query that stands alone, with one short
structured-output call (`{"query": "..."}`) bounded by CHAT_REWRITE_TIMEOUT_S. On a timeout, an error or a
reply that is not a usable query, the raw question is searched, and the tool call says why."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from ragchat.providers.llm.base import LLMError, LLMProvider
from ragchat.providers.llm.replies import parse_reply

log = logging.getLogger(__name__)

HISTORY_MESSAGES = 6  # the thread's last messages the rewrite sees
HISTORY_CHARS = 800  # of each
MAX_QUERY_CHARS = 300

REWRITE_PROMPT = """\
You turn the user's latest message in a conversation into ONE standalone search query for their documents.
- Resolve pronouns and references ("it", "the second one", "that paper") from the conversation.
- Keep names, numbers and technical terms exactly. Do not answer the question.
- If the latest message already stands alone, return it unchanged.
Reply with JSON only: {"query": "<the standalone query>"}"""


class RewriteReply(BaseModel):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS * 2)


REWRITE_SCHEMA: dict[str, Any] = RewriteReply.model_json_schema()


@dataclass(frozen=True)
class Rewrite:
    query: str  # what is searched
    outcome: str  # "rewritten", "unchanged", or "fallback: <why>"


def _conversation(history: list[dict[str, Any]], question: str) -> str:
    lines = []
    for message in history[-HISTORY_MESSAGES:]:
        text = " ".join(str(message.get("content") or "").split())
        if len(text) > HISTORY_CHARS:
            text = text[:HISTORY_CHARS] + "…"
        lines.append(f"{message['role']}: {text}")
    lines.append(f"user (latest message): {' '.join(question.split())}")
    return "\n".join(lines)


def usable(query: str, question: str) -> str | None:
    """The rewritten query when it is one (a line of text, not empty, not an essay), else None."""
    text = " ".join(query.replace("\x00", " ").split()).strip(" \"'")
    if not text or len(text) > MAX_QUERY_CHARS or len(text) > 4 * max(len(question), 80):
        return None
    return text


async def standalone_query(
    llm: LLMProvider, model: str, history: list[dict[str, Any]], question: str, timeout_s: float
) -> Rewrite:
    """The query to search for `question` given the earlier `history` ({role, content}, oldest first)."""
    turns = [m for m in history if m.get("role") in ("user", "assistant") and m.get("content")]
    if not turns:
        return Rewrite(question, "unchanged")
    messages = [
        {"role": "system", "content": REWRITE_PROMPT},
        {"role": "user", "content": _conversation(turns, question)},
    ]
    try:
        raw = await asyncio.wait_for(
            llm.complete_json(model=model, messages=messages, schema=REWRITE_SCHEMA, timeout_s=timeout_s),
            timeout=timeout_s,
        )
    except TimeoutError:
        log.info("query rewrite timed out after %.1f s: searching the raw question", timeout_s)
        return Rewrite(question, f"fallback: no answer within {timeout_s:g} s")
    except LLMError as exc:
        log.info("query rewrite failed (%s): searching the raw question", exc)
        return Rewrite(question, "fallback: the model failed")
    reply = parse_reply(raw, RewriteReply)
    query = usable(reply.query, question) if reply else None
    if query is None:
        return Rewrite(question, "fallback: the reply was not a query")
    if query.casefold() == " ".join(question.split()).casefold():
        return Rewrite(question, "unchanged")
    return Rewrite(query, "rewritten")
