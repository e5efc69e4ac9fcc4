"""Fit a request to the model's context window: history, passages and the tool schema, never a 400 for length.

Tokens are estimated from characters (`CHARS_PER_TOKEN`, on the safe side for English and code with BPE
tokenizers). What goes first when the request is too long:
1. the oldest history messages (the system prompt, the question and this turn's tool exchange stay);
2. then passages, from the end of each tool result, cut at passage boundaries (one passage always stays);
3. what still does not fit is sent as it is, and a server that refuses it ends the turn with
   `context_overflow` (the loop first retries once with half the budget).
"""

from __future__ import annotations

import json
import re
from typing import Any

CHARS_PER_TOKEN = 3.0
MESSAGE_OVERHEAD = 8  # role markers and separators of a chat template, per message
_PASSAGE_START = re.compile(r"\n\n(?=\[\d+\] )")
_TRAILER = "\n\n---\n"


def estimate_tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


def message_tokens(message: dict[str, Any]) -> int:
    tokens = MESSAGE_OVERHEAD + estimate_tokens(str(message.get("content") or ""))
    for call in message.get("tool_calls") or []:
        arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        tokens += estimate_tokens(call.name + arguments) + MESSAGE_OVERHEAD
    return tokens


def request_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
    return sum(message_tokens(m) for m in messages) + (estimate_tokens(json.dumps(tools)) if tools else 0)


def _trim_passages(content: str, excess_tokens: int) -> tuple[str, int]:
    """Drop trailing passages of a tool result (keeping the first, and the instructions after `---`) until
    `excess_tokens` are saved."""
    body, sep, trailer = content.partition(_TRAILER)
    parts = _PASSAGE_START.split(body)
    saved = 0
    while len(parts) > 2 and saved < excess_tokens:  # parts[0] is the header, parts[1] the first passage
        saved += estimate_tokens(parts.pop())
    return "\n\n".join(parts) + sep + trailer, saved


def fit(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, budget: int) -> list[dict[str, Any]]:
    """A copy of `messages` whose estimated size, with `tools`, is at most `budget` tokens where possible."""
    out = list(messages)
    excess = request_tokens(out, tools) - budget
    if excess <= 0:
        return out
    last_user = max((i for i, m in enumerate(out) if m.get("role") == "user"), default=0)
    # 1. oldest history first (between the system prompt and the current question)
    i = 1
    while excess > 0 and i < last_user:
        excess -= message_tokens(out[i])
        del out[i]
        last_user -= 1
    # 2. then passages, newest tool results last to lose theirs
    for j in range(len(out)):
        if excess <= 0:
            break
        if out[j].get("role") == "tool":
            content, saved = _trim_passages(str(out[j].get("content") or ""), excess)
            if saved:
                out[j] = {**out[j], "content": content}
                excess -= saved
    return out
