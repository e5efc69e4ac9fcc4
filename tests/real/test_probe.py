"""The real-model infrastructure over raw HTTP (not through the app): streaming, a tool call, a JSON-schema reply.

Only what must hold for a real 1.5B model is asserted. Which form a tool call took is recorded with
`record_property` and printed (see it with `-s` or `-rA`).
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from tests.real.model import RealLLM

TIMEOUT = httpx.Timeout(180.0, connect=5.0)

SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search_documents",
        "description": "Search the user's uploaded documents and return the most relevant passages.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look for."}},
            "required": ["query"],
        },
    },
}
SYSTEM = (
    "You answer questions about the user's own documents. For any question the documents might answer, "
    "call the search_documents tool first with a short query."
)
QUESTION = "What is the warranty period of the X200 dishwasher according to my documents?"


def sse_chunks(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON chunks of an OpenAI-style SSE stream; asserts it ends with `data: [DONE]`."""
    chunks: list[dict[str, Any]] = []
    done = False
    for line in response.iter_lines():
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            done = True
            continue
        chunks.append(json.loads(line[len("data: ") :]))
    assert done, "the stream did not end with data: [DONE]"
    return chunks


def test_models_and_props(real_llm: RealLLM) -> None:
    models = httpx.get(f"{real_llm.base_url}/models", timeout=TIMEOUT).json()
    assert [m["id"] for m in models["data"]] == [real_llm.model]
    props = httpx.get(f"{real_llm.root_url}/props", timeout=TIMEOUT).json()
    assert props["default_generation_settings"]["n_ctx"] == 4096


def test_streamed_chat_returns_text(real_llm: RealLLM) -> None:
    body = {
        "model": real_llm.model,
        "messages": [{"role": "user", "content": "Say hello in five words."}],
        "stream": True,
        "max_tokens": 32,
        "temperature": 0,
    }
    with httpx.stream("POST", f"{real_llm.base_url}/chat/completions", json=body, timeout=TIMEOUT) as r:
        assert r.status_code == 200, r.read()
        chunks = sse_chunks(r)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c.get("choices") and c["choices"][0]["finish_reason"]]
    assert len(chunks) > 2  # streamed in pieces, not one blob
    assert text.strip()
    assert finish and finish[-1] in ("stop", "length")


def tool_call_of(message: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """('structured' | 'json-text', arguments) when the message calls search_documents, else None."""
    for call in message.get("tool_calls") or []:
        if call["function"]["name"] == "search_documents":
            return "structured", json.loads(call["function"]["arguments"])
    content = message.get("content") or ""
    for match in re.finditer(r"\{.*\}", content, re.S):
        try:
            payload = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(payload, dict) and payload.get("name") == "search_documents":
            args = payload.get("arguments") or payload.get("parameters") or {}
            return "json-text", args if isinstance(args, dict) else json.loads(args)
    return None


def test_tool_request_yields_a_search_call(real_llm: RealLLM, record_property: Any) -> None:
    """tool_choice "auto": this short prompt makes the model call (at temperature 0, usually after some prose)."""
    body = {
        "model": real_llm.model,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
        "tools": [SEARCH_TOOL],
        "temperature": 0,
        "max_tokens": 256,
    }
    r = httpx.post(f"{real_llm.base_url}/chat/completions", json=body, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    found = tool_call_of(choice["message"])
    assert found is not None, f"no search_documents call in {choice}"
    kind, arguments = found
    prose = bool((choice["message"].get("content") or "").strip()) and kind == "structured"
    record_property("tool_call_form", kind + ("+prose" if prose else ""))
    print(f"tool call form: {kind}{' +prose' if prose else ''}; finish_reason={choice['finish_reason']}; {arguments}")
    assert isinstance(arguments.get("query"), str) and arguments["query"].strip()


def test_required_tool_choice_yields_a_structured_call(real_llm: RealLLM) -> None:
    """tool_choice "required": llama.cpp constrains the output to a call, streamed as `tool_calls` deltas."""
    body = {
        "model": real_llm.model,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
        "tools": [SEARCH_TOOL],
        "tool_choice": "required",
        "temperature": 0,
        "max_tokens": 128,
        "stream": True,
    }
    with httpx.stream("POST", f"{real_llm.base_url}/chat/completions", json=body, timeout=TIMEOUT) as r:
        assert r.status_code == 200, r.read()
        chunks = sse_chunks(r)
    name, arguments, finish = "", "", None
    for chunk in chunks:
        for choice in chunk.get("choices", []):
            for part in choice["delta"].get("tool_calls") or []:
                assert part["index"] == 0
                name += part.get("function", {}).get("name") or ""
                arguments += part.get("function", {}).get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    assert name == "search_documents"
    assert finish == "tool_calls"
    query = json.loads(arguments)["query"]
    assert isinstance(query, str) and query.strip()


@pytest.mark.parametrize("passage", ["a limited warranty of 24 months from the date of purchase", "blue and white"])
def test_json_schema_reply_is_a_score(real_llm: RealLLM, passage: str) -> None:
    prompt = (
        "Rate how well the passage answers the question, from 0 (irrelevant) to 1 (answers it fully). "
        f"Question: What is the warranty period of the X200 dishwasher?\nPassage: The X200 dishwasher has {passage}."
    )
    body = {
        "model": real_llm.model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "max_tokens": 64,
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "score",
                "schema": {
                    "type": "object",
                    "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}},
                    "required": ["score"],
                },
            },
        },
    }
    r = httpx.post(f"{real_llm.base_url}/chat/completions", json=body, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    content = r.json()["choices"][0]["message"]["content"]
    payload = json.loads(content)  # grammar-constrained: bare JSON, no fences
    score = payload["score"]
    assert isinstance(score, int | float)
    assert 0 <= score <= 1  # the grammar enforces minimum/maximum too
