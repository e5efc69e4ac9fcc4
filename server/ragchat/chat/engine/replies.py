"""What real models do to a turn, and how the loop copes (seen with Qwen2.5-Coder-1.5B on llama.cpp):

- prose before a tool call ("I'll search for that…"), then leftovers like `<tools>` or a lone `{`: from the
  first `{`, `<` or code fence on, a round that offers tools holds its text back until it ends, and drops
  it if the round called a tool;
- a tool call written as JSON text (bare, in a code fence, or in `<tool_call>` tags) instead of a
  structured call: recognised and run as a call;
- citations `[n]` beyond the passages given: reported in `done`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ragchat.providers.llm.base import ToolCall

_MARKERS = ("{", "<", "```")  # where a tool call written as text, or template leftovers, can start
_FENCE = re.compile(r"```(?:json|tool_call)?\s*(.*?)```", re.S | re.I)
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S | re.I)
_CITE = re.compile(r"\[(\d{1,3})\]")


class HoldBack:
    """Filters one round's text deltas while tools are offered. Prose streams at once; from the first `{`,
    `<` or code fence on, text is held until the round ends: dropped if the round called a tool, run as the
    call if it is one written as text, shown otherwise. `feed` returns what may be shown now."""

    def __init__(self, active: bool) -> None:
        self.active = active
        self.held = ""
        self.holding = False
        self.shown = False

    def feed(self, delta: str) -> str:
        if not self.active:
            return delta
        if self.holding:
            self.held += delta
            return ""
        text = self.held + delta  # `held` may be a trailing "`" or "``" that could open a fence
        self.held = ""
        cut = min((i for i in (text.find(m) for m in _MARKERS) if i != -1), default=-1)
        if cut != -1:
            self.holding = True
            self.held = text[cut:]
            text = text[:cut]
        else:
            tail = len(text) - len(text.rstrip("`"))
            if tail:
                self.held, text = text[-tail:], text[:-tail]
        self.shown = self.shown or bool(text.strip())
        return text

    def finish(self, had_calls: bool, tool_name: str) -> tuple[str, ToolCall | None]:
        """(text still to show, a tool call written as text)."""
        held, self.held = self.held, ""
        if had_calls:  # leftovers of the call are dropped; prose already shown is set apart from the answer
            return ("\n\n" if self.shown else ""), None
        call = text_tool_call(held, tool_name) if held.strip() else None
        return ("\n\n" if self.shown else "", call) if call else (held, None)

    def flush(self) -> str:
        """What was held, when the round ends in an error: it is the partial answer."""
        held, self.held = self.held, ""
        return held


def _candidates(text: str) -> list[str]:
    found = [m.group(1) for m in _TAGGED.finditer(text)] + [m.group(1) for m in _FENCE.finditer(text)]
    start = text.find("{")
    if start != -1:
        found.append(text[start : text.rfind("}") + 1])
    return found


def text_tool_call(text: str, tool_name: str) -> ToolCall | None:
    """A call of `tool_name` written as JSON text: `{"name": …, "arguments": {…}}` (or `parameters`), an
    OpenAI-style `{"function": {…}}`, or the bare arguments `{"query": …}` when that is the whole reply."""
    for raw in _candidates(text):
        try:
            obj: Any = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        inner = obj.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else obj
        name = fn.get("name")
        args = fn.get("arguments", fn.get("parameters"))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = None
        if name == tool_name and isinstance(args, dict):
            return ToolCall("text_call", tool_name, args)
        if name is None and isinstance(obj.get("query"), str) and raw.strip() == text.strip().strip("`").strip():
            return ToolCall("text_call", tool_name, {"query": obj["query"]})
    return None


def cited_numbers(text: str) -> list[int]:
    """The passage numbers an answer cites, in order of first use."""
    return list(dict.fromkeys(int(n) for n in _CITE.findall(text)))


def citation_report(text: str, passages: int) -> dict[str, list[int]]:
    """`{"cited": […], "invalid": […]}`: invalid ones point past the passages the searches returned."""
    cited = cited_numbers(text)
    return {"cited": cited, "invalid": [n for n in cited if not 1 <= n <= passages]}
