"""Drive the fake Ollama server with the real `ollama` client over HTTP."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import ollama
import pytest

from tests.fakes.ollama_server import (
    NO_SCRIPT_ERROR,
    FakeOllama,
    Reply,
    closed_port_url,
    fake_embedding,
    split_tokens,
)

MODEL = "llama3.2"
MESSAGES = [{"role": "user", "content": "What does the handbook say about holidays?"}]


@pytest.fixture
async def client(fake_ollama: FakeOllama) -> AsyncIterator[ollama.AsyncClient]:
    """An official async client pointed at the fake."""
    async with ollama.AsyncClient(host=fake_ollama.url) as c:
        yield c


async def collect(client: ollama.AsyncClient, **kwargs: Any) -> list[ollama.ChatResponse]:
    """Stream one chat and return every chunk."""
    kwargs.setdefault("messages", MESSAGES)
    return [part async for part in await client.chat(model=MODEL, stream=True, **kwargs)]


def test_split_tokens_round_trips() -> None:
    for text in ["Hello world", "  lead and trail  ", "a\n\nb", "", "one"]:
        assert "".join(split_tokens(text)) == text
    assert split_tokens("Hello big world") == ["Hello", " big", " world"]


async def test_root_version_tags_show(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    async with httpx.AsyncClient(base_url=fake_ollama.url) as http:
        assert (await http.get("/")).text == "Ollama is running"
        assert (await http.get("/api/version")).json()["version"]
        assert (await http.get("/api/nope")).status_code == 404
    assert [m.model for m in (await client.list()).models] == ["llama3.2:latest"]
    shown = await client.show(MODEL)
    assert shown.capabilities == ["completion", "tools"]
    assert shown.modelinfo and shown.modelinfo["llama.context_length"] == 131072
    fake_ollama.models.append("qwen2.5:7b")
    fake_ollama.capabilities["qwen2.5:7b"] = ["completion"]
    assert (await client.show("qwen2.5:7b")).capabilities == ["completion"]
    with pytest.raises(ollama.ResponseError) as err:
        await client.show("mistral")
    assert err.value.status_code == 404
    assert err.value.error == "model 'mistral' not found"


async def test_streamed_text_assembles(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    text = "Employees get 25 days of paid holiday per year."
    fake_ollama.enqueue(Reply.text(text))
    parts = await collect(client)
    assert "".join(p.message.content or "" for p in parts) == text
    assert len(parts) == len(split_tokens(text)) + 1
    assert all(p.done is False and p.model == MODEL and p.message.role == "assistant" for p in parts[:-1])
    last = parts[-1]
    assert last.done is True and last.done_reason == "stop" and last.message.content == ""
    assert last.eval_count and last.prompt_eval_count and last.total_duration and last.eval_duration
    (rec,) = fake_ollama.chat_requests
    assert rec.body["stream"] is True and rec.messages == MESSAGES and rec.model == MODEL
    assert rec.tokens_sent == len(parts) - 1 and not rec.disconnected and rec.status == 200


async def test_non_streamed_and_tokens(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    fake_ollama.enqueue(Reply.tokens(["Hel", "lo"], done_reason="length"), "plain string reply")
    resp = await client.chat(model=MODEL, messages=MESSAGES)
    assert resp.message.content == "Hello" and resp.done and resp.done_reason == "length"
    resp = await client.chat(model=MODEL, messages=MESSAGES)
    assert resp.message.content == "plain string reply"
    assert fake_ollama.pending_replies == 0


async def test_tool_calls(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    fake_ollama.enqueue(
        Reply.tool_call("search_documents", {"query": "holiday policy", "k": 5}),
        Reply.tool_calls([("search_documents", {"query": "a"}), ("get_time", None)], content_before="Let me look."),
    )
    tools = [{"type": "function", "function": {"name": "search_documents", "parameters": {"type": "object"}}}]
    parts = await collect(client, tools=tools)
    calls = [c for p in parts for c in (p.message.tool_calls or [])]
    assert len(calls) == 1
    assert calls[0].function.name == "search_documents"
    assert calls[0].function.arguments == {"query": "holiday policy", "k": 5}
    assert isinstance(calls[0].function.arguments, dict)
    assert parts[-1].done and parts[-1].done_reason == "stop"
    assert fake_ollama.chat_requests[0].body["tools"][0]["function"]["name"] == "search_documents"
    resp = await client.chat(model=MODEL, messages=MESSAGES, tools=tools)
    assert resp.message.content == "Let me look."
    assert [c.function.name for c in resp.message.tool_calls or []] == ["search_documents", "get_time"]
    assert resp.message.tool_calls and resp.message.tool_calls[1].function.arguments == {}


async def test_format_json_replies(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}}
    garbage = '<think>hmm</think>\n```json\n{"score": 11}\n```'
    fake_ollama.enqueue(Reply.json({"score": 7}), Reply.json(garbage))
    resp = await client.chat(model=MODEL, messages=MESSAGES, format=schema)
    assert json.loads(resp.message.content or "") == {"score": 7}
    parts = await collect(client, format="json")
    assert "".join(p.message.content or "" for p in parts) == garbage
    assert [r.body["format"] for r in fake_ollama.chat_requests] == [schema, "json"]


@pytest.mark.parametrize("stream", [True, False])
async def test_http_errors(fake_ollama: FakeOllama, client: ollama.AsyncClient, stream: bool) -> None:
    msg = "model 'llama3.2' not found, try pulling it first"
    fake_ollama.enqueue(Reply.error(404, msg), Reply.no_tools(), Reply.no_tools("qwen2:0.5b"))
    for status, text in [
        (404, msg),
        (400, "registry.ollama.ai/library/llama3.2:latest does not support tools"),
        (400, "registry.ollama.ai/library/qwen2:0.5b does not support tools"),
    ]:
        with pytest.raises(ollama.ResponseError) as err:
            if stream:
                await collect(client)
            else:
                await client.chat(model=MODEL, messages=MESSAGES)
        assert (err.value.status_code, err.value.error) == (status, text)


async def test_no_script_is_a_500(client: ollama.AsyncClient) -> None:
    with pytest.raises(ollama.ResponseError) as err:
        await client.chat(model=MODEL, messages=MESSAGES)
    assert err.value.status_code == 500 and err.value.error == NO_SCRIPT_ERROR


async def test_responder_sees_request_body(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    fake_ollama.responder = lambda body: Reply.json({"score": len(body["messages"][-1]["content"])})
    fake_ollama.enqueue("queued first")
    assert (await client.chat(model=MODEL, messages=MESSAGES)).message.content == "queued first"
    resp = await client.chat(model=MODEL, messages=[{"role": "user", "content": "abcd"}])
    assert json.loads(resp.message.content or "") == {"score": 4}


async def test_garbage_mid_stream(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    fake_ollama.enqueue(Reply.garbage_mid_stream(["Hel", "lo"]), Reply.error_mid_stream(["Hi"], "runner crashed"))
    seen: list[str] = []
    with pytest.raises(json.JSONDecodeError):
        async for part in await client.chat(model=MODEL, messages=MESSAGES, stream=True):
            seen.append(part.message.content or "")
    assert seen == ["Hel", "lo"]
    with pytest.raises(ollama.ResponseError) as err:
        await collect(client)
    assert err.value.error == "runner crashed"


async def test_hang_triggers_client_timeout(fake_ollama: FakeOllama) -> None:
    fake_ollama.enqueue(Reply.hang(5, then=Reply.text("too late")))
    async with ollama.AsyncClient(host=fake_ollama.url, timeout=0.3) as c:
        start = time.monotonic()
        with pytest.raises(httpx.TimeoutException):
            await c.chat(model=MODEL, messages=MESSAGES)
        assert 0.25 < time.monotonic() - start < 4  # the fake would hang 5 s
    rec = await fake_ollama.await_disconnect(5.0)  # the hang is abandoned, not served 5 s later
    assert rec is not None and rec.first_byte_at is None and rec.tokens_sent == 0


async def test_latency_and_token_delay(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    fake_ollama.latency, fake_ollama.token_delay = 0.2, 0.05
    fake_ollama.enqueue(Reply.tokens(["a", "b", "c"]))
    start = time.monotonic()
    stream = await client.chat(model=MODEL, messages=MESSAGES, stream=True)
    stamps = [time.monotonic() - start async for _ in stream]
    assert stamps[0] >= 0.2  # the latency (no upper bound: a busy machine can take seconds more)
    # then the token delays, counted from the request: a busy client may read the first chunk late, which
    # shortens the gaps it sees, never the total the server waited
    assert stamps[-1] >= 0.2 + 3 * 0.05 - 0.01


async def test_concurrency_recording(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    fake_ollama.responder = lambda body: Reply.tokens(["x"] * 4, token_delay=0.03)
    await asyncio.gather(*(collect(client) for _ in range(8)))
    # the server thread counts a stream out after its last byte, which the client may have read first
    assert await fake_ollama.await_until(lambda: fake_ollama.in_flight == 0)
    assert fake_ollama.max_concurrent == 8
    fake_ollama.reset()
    fake_ollama.responder = lambda body: Reply.tokens(["x"] * 4, token_delay=0.03)
    bound = asyncio.Semaphore(3)

    async def bounded() -> None:
        async with bound:
            await client.chat(model=MODEL, messages=MESSAGES)

    await asyncio.gather(*(bounded() for _ in range(10)))
    assert fake_ollama.max_concurrent == 3 and len(fake_ollama.chat_requests) == 10


async def test_two_hundred_concurrent_streams(fake_ollama: FakeOllama) -> None:
    # each stream lasts 2.5 s: one after another they would take 500 s, side by side a few seconds (more on a
    # busy machine, which only makes them overlap more)
    fake_ollama.responder = lambda body: Reply.text("one two three four five", token_delay=0.5)
    async with ollama.AsyncClient(host=fake_ollama.url, limits=httpx.Limits(max_connections=250)) as c:
        start = time.monotonic()
        results = await asyncio.gather(*(collect(c) for _ in range(200)))
        took = time.monotonic() - start
        print(f"200 streams of 2.5 s: {took:.1f} s")
        assert took < 100
    assert all("".join(p.message.content or "" for p in r) == "one two three four five" for r in results)
    assert await fake_ollama.await_until(lambda: fake_ollama.in_flight == 0)
    assert fake_ollama.max_concurrent > 50


async def test_disconnect_stops_generation(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    fake_ollama.enqueue(Reply.tokens([f"t{i} " for i in range(200)], token_delay=0.05))  # 10 s if not stopped
    got: list[str] = []
    three = asyncio.Event()

    async def consume() -> None:
        async for part in await client.chat(model=MODEL, messages=MESSAGES, stream=True):
            got.append(part.message.content or "")
            if len(got) == 3:
                three.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(three.wait(), 8)
    task.cancel()
    cancelled_at = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task
    rec = await fake_ollama.await_disconnect(5.0)
    assert rec is not None and rec.disconnected and rec.finished_at is not None
    assert rec.finished_at - cancelled_at < 5.0  # the rest of the stream would take seconds more
    sent = rec.tokens_sent
    await asyncio.sleep(0.2)
    assert rec.tokens_sent == sent < 100 and fake_ollama.in_flight == 0
    assert not any(r.disconnected for r in fake_ollama.requests if r is not rec)


async def test_completed_stream_is_not_a_disconnect(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    fake_ollama.enqueue(Reply.text("short answer"), Reply.error(404, "nope"))
    await collect(client)
    with pytest.raises(ollama.ResponseError):
        await collect(client)
    await asyncio.sleep(0.05)
    assert fake_ollama.wait_for_disconnect(0.05) is None


async def test_connection_refused() -> None:
    url = closed_port_url()
    async with ollama.AsyncClient(host=url) as c:
        with pytest.raises(ConnectionError):  # non-streaming: the client maps httpx.ConnectError
            await c.chat(model=MODEL, messages=MESSAGES)
        with pytest.raises(httpx.ConnectError):  # streaming: raw httpx.ConnectError escapes
            await collect(c)


async def test_available_toggle(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    fake_ollama.available = False
    with pytest.raises(ConnectionError):
        await client.list()
    fake_ollama.available = True
    assert (await client.list()).models


async def test_embed_is_deterministic(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    resp = await client.embed(model="all-minilm", input=["alpha", "beta"])
    assert len(resp.embeddings) == 2 and len(resp.embeddings[0]) == 384
    assert list(resp.embeddings[0]) == fake_embedding("alpha")
    assert sum(x * x for x in resp.embeddings[1]) == pytest.approx(1.0)
    fake_ollama.embed_dim = 8
    assert len((await client.embed(model="all-minilm", input="alpha")).embeddings[0]) == 8


async def test_generate(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    fake_ollama.enqueue(Reply.text("Paris is the capital."), "Yes.")
    parts = [p async for p in await client.generate(model=MODEL, prompt="Capital?", stream=True)]
    assert "".join(p.response or "" for p in parts) == "Paris is the capital."
    assert parts[-1].done and parts[-1].done_reason == "stop"
    assert (await client.generate(model=MODEL, prompt="Sure?")).response == "Yes."
    assert [r.path for r in fake_ollama.requests] == ["/api/generate"] * 2


def test_sync_client_and_reset(fake_ollama: FakeOllama) -> None:
    fake_ollama.enqueue(Reply.text("sync works"), "left over")
    fake_ollama.latency = 0.01
    with ollama.Client(host=fake_ollama.url) as c:
        parts = list(c.chat(model=MODEL, messages=MESSAGES, stream=True))
    assert "".join(p.message.content or "" for p in parts) == "sync works"
    fake_ollama.reset()
    assert fake_ollama.pending_replies == 0 and fake_ollama.requests == [] and fake_ollama.latency == 0
    assert fake_ollama.models == ["llama3.2:latest"] and fake_ollama.responder is None


def test_context_manager_fresh_server() -> None:
    start = time.monotonic()
    with FakeOllama() as fake:
        assert time.monotonic() - start < 1
        assert httpx.get(fake.url).text == "Ollama is running"
        url = fake.url
    with pytest.raises(httpx.ConnectError):
        httpx.get(url)
