"""POST /api/rag and the OpenAI-compatible endpoint over real HTTP, driven by the official `openai` client."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from tests.fakes.script import Reply
from tests.support.accounts import setup_admin, upload, wait_ready

TIDES = "Ocean tides are caused mainly by the gravity of the moon, and partly by the sun."


@pytest.fixture
async def served(live_app: Callable[..., Any], fake_ollama: Any) -> dict[str, Any]:
    server = live_app(auth="on", ingest_workers=1, ollama_host=fake_ollama.url)
    admin = await setup_admin(server.url)
    doc = await upload(admin, "tides.txt", TIDES)
    await upload(admin, "bread.txt", "Sourdough bread rises because wild yeast ferments the dough.")
    await wait_ready(admin, [doc])
    token = (await admin.post("/api/auth/tokens", json={"name": "tests"})).json()["token"]
    return {"server": server, "admin": admin, "token": token, "doc": doc}


async def test_rag_answers_with_chunks_and_a_debug_trace(served: dict[str, Any], fake_ollama: Any) -> None:
    fake_ollama.enqueue(Reply.text("The moon's gravity causes tides [1]."))
    admin = served["admin"]
    r = await admin.post("/api/rag", json={"query": "What causes ocean tides?", "top_k": 2})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["answer"] == "The moon's gravity causes tides [1]."
    assert body["chunks"][0]["n"] == 1 and body["chunks"][0]["filename"] == "tides.txt"
    assert len(body["chunks"]) <= 2 and body["citations"]["cited"] == [1]
    debug = body["debug"]
    assert debug["search_mode"] == "hybrid" and debug["reranked"] is False
    assert debug["vectorResults"][0]["rank"] == 1 and debug["keywordResults"][0]["filename"] == "tides.txt"
    assert debug["stats"]["total_ms"] >= debug["stats"]["answer_ms"] > 0
    # one model call, retrieve-then-answer: the passages are in the prompt, no tools offered
    (request,) = fake_ollama.chat_requests
    assert "gravity of the moon" in str(request.body["messages"]) and not request.body.get("tools")

    assert (await admin.post("/api/rag", json={"query": "  "})).status_code == 400
    assert (await admin.post("/api/rag", json={"query": "x", "top_k": 500})).status_code == 400
    unknown = await admin.post("/api/rag", json={"query": "x", "filters": {"document_ids": [str(uuid.uuid4())]}})
    assert unknown.status_code == 404 and unknown.json()["code"] == "not_found"
    fake_ollama.enqueue(Reply.text("n/a"))
    scoped = await admin.post(
        "/api/rag", json={"query": "bread", "filters": {"document_ids": [served["doc"]]}, "debug": False}
    )
    assert scoped.status_code == 200 and scoped.json()["debug"] is None
    assert {c["document_id"] for c in scoped.json()["chunks"]} <= {served["doc"]}


async def test_rag_reports_an_unreachable_llm(live_app: Callable[..., Any], closed_ollama_url: str) -> None:
    server = live_app(auth="off", ollama_host=closed_ollama_url)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await client.post("/api/rag", json={"query": "anything"})
    assert r.status_code == 503 and r.json()["code"] == "llm_unreachable" and "ollama" in r.json()["detail"].lower()


def _search_then_answer(body: dict[str, Any]) -> Reply:
    if body["messages"][-1]["role"] == "tool":
        return Reply.text("Tides come from the moon's gravity [1].", token_delay=0.01)
    return Reply.tool_call("search_documents", {"query": "ocean tides cause"})


async def test_the_openai_client_gets_grounded_answers(served: dict[str, Any], fake_ollama: Any) -> None:
    client = openai.AsyncOpenAI(base_url=served["server"].url + "/v1", api_key=served["token"], max_retries=0)
    models = await client.models.list()
    assert [m.id for m in models.data] == ["ragchat"]

    fake_ollama.responder = _search_then_answer
    done = await client.chat.completions.create(
        model="ragchat",
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "What causes tides?"},
        ],
    )
    text = done.choices[0].message.content or ""
    assert text.startswith("Tides come from the moon's gravity [1].") and "Sources:\n[1] tides.txt" in text
    extra = done.model_extra or {}
    assert extra["sources"][0]["filename"] == "tides.txt" and done.usage is not None
    sent = fake_ollama.chat_requests[0].body["messages"]
    assert {"role": "assistant", "content": "Hello!"} in sent and "be brief" not in str(sent)

    stream = await client.chat.completions.create(
        model="ragchat", messages=[{"role": "user", "content": "What causes tides?"}], stream=True
    )
    parts, last = [], None
    async for chunk in stream:
        last = chunk
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    assert len(parts) > 3 and "".join(parts).startswith("Tides come from")
    assert last is not None and last.choices[0].finish_reason == "stop"
    assert (last.model_extra or {})["sources"][0]["n"] == 1

    bad = openai.AsyncOpenAI(base_url=served["server"].url + "/v1", api_key="rc_nope", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        await bad.models.list()
    with pytest.raises(openai.BadRequestError) as err:
        await client.chat.completions.create(model="ragchat", messages=[{"role": "assistant", "content": "x"}])
    assert "user message" in str(err.value)


async def test_a_client_that_leaves_mid_stream_cancels_the_llm_call(served: dict[str, Any], fake_ollama: Any) -> None:
    fake_ollama.enqueue(
        Reply.tool_call("search_documents", {"query": "tides"}), Reply.text(" ".join(["slow"] * 300), token_delay=0.05)
    )
    headers = {"Authorization": f"Bearer {served['token']}"}
    body = {"model": "ragchat", "stream": True, "messages": [{"role": "user", "content": "tides?"}]}
    async with (
        httpx.AsyncClient(base_url=served["server"].url, timeout=30, headers=headers) as client,
        client.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")  # not the route's JSON type
        seen = 0
        async for line in response.aiter_lines():
            seen += "slow" in line
            if seen >= 3:
                break
    for _ in range(100):
        if fake_ollama.chat_requests[-1].disconnected:
            break
        await asyncio.sleep(0.05)
    assert fake_ollama.chat_requests[-1].disconnected


async def test_cli_rag_through_the_server_and_locally(
    served: dict[str, Any], fake_ollama: Any, db: str, tmp_path: Any
) -> None:
    import json
    import os

    from tests.integration.test_accounts import run_cli

    url, token = served["server"].url, served["token"]
    data_dir = tmp_path / "data"
    env = {
        "RAGCHAT_DATA_DIR": str(data_dir),
        "RAGCHAT_TOKEN": token,
        "DATABASE_URL": db,
        "OLLAMA_HOST": fake_ollama.url,
    }

    fake_ollama.enqueue(Reply.text("The moon pulls the oceans [1]."))
    out = await asyncio.to_thread(run_cli, "search", "what causes tides", "--rag", "--server", url, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("The moon pulls the oceans [1].") and "[1] tides.txt" in out.stdout
    assert f"using the server at {url}" in out.stderr

    fake_ollama.enqueue(Reply.text("Gravity [1]."))
    out = await asyncio.to_thread(run_cli, "search", "tides", "--rag", "--json", "--server", url, env=env)
    assert out.returncode == 0 and json.loads(out.stdout)["answer"] == "Gravity [1]."

    # a server announced for the same data directory is found (alive, answering, a token for it)
    data_dir.mkdir(parents=True)
    (data_dir / "server.json").write_text(json.dumps({"url": url, "pid": os.getpid(), "auth": "on"}))
    out = await asyncio.to_thread(run_cli, "search", "tides", env=env)
    assert out.returncode == 0 and f"using the server at {url}" in out.stderr and "tides.txt" in out.stdout

    # --local: the database directly (as the first admin), same answer path
    fake_ollama.enqueue(Reply.text("Locally: the moon [1]."))
    out = await asyncio.to_thread(run_cli, "search", "tides", "--rag", "--local", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Locally: the moon [1].") and "tides.txt" in out.stdout
    assert "using embedded Postgres" in out.stderr or "DATABASE_URL" in out.stderr
