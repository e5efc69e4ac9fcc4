"""Probe the real model's wire behaviour over raw HTTP and dump what it sends (the source of FINDINGS.md).

    .venv/bin/python -m tests.real.probe [--base-url http://127.0.0.1:PORT/v1] [--out probe.json] [--repeat 5]

Without --base-url it starts its own server (RealLLM). Requests mirror what the app sends: its system prompt and
`search_documents` tool (copied below so this script does not depend on server/), streamed with
`stream_options.include_usage`, no temperature (the server's default, 0.8) for chat, temperature 0 for JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from ragchat.chat.engine.prompts import SYSTEM_PROMPT
from ragchat.chat.engine.tools import SEARCH_TOOL
from tests.real.model import RealLLM
from tests.real.test_probe import SEARCH_TOOL as SIMPLE_TOOL
from tests.real.test_probe import SYSTEM as SIMPLE_SYSTEM

# The app's own prompt and tool schema, as the chat loop sends them (probe what ragchat really sends)

QUESTION = "What is the warranty period of the X200 dishwasher according to my documents?"
TOOL_RESULT = json.dumps(
    {
        "passages": [
            {
                "number": 1,
                "source": "x200-manual.pdf, page 14, section: Warranty",
                "text": "The X200 dishwasher is covered by a limited warranty of 24 months from the date of "
                "purchase. The motor is covered for 10 years.",
            },
            {
                "number": 2,
                "source": "x200-manual.pdf, page 15",
                "text": "The warranty does not cover damage caused by improper installation or use of "
                "non-approved detergents.",
            },
        ],
        "insufficient_confidence": False,
    }
)
SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}},
    "required": ["score"],
}
RERANK_PROMPT = (
    "Rate how well the passage answers the question, from 0 (irrelevant) to 1 (answers it fully). "
    'Reply with JSON: {"score": number}.\n\nQuestion: What is the warranty period of the X200 dishwasher?\n\n'
    "Passage: The X200 dishwasher is covered by a limited warranty of 24 months from the date of purchase."
)


def base_messages() -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": QUESTION}]


def stream(client: httpx.Client, url: str, body: dict[str, Any]) -> dict[str, Any]:
    """One streamed request: the raw `data:` lines, the assembled content/tool calls, and timings."""
    body = {k: v for k, v in body.items() if v is not None} | {
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    started = time.monotonic()
    first_token = None
    lines: list[str] = []
    content = ""
    calls: dict[int, dict[str, str]] = {}
    finish = None
    last: dict[str, Any] = {}
    with client.stream("POST", f"{url}/chat/completions", json=body) as r:
        if r.status_code != 200:
            return {"status": r.status_code, "body": r.read().decode()}
        for line in r.iter_lines():
            if not line:
                continue
            lines.append(line)
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            last = chunk
            for choice in chunk.get("choices", []):
                delta = choice.get("delta", {})
                if delta.get("content"):
                    first_token = first_token or time.monotonic()
                    content += delta["content"]
                for part in delta.get("tool_calls") or []:
                    first_token = first_token or time.monotonic()
                    slot = calls.setdefault(part["index"], {"id": "", "name": "", "arguments": ""})
                    slot["id"] = part.get("id") or slot["id"]
                    fn = part.get("function") or {}
                    slot["name"] += fn.get("name") or ""
                    slot["arguments"] += fn.get("arguments") or ""
                finish = choice.get("finish_reason") or finish
    return {
        "status": 200,
        "seconds": round(time.monotonic() - started, 2),
        "first_token_s": round(first_token - started, 2) if first_token else None,
        "content": content,
        "tool_calls": list(calls.values()),
        "finish_reason": finish,
        "n_lines": len(lines),
        "raw_head": lines[:4],
        "raw_tool_lines": [ln for ln in lines if '"tool_calls"' in ln][:8],
        "raw_tail": lines[-3:],
        "usage": last.get("usage"),
        "timings": last.get("timings"),
    }


def post(client: httpx.Client, url: str, body: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    body = {k: v for k, v in body.items() if v is not None} | {"stream": False}
    r = client.post(f"{url}/chat/completions", json=body)
    out: dict[str, Any] = {"status": r.status_code, "seconds": round(time.monotonic() - started, 2)}
    try:
        out["body"] = r.json()
    except ValueError:
        out["body"] = r.text
    return out


def classify(content: str, tool_calls: list[Any]) -> str:
    """structured / json-text / fenced-json / prose, with `+prose` when text came with a structured call."""
    if tool_calls:
        return "structured" + ("+prose" if content.strip() else "")
    text = content.strip()
    if re.search(r"```(json)?\s*\{.*\}\s*```", text, re.S):
        return "fenced-json"
    if "<tool_call>" in text:
        return "tagged-json"
    if re.search(r'\{\s*"name"\s*:\s*"search_documents"', text):
        return "json-text"
    return "prose"


def run(url: str, repeat: int) -> dict[str, Any]:
    root = url.removesuffix("/v1")
    report: dict[str, Any] = {}
    # llama.cpp closes the connection after every streamed response although it says Keep-Alive: a pooled
    # connection reused right after a stream fails with "Server disconnected without sending a response".
    with httpx.Client(timeout=300, headers={"Connection": "close"}) as client:
        report["models"] = client.get(f"{url}/models").json()
        props = client.get(f"{root}/props").json()
        props.pop("chat_template", None)
        report["props"] = props
        report["health"] = client.get(f"{root}/health").json()
        model = report["models"]["data"][0]["id"]

        print("plain streamed chat…", flush=True)
        report["plain_stream"] = stream(
            client,
            url,
            {"model": model, "messages": [{"role": "user", "content": "Say hello in five words."}], "max_tokens": 48},
        )
        print("long generation (tokens/s)…", flush=True)
        report["long_stream"] = stream(
            client,
            url,
            {
                "model": model,
                "messages": [{"role": "user", "content": "Explain in about 150 words what a dishwasher does."}],
                "max_tokens": 256,
                "temperature": 0,
            },
        )

        tool_body = {"model": model, "messages": base_messages(), "tools": [SEARCH_TOOL]}
        print("tool turn, streamed, temperature 0…", flush=True)
        report["tool_stream_t0"] = stream(client, url, {**tool_body, "temperature": 0})
        print("tool turn, non-streamed, temperature 0…", flush=True)
        report["tool_nonstream_t0"] = post(client, url, {**tool_body, "temperature": 0})
        runs = []
        for i in range(repeat):
            print(f"tool turn, streamed, server default temperature, run {i + 1}/{repeat}…", flush=True)
            res = stream(client, url, tool_body)
            res["kind"] = classify(res.get("content", ""), res.get("tool_calls", []))
            runs.append(res)
        report["tool_stream_repeat"] = runs
        report["tool_stream_repeat_kinds"] = Counter(r["kind"] for r in runs)

        # The same with tool_choice "required" (llama.cpp then constrains the output to a call with a grammar), and
        # with "auto" but no system prompt (the template's default one).
        print("tool turn, short system prompt and tool (as in test_probe), streamed, temperature 0…", flush=True)
        report["tool_simple_stream_t0"] = stream(
            client,
            url,
            {
                "model": model,
                "messages": [{"role": "system", "content": SIMPLE_SYSTEM}, {"role": "user", "content": QUESTION}],
                "tools": [SIMPLE_TOOL],
                "temperature": 0,
            },
        )
        required = {**tool_body, "tool_choice": "required"}
        print("tool turn, tool_choice=required, streamed, temperature 0…", flush=True)
        report["tool_required_stream_t0"] = stream(client, url, {**required, "temperature": 0})
        for name, body in (
            ("tool_required_repeat", required),
            ("tool_nosystem_repeat", {**tool_body, "messages": base_messages()[1:]}),
        ):
            runs = []
            for i in range(repeat):
                print(f"{name} {i + 1}/{repeat}…", flush=True)
                res = stream(client, url, body)
                res["kind"] = classify(res.get("content", ""), res.get("tool_calls", []))
                runs.append(res)
            report[name] = runs
            report[f"{name}_kinds"] = Counter(r["kind"] for r in runs)

        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "search_documents", "arguments": json.dumps({"query": "X200 warranty period"})},
        }
        after_tool = [
            *base_messages(),
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": TOOL_RESULT},
        ]
        print("tool result turn, tools offered…", flush=True)
        report["tool_result_with_tools"] = [
            stream(client, url, {"model": model, "messages": after_tool, "tools": [SEARCH_TOOL], "temperature": t})
            for t in (0, None)
        ]
        print("tool result turn, no tools…", flush=True)
        report["tool_result_without_tools"] = [
            stream(client, url, {"model": model, "messages": after_tool, "temperature": t}) for t in (0, None)
        ]

        print("json_schema…", flush=True)
        rf = {"type": "json_schema", "json_schema": {"name": "score", "schema": SCORE_SCHEMA}}
        js = []
        for strict in (False, True):
            fmt = {**rf, "json_schema": {**rf["json_schema"], "strict": True}} if strict else rf
            js.append(
                post(
                    client,
                    url,
                    {
                        "model": model,
                        "messages": [{"role": "user", "content": RERANK_PROMPT}],
                        "temperature": 0,
                        "response_format": fmt,
                    },
                )
            )
        report["json_schema"] = js
        report["json_schema_irrelevant"] = post(
            client,
            url,
            {
                "model": model,
                "messages": [{"role": "user", "content": RERANK_PROMPT.replace("24 months", "blue and white")}],
                "temperature": 0,
                "response_format": rf,
            },
        )
        report["json_object"] = post(
            client,
            url,
            {
                "model": model,
                "messages": [{"role": "user", "content": RERANK_PROMPT}],
                "temperature": 0,
                "response_format": {"type": "json_object"},
            },
        )

        print("context overflow…", flush=True)
        long_text = "The X200 dishwasher manual. " * 600  # ~4.8k tokens (8 a sentence)
        over = {"model": model, "messages": [{"role": "user", "content": long_text + "\nSummarize."}]}
        report["overflow_nonstream"] = post(client, url, {**over, "max_tokens": 16})
        report["overflow_stream"] = stream(client, url, {**over, "max_tokens": 16})
        near = "The X200 dishwasher manual. " * 450  # ~3.6k tokens: the prompt fits, the generation would not
        report["overflow_generation"] = post(
            client,
            url,
            {
                "model": model,
                "messages": [{"role": "user", "content": near + "\nRepeat the text above verbatim."}],
                "max_tokens": 2000,
                "temperature": 0,
            },
        )
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--out", type=Path, default=Path("/tmp/real-llm-probe.json"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.base_url:
        report = run(args.base_url, args.repeat)
    else:
        with RealLLM() as llm:
            print(f"server ready in {llm.startup_seconds:.1f} s at {llm.base_url} (model {llm.model})", flush=True)
            report = run(llm.base_url, args.repeat)
            report["startup_seconds"] = llm.startup_seconds
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
