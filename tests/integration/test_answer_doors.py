"""One answer pipeline behind every door (issue 41): the chat page's thread, `POST /api/rag`, `/v1` through the
official `openai` client, MCP `ask` and `ragchat search --rag` return the same verification for the same
question and the same model reply — over real HTTP, with the fake LLM server scripted identically each time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest

from tests.fakes.script import Reply
from tests.integration.test_mcp import http_session
from tests.support.accounts import setup_admin, upload, wait_ready
from tests.support.chat import all_of, first

TIDES = "Ocean tides are caused mainly by the gravity of the moon, and partly by the sun."
BREAD = "Sourdough bread rises because wild yeast ferments the dough."
# one sentence cited and supported, one uncited that the tides passage supports (repaired), one unsupported
ANSWER = (
    "Ocean tides are caused mainly by the gravity of the moon [1]. "
    "The sun also plays a part in the tides. "
    "Tides are strongest on Mondays in Lisbon [1]."
)


def _reply(body: dict[str, Any]) -> Reply:
    """The same answer whichever door asks: after a search (tool) or with the passages in the prompt."""
    messages = body["messages"]
    if body.get("tools") and messages[-1]["role"] != "tool":
        return Reply.tool_call("search_documents", {"query": "what causes ocean tides"})
    return Reply.text(ANSWER)


@pytest.fixture(params=["auto"])
async def served(
    request: pytest.FixtureRequest, live_app: Callable[..., Any], fake_ollama: Any
) -> AsyncIterator[dict[str, Any]]:
    """Admin's tides.txt and bread.txt; CHAT_RETRIEVE_FIRST as the test asks (the default, auto, unless said)."""
    server = live_app(auth="on", ingest_workers=1, ollama_host=fake_ollama.url, chat_retrieve_first=request.param)
    admin = await setup_admin(server.url)
    docs = [await upload(admin, "tides.txt", TIDES), await upload(admin, "bread.txt", BREAD)]
    await wait_ready(admin, docs)
    token = (await admin.post("/api/auth/tokens", json={"name": "doors"})).json()["token"]
    fake_ollama.responder = _reply
    yield {"server": server, "admin": admin, "token": token}
    await admin.aclose()


def _verdicts(v: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [(c["sentence"], c["n"], c["verdict"]) for c in v["citations"]]


async def _chat(admin: Any) -> tuple[str, dict[str, Any]]:
    events: list[tuple[str, dict[str, Any]]] = []
    async with admin.stream("POST", "/api/chat", json={"message": "What causes ocean tides?"}) as response:
        assert response.status_code == 200
        name = ""
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:") and name:
                events.append((name, json.loads(line[5:])))
    citations = first(events, "citations")
    thread = (await admin.get(f"/api/threads/{first(events, 'thread')['thread_id']}")).json()
    saved = [m for m in thread["messages"] if m["role"] == "assistant"][-1]
    assert saved["content"] == citations["content"]  # the saved answer is the checked one, markers added
    assert not all_of(events, "error")
    return saved["content"], citations


async def test_every_door_returns_the_same_verification(served: dict[str, Any], tmp_path: Any, db: str) -> None:
    admin, url, token = served["admin"], served["server"].url, served["token"]
    doors: dict[str, tuple[str, dict[str, Any]]] = {}

    doors["chat"] = await _chat(admin)

    rag = (await admin.post("/api/rag", json={"query": "What causes ocean tides?", "top_k": 3})).json()
    doors["rag"] = (rag["answer"], rag["verification"])

    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key=token, max_retries=0)
    done = await client.chat.completions.create(
        model="ragchat", messages=[{"role": "user", "content": "What causes ocean tides?"}]
    )
    extra = done.model_extra or {}
    text = (done.choices[0].message.content or "").split("\n\nSources:")[0]
    doors["v1"] = (text, extra["verification"])  # the extension field, next to OpenAI's own

    stream = await client.chat.completions.create(
        model="ragchat", messages=[{"role": "user", "content": "What causes ocean tides?"}], stream=True
    )
    last = None
    async for chunk in stream:
        last = chunk
    assert last is not None
    doors["v1-stream"] = (doors["v1"][0], (last.model_extra or {})["verification"])

    async with http_session(url, token) as session:
        result = await session.call_tool("ask", {"question": "What causes ocean tides?"})
        out = result.structured_content
        assert out is not None, result
        doors["mcp"] = (out["answer"], out["verification"])

    from tests.integration.test_accounts import run_cli

    env = {"RAGCHAT_DATA_DIR": str(tmp_path / "d"), "RAGCHAT_TOKEN": token, "DATABASE_URL": db}
    cli = await asyncio.to_thread(
        run_cli, "search", "What causes ocean tides?", "--rag", "--json", "--server", url, env=env
    )
    assert cli.returncode == 0, cli.stderr
    body = json.loads(cli.stdout)
    doors["cli"] = (body["answer"], body["verification"])

    expected = _verdicts(doors["chat"][1])
    assert expected == [
        ("Ocean tides are caused mainly by the gravity of the moon.", 1, "supported"),
        ("The sun also plays a part in the tides.", 1, "supported"),  # repaired: it had no marker
        ("Tides are strongest on Mondays in Lisbon.", 1, "unsupported"),
    ], expected
    for door, (answer, verification) in doors.items():
        assert _verdicts(verification) == expected, door
        assert verification["repaired"] == 1 and verification["not_covered"] is False, door
        assert answer.startswith(ANSWER.split(" The sun")[0]) and "in the tides. [1]" in answer, (door, answer)

    cli_text = await asyncio.to_thread(run_cli, "search", "What causes ocean tides?", "--rag", "--server", url, env=env)
    assert cli_text.returncode == 0 and "Checks:" in cli_text.stdout and "not supported by [1]" in cli_text.stdout


