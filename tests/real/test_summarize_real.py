"""The Summarise action on the real model (Qwen2.5-Coder-1.5B via llama.cpp, 4096-token window): a small
document is read whole, each part summarised by the model, and the answer states its facts citing the parts.
Only what must hold for a real model is asserted: the protocol's order, progress, the facts, valid [n]."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.real.test_chat_real import start, upload_all  # noqa: F401  (the `start` fixture)
from tests.support.chat import chat, first, names, text_of


async def test_summarise_a_small_document(start: Callable[..., Any]) -> None:  # noqa: F811
    server = start()
    ids = await upload_all(server.url)
    body = {"message": "Summarise this document.", "document_ids": [ids["x200-manual.txt"]], "task": "summarize"}
    events = await chat(server.url, body, read_timeout=600)
    flow = names(events)
    assert flow[:2] == ["thread", "tool_call"] and "progress" in flow and flow[-1] == "done", flow
    result = first(events, "tool_result")
    assert result["summary"]["parts"] == 1 and result["chunks"][0]["filename"] == "x200-manual.txt"
    assert "3 years" in result["chunks"][0]["content"] or "three years" in result["chunks"][0]["content"].lower()
    answer = text_of(events)
    assert "warranty" in answer.lower()
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer)}
    assert cited <= {1} and first(events, "done")["citations"]["invalid"] == []