@pytest.mark.parametrize("served", ["never"], indirect=True)
async def test_an_answer_that_skips_a_required_search_is_searched_first(
    served: dict[str, Any], fake_ollama: Any
) -> None:
    """The tool loop (CHAT_RETRIEVE_FIRST=never): the model ignores tool_choice=required and answers from memory;
    the pipeline searches with the question and asks again with the passages."""

    def ignores_tools(body: dict[str, Any]) -> Reply:
        if body.get("tools"):
            return Reply.text("Tides are caused by the wind blowing over the ocean surface every afternoon.")
        return Reply.text("Ocean tides are caused mainly by the gravity of the moon [1].")

    fake_ollama.responder = ignores_tools
    client = openai.AsyncOpenAI(base_url=served["server"].url + "/v1", api_key=served["token"], max_retries=0)
    done = await client.chat.completions.create(
        model="ragchat", messages=[{"role": "user", "content": "What causes ocean tides?"}]
    )
    text = done.choices[0].message.content or ""
    assert text.startswith("Ocean tides are caused mainly by the gravity of the moon [1].") and "wind" not in text
    verification = (done.model_extra or {})["verification"]
    assert verification["searched"] is True and verification["all_supported"] is True
    offered = [bool(r.body.get("tools")) for r in fake_ollama.chat_requests]
    assert offered == [True, False]  # the tool loop's answer without a search, then retrieve-first


async def test_a_plain_lookup_is_one_model_call_and_a_summary_asked_in_words_reads_the_whole_document(
    served: dict[str, Any], fake_ollama: Any
) -> None:
    """CHAT_RETRIEVE_FIRST=auto: "What causes …?" is retrieved first and answered in one model call (no tools
    offered); "Summarise this document" typed with one document in scope reaches the whole-document tool."""
    admin = served["admin"]
    rag = await admin.post("/api/chat", json={"message": "What causes ocean tides?"})
    assert rag.status_code == 200
    await asyncio.sleep(0)
    calls = [r for r in fake_ollama.chat_requests if r.path.endswith("/api/chat")]
    assert len(calls) == 1 and not calls[0].body.get("tools"), [c.body.get("tools") for c in calls]
    assert "gravity of the moon" in json.dumps(calls[0].body["messages"])

    docs = (await admin.get("/api/documents")).json()["documents"]
    tides = next(d["id"] for d in docs if d["filename"] == "tides.txt")
    fake_ollama.chat_requests.clear()
    fake_ollama.responder = lambda body: Reply.text("The document explains that the moon's gravity causes tides [1].")
    body = {"query": "Summarise this document", "filters": {"document_ids": [tides]}}
    summary = (await admin.post("/api/rag", json=body)).json()
    assert summary["chunks"] and summary["chunks"][0]["section"].startswith("Summary of"), summary
    assert summary["verification"]["searched"] is True
    assert "no_source" not in [c["verdict"] for c in summary["verification"]["citations"]]


async def test_v1_with_tools_of_its_own_streams_ragchats_answer(served: dict[str, Any], fake_ollama: Any) -> None:
    """A client that sends `tools` and `tool_choice` of its own (e.g. an agent framework) still gets ragchat's
    grounded answer: its tools are not forwarded to the model, and the stream ends with the verification."""
    client = openai.AsyncOpenAI(base_url=served["server"].url + "/v1", api_key=served["token"], max_retries=0)
    theirs = [{"type": "function", "function": {"name": "rm_rf", "parameters": {"type": "object", "properties": {}}}}]
    stream = await client.chat.completions.create(
        model="ragchat",
        messages=[{"role": "user", "content": "What causes ocean tides?"}],
        tools=theirs,  # type: ignore[arg-type]
        tool_choice="required",
        stream=True,
    )
    parts, last = [], None
    async for chunk in stream:
        last = chunk
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
        assert not (chunk.choices and chunk.choices[0].delta.tool_calls)
    assert "".join(parts).startswith("Ocean tides are caused mainly by the gravity of the moon [1].")
    assert last is not None and (last.model_extra or {})["verification"]["citations"]
    offered = [t["function"]["name"] for r in fake_ollama.chat_requests for t in r.body.get("tools") or []]
    assert "rm_rf" not in offered
