"""Drive the fake OpenAI-compatible server with the real `openai` client over HTTP."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import ollama
import openai
import pytest

from tests.fakes.ollama_server import FakeOllama
from tests.fakes.openai_server import NO_SCRIPT_ERROR, FakeOpenAI, decode_base64_embedding
from tests.fakes.script import Reply, fake_embedding, split_tokens

MODEL = "llama3.2"
MESSAGES: list[Any] = [{"role": "user", "content": "What does the handbook say about holidays?"}]
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "search_documents",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "k": {"type": "integer"}}},
        },
    }
]


@pytest.fixture
async def client(fake_openai: FakeOpenAI) -> AsyncIterator[openai.AsyncOpenAI]:
    """An official async client pointed at the fake, without retries."""
    async with openai.AsyncOpenAI(base_url=fake_openai.url, api_key="x", max_retries=0) as c:
        yield c


async def collect(client: openai.AsyncOpenAI, **kwargs: Any) -> list[Any]:
    """Stream one chat completion and return every chunk."""
    kwargs.setdefault("messages", MESSAGES)
    return [c async for c in await client.chat.completions.create(model=MODEL, stream=True, **kwargs)]


def accumulate(chunks: list[Any]) -> tuple[str, dict[int, dict[str, str]], str | None]:
    """Content, tool calls by index ({"id", "name", "arguments"}) and finish_reason, as a client must build them."""
    content, calls, finish = "", {}, None
    for chunk in chunks:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for part in choice.delta.tool_calls or []:
                slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] += part.id or ""
                if part.function is not None:
                    slot["name"] += part.function.name or ""
                    slot["arguments"] += part.function.arguments or ""
            finish = choice.finish_reason or finish
    return content, calls, finish


async def test_models_and_unknown_paths(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    page = await client.models.list()
    assert [(m.id, m.object, m.owned_by) for m in page.data] == [(MODEL, "model", "fake")]
    assert page.data[0].created > 0
    fake_openai.models.append("Qwen/Qwen2.5-7B-Instruct")
    assert (await client.models.retrieve("Qwen/Qwen2.5-7B-Instruct")).id == "Qwen/Qwen2.5-7B-Instruct"
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("gpt-4o")
    async with httpx.AsyncClient(base_url=fake_openai.root_url) as http:
        resp = await http.post("/v1/nope", json={})
        assert resp.status_code == 404 and resp.json()["error"]["message"] == "Invalid URL (POST /v1/nope)"
        assert (await http.get("/props")).status_code == 404  # not llama.cpp unless n_ctx is set
        fake_openai.n_ctx = 8192
        assert (await http.get("/props")).json()["default_generation_settings"]["n_ctx"] == 8192
    assert [r.path for r in fake_openai.requests][:2] == ["/v1/models", "/v1/models/Qwen/Qwen2.5-7B-Instruct"]


async def test_streamed_text(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    text = "Employees get 25 days of paid holiday per year."
    fake_openai.enqueue(Reply.text(text))
    chunks = await collect(client, temperature=0.2, max_tokens=300)
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[0].choices[0].delta.content == ""
    deltas = [c.choices[0].delta.content for c in chunks[1:-1]]
    assert deltas == split_tokens(text)
    assert all(c.object == "chat.completion.chunk" and c.model == MODEL and c.usage is None for c in chunks)
    assert len({c.id for c in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")
    last = chunks[-1].choices[0]
    assert last.finish_reason == "stop" and last.delta.content is None and last.delta.tool_calls is None
    (rec,) = fake_openai.chat_requests
    assert rec.body["stream"] is True and rec.messages == MESSAGES and rec.model == MODEL
    assert rec.body["temperature"] == 0.2 and rec.body["max_tokens"] == 300
    assert rec.tokens_sent == len(deltas) and rec.status == 200 and not rec.disconnected
    assert rec.headers["authorization"] == "Bearer x" and rec.method == "POST"


async def test_streamed_tool_call_deltas_and_usage(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake_openai.enqueue(
        Reply.tool_calls(
            [("search_documents", {"query": "holiday policy ünïcode", "k": 5}), ("get_time", None)],
            content_before="Let me look.",
        )
    )
    chunks = await collect(client, tools=TOOLS, tool_choice="auto", stream_options={"include_usage": True})
    content, calls, finish = accumulate(chunks)
    assert content == "Let me look." and finish == "tool_calls"
    assert [c["name"] for c in calls.values()] == ["search_documents", "get_time"]
    assert json.loads(calls[0]["arguments"]) == {"query": "holiday policy ünïcode", "k": 5}
    assert json.loads(calls[1]["arguments"]) == {}
    rec = fake_openai.chat_requests[0]
    assert [c["id"] for c in calls.values()] == rec.tool_call_ids and rec.tool_call_ids[0].startswith("call_")
    # the first delta of a call carries id, type, name and "" arguments; later ones only argument fragments
    parts = [p for c in chunks for ch in c.choices for p in ch.delta.tool_calls or [] if p.index == 0]
    assert parts[0].id and parts[0].type == "function" and parts[0].function.arguments == ""
    assert len(parts) > 3 and all(p.id is None and p.function.name is None for p in parts[1:])
    # usage: an extra last chunk without choices
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    usage = chunks[-1].usage
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens and usage.completion_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])
    assert rec.tool_names == ["search_documents"] and rec.body["tool_choice"] == "auto"


async def test_non_streamed_tool_calls_and_text(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake_openai.enqueue(
        Reply.tool_call("search_documents", {"query": "a"}),
        Reply.tokens(["Hel", "lo"], done_reason="length"),
        "plain string reply",
    )
    resp = await client.chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS)
    assert resp.object == "chat.completion" and resp.model == MODEL
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert choice.message.role == "assistant" and choice.message.tool_calls
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.id == fake_openai.chat_requests[0].tool_call_ids[0]
    assert call.function.name == "search_documents" and json.loads(call.function.arguments) == {"query": "a"}
    assert resp.usage and resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens
    resp = await client.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert resp.choices[0].message.content == "Hello" and resp.choices[0].finish_reason == "length"
    assert resp.choices[0].message.tool_calls is None
    resp = await client.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert resp.choices[0].message.content == "plain string reply" and fake_openai.pending_replies == 0


async def test_tool_call_without_tools_and_raw_arguments(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    """Like FakeOllama, a scripted tool call is sent even when the request offered no tools."""
    fake_openai.enqueue(Reply.tool_call("search_documents", {"query": "x"}), Reply.tool_call("broken", '{"query": '))
    _, calls, finish = accumulate(await collect(client))
    assert calls[0]["name"] == "search_documents" and finish == "tool_calls"
    assert fake_openai.chat_requests[0].tool_names == []
    _, calls, _ = accumulate(await collect(client))
    assert calls[0]["arguments"] == '{"query": '  # str arguments go out verbatim (malformed JSON)


async def test_response_format_recorded(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
    response_format: Any = {"type": "json_schema", "json_schema": {"name": "rerank", "schema": schema, "strict": True}}
    fake_openai.enqueue(Reply.json({"score": 7}), Reply.json("```json\n{}\n```"))
    resp = await client.chat.completions.create(
        model=MODEL, messages=MESSAGES, response_format=response_format, temperature=0
    )
    assert json.loads(resp.choices[0].message.content or "") == {"score": 7}
    content, _, _ = accumulate(await collect(client, response_format={"type": "json_object"}))
    assert content == "```json\n{}\n```"
    first, second = fake_openai.chat_requests
    assert first.body["response_format"] == response_format and first.body["temperature"] == 0
    assert second.body["response_format"] == {"type": "json_object"}


async def test_tool_results_are_inspectable_and_checked(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake_openai.enqueue(Reply.tool_call("search_documents", {"query": "holidays", "k": 3}), "25 days.")
    first = await client.chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS)
    call = (first.choices[0].message.tool_calls or [])[0]
    assistant: Any = {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]}
    tool: Any = {"role": "tool", "tool_call_id": call.id, "content": "[1] 25 days of holiday"}
    second = await client.chat.completions.create(model=MODEL, messages=[*MESSAGES, assistant, tool], tools=TOOLS)
    assert second.choices[0].message.content == "25 days."
    rec = fake_openai.chat_requests[1]
    assert rec.tool_messages == [tool]
    expected = {"id": call.id, "name": "search_documents", "arguments": {"query": "holidays", "k": 3}}
    assert rec.assistant_tool_calls == [expected]  # arguments parsed from the JSON string
    assert rec.tool_messages[0]["tool_call_id"] == fake_openai.chat_requests[0].tool_call_ids[0]

    # what OpenAI rejects (400) before any scripted reply is used
    dict_args: Any = {**assistant, "tool_calls": [{**call.model_dump(), "function": {"name": "s", "arguments": {}}}]}
    for messages, needle in [
        ([*MESSAGES, {"role": "tool", "tool_call_id": "call_nope", "content": "x"}], "must be a response"),
        ([*MESSAGES, assistant, {"role": "user", "content": "next"}], "did not have response messages"),
        ([*MESSAGES, assistant], "did not have response messages"),
        ([*MESSAGES, dict_args, tool], "expected a string"),
        ([], "non-empty"),
    ]:
        with pytest.raises(openai.BadRequestError) as err:
            await client.chat.completions.create(model=MODEL, messages=messages)
        assert needle in err.value.message
    fake_openai.strict_messages = False
    fake_openai.enqueue("lenient")
    resp = await client.chat.completions.create(model=MODEL, messages=[*MESSAGES, assistant])
    assert resp.choices[0].message.content == "lenient"


@pytest.mark.parametrize("dim", [384, 768])
async def test_embeddings(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI, dim: int) -> None:
    fake_openai.models.append("nomic-embed-text")
    fake_openai.embed_dim = dim
    default = await client.embeddings.create(model="nomic-embed-text", input=["alpha", "beta"])
    floats = await client.embeddings.create(model="nomic-embed-text", input="alpha", encoding_format="float")
    raw = await client.embeddings.create(model="nomic-embed-text", input=["beta"], encoding_format="base64")
    assert [d.index for d in default.data] == [0, 1] and len(default.data[0].embedding) == dim
    assert default.data[0].embedding == pytest.approx(fake_embedding("alpha", dim), abs=1e-6)  # float32 round trip
    assert floats.data[0].embedding == fake_embedding("alpha", dim)  # exact JSON floats
    assert isinstance(raw.data[0].embedding, str)
    assert decode_base64_embedding(raw.data[0].embedding) == pytest.approx(fake_embedding("beta", dim), abs=1e-6)
    assert default.model == "nomic-embed-text" and default.usage.prompt_tokens == default.usage.total_tokens == 2
    recs = fake_openai.embed_requests
    assert [r.inputs for r in recs] == [["alpha", "beta"], ["alpha"], ["beta"]]
    # this openai version asks for base64 unless told otherwise
    assert [r.body["encoding_format"] for r in recs] == ["base64", "float", "base64"]
    assert all(r.model == "nomic-embed-text" for r in recs) and fake_openai.chat_requests == []
    three = await client.embeddings.create(model="nomic-embed-text", input="x", dimensions=3, encoding_format="float")
    assert len(three.data[0].embedding) == 3


async def test_embedding_errors_and_reset(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as err:
        await client.embeddings.create(model="text-embedding-3-small", input="alpha")
    assert err.value.code == "model_not_found" and "`text-embedding-3-small` does not exist" in err.value.message
    fake_openai.enqueue_embed(Reply.error(500, "embedding runner crashed"), Reply.error(429, "slow down"))
    with pytest.raises(openai.InternalServerError, match="embedding runner crashed"):
        await client.embeddings.create(model=MODEL, input="alpha")
    with pytest.raises(openai.RateLimitError):
        await client.embeddings.create(model=MODEL, input="alpha")
    assert len((await client.embeddings.create(model=MODEL, input="alpha")).data) == 1
    with pytest.raises(openai.BadRequestError):
        await client.embeddings.create(model=MODEL, input=[])
    fake_openai.embed_dim = 8
    fake_openai.reset()
    assert fake_openai.embed_dim == 384 and fake_openai.embed_requests == [] and fake_openai.models == [MODEL]


async def test_api_key(fake_openai: FakeOpenAI) -> None:
    fake_openai.api_key = "sk-right"
    async with openai.AsyncOpenAI(base_url=fake_openai.url, api_key="sk-wrong", max_retries=0) as wrong:
        with pytest.raises(openai.AuthenticationError) as err:
            await wrong.models.list()
        assert err.value.code == "invalid_api_key" and err.value.message.startswith("Error code: 401")
        with pytest.raises(openai.AuthenticationError):
            await wrong.embeddings.create(model=MODEL, input="x")
    async with httpx.AsyncClient() as http:
        resp = await http.get(f"{fake_openai.url}/models")
        assert resp.status_code == 401 and resp.json()["error"]["message"] == "Incorrect API key provided"
    fake_openai.enqueue("welcome")
    async with openai.AsyncOpenAI(base_url=fake_openai.url, api_key="sk-right", max_retries=0) as right:
        assert (await right.models.list()).data
        assert (await right.chat.completions.create(model=MODEL, messages=MESSAGES)).choices[0].message.content
    fake_openai.reset()
    assert fake_openai.api_key is None


def test_api_key_from_constructor_survives_reset() -> None:
    with FakeOpenAI(api_key="sk-ctor") as own:
        assert own.url.endswith("/v1") and own.api_key == "sk-ctor"
        assert httpx.get(f"{own.url}/models").status_code == 401
        own.api_key = None
        assert httpx.get(f"{own.url}/models").status_code == 200
        own.reset()
        assert own.api_key == "sk-ctor"
        assert httpx.get(f"{own.url}/models", headers={"Authorization": "Bearer sk-ctor"}).status_code == 200
        url = own.url
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/models")


@pytest.mark.parametrize("stream", [True, False])
async def test_http_errors(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI, stream: bool) -> None:
    fake_openai.enqueue(
        Reply.error(429, "Rate limit reached"), Reply.error(500, "boom"), Reply.error(400, "bad"), Reply.no_tools()
    )

    async def call(model: str = MODEL) -> Any:
        if stream:
            return [c async for c in await client.chat.completions.create(model=model, messages=MESSAGES, stream=True)]
        return await client.chat.completions.create(model=model, messages=MESSAGES)

    with pytest.raises(openai.RateLimitError) as rate:
        await call()
    assert rate.value.response.headers["retry-after"] == "1" and rate.value.code == "rate_limit_exceeded"
    assert "Rate limit reached" in rate.value.message
    with pytest.raises(openai.InternalServerError) as err:
        await call()
    assert err.value.type == "server_error" and "boom" in err.value.message
    with pytest.raises(openai.BadRequestError, match="bad"):
        await call()
    with pytest.raises(openai.BadRequestError, match=r"library/llama3\.2:latest does not support tools"):
        await call()
    with pytest.raises(openai.NotFoundError) as missing:
        await call("gpt-4o")
    assert missing.value.code == "model_not_found" and "The model `gpt-4o` does not exist" in missing.value.message
    assert fake_openai.pending_replies == 0


async def test_no_script_is_a_500_that_is_not_retried(fake_openai: FakeOpenAI) -> None:
    async with openai.AsyncOpenAI(base_url=fake_openai.url, api_key="x") as retrying:  # default max_retries=2
        with pytest.raises(openai.InternalServerError) as err:
            await retrying.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert NO_SCRIPT_ERROR in err.value.message and len(fake_openai.chat_requests) == 1


async def test_responder(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake_openai.responder = lambda body: Reply.json({"n": len(body["messages"][-1]["content"])})
    fake_openai.enqueue("queued first")
    assert (await client.chat.completions.create(model=MODEL, messages=MESSAGES)).choices[0].message.content == (
        "queued first"
    )
    resp = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "abcd"}])
    assert json.loads(resp.choices[0].message.content or "") == {"n": 4}


async def test_error_and_garbage_mid_stream(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake_openai.enqueue(
        Reply.error_mid_stream(["Hel", "lo"], "failed to decode the batch"),
        Reply.garbage_mid_stream(["Hi"]),
        Reply.error_mid_stream(["x"], "runner died"),
    )
    seen: list[str] = []
    with pytest.raises(openai.APIError) as err:
        async for chunk in await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True):
            seen.extend(ch.delta.content or "" for ch in chunk.choices)
    assert "".join(seen) == "Hello" and err.value.message == "failed to decode the batch"
    assert err.value.body == {"message": "failed to decode the batch", "type": "server_error", "code": 500}
    with pytest.raises(json.JSONDecodeError):
        await collect(client)
    with pytest.raises(openai.InternalServerError, match="runner died"):  # not streamed: a plain 500
        await client.chat.completions.create(model=MODEL, messages=MESSAGES)


async def test_disconnect_stops_generation(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake_openai.enqueue(Reply.tokens([f"t{i} " for i in range(200)], token_delay=0.02))
    got: list[str] = []
    three = asyncio.Event()

    async def consume() -> None:
        async for chunk in await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True):
            got.append(chunk.choices[0].delta.content or "")
            if len(got) == 4:  # role chunk + 3 tokens
                three.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(three.wait(), 2)
    task.cancel()
    cancelled_at = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task
    rec = await fake_openai.await_disconnect(1.0)
    assert rec is not None and rec.disconnected and rec.finished_at is not None
    assert rec.finished_at - cancelled_at < 1.0
    sent = rec.tokens_sent
    await asyncio.sleep(0.1)
    assert rec.tokens_sent == sent < 20 and fake_openai.in_flight == 0


async def test_completed_stream_is_not_a_disconnect(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake_openai.enqueue(Reply.text("short answer"), Reply.error(404, "nope"))
    await collect(client, stream_options={"include_usage": True})
    with pytest.raises(openai.NotFoundError):
        await collect(client)
    await asyncio.sleep(0.05)
    assert fake_openai.wait_for_disconnect(0.05) is None


async def test_hang_times_out_and_is_abandoned(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply.hang(5, then=Reply.text("too late")))
    async with openai.AsyncOpenAI(base_url=fake_openai.url, api_key="x", max_retries=0, timeout=0.3) as c:
        start = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            await c.chat.completions.create(model=MODEL, messages=MESSAGES)
        assert 0.25 < time.monotonic() - start < 2
    rec = await fake_openai.await_disconnect(1.0)
    assert rec is not None and rec.first_byte_at is None and rec.tokens_sent == 0


async def test_latency_token_delay_and_concurrency(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake_openai.latency, fake_openai.token_delay = 0.1, 0.03
    fake_openai.enqueue(Reply.tokens(["a", "b", "c"]))
    start = time.monotonic()
    stamps = [time.monotonic() - start async for _ in await client.chat.completions.create(
        model=MODEL, messages=MESSAGES, stream=True
    )]  # fmt: skip
    # latency, then a delay before b, c, finish (no upper bound: a busy machine took 5.8 s to the first token),
    # counted from the request: a busy client may read the first chunk late (0.16 s) and see shorter gaps after
    assert stamps[0] >= 0.1 and stamps[-1] >= 0.1 + 3 * 0.03 - 0.01
    fake_openai.reset()
    fake_openai.responder = lambda body: Reply.tokens(["x"] * 4, token_delay=0.5)  # 2 s each: they overlap
    await asyncio.gather(*(collect(client) for _ in range(8)))
    # the server thread counts a stream out after its last byte, which the client may have read first
    assert await fake_openai.await_until(lambda: fake_openai.in_flight == 0)
    assert fake_openai.max_concurrent == 8 and len(fake_openai.chat_requests) == 8


async def test_available_toggle(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake_openai.available = False
    with pytest.raises(openai.APIConnectionError):
        await client.models.list()
    fake_openai.available = True
    assert (await client.models.list()).data


async def test_abort_in_flight_ends_a_hang(fake_openai: FakeOpenAI, client: openai.AsyncOpenAI) -> None:
    fake_openai.enqueue(Reply.hang(5))
    task = asyncio.create_task(client.chat.completions.create(model=MODEL, messages=MESSAGES))
    assert await fake_openai.await_until(lambda: fake_openai.in_flight == 1)
    fake_openai.abort_in_flight()
    with pytest.raises(openai.InternalServerError, match="aborted"):
        await asyncio.wait_for(task, 2)


async def test_same_reply_drives_both_fakes(fake_openai: FakeOpenAI, fake_ollama: FakeOllama) -> None:
    reply = Reply.tool_call("search_documents", {"query": "q"}, content_before="Looking.")
    fake_openai.enqueue(reply)
    fake_ollama.enqueue(reply)
    async with openai.AsyncOpenAI(base_url=fake_openai.url, api_key="x", max_retries=0) as oa:
        content, calls, _ = accumulate(await collect(oa))
    async with ollama.AsyncClient(host=fake_ollama.url) as ol:
        resp = await ol.chat(model=MODEL, messages=MESSAGES)
    assert content == resp.message.content == "Looking."
    assert resp.message.tool_calls and resp.message.tool_calls[0].function.name == calls[0]["name"]
    assert resp.message.tool_calls[0].function.arguments == json.loads(calls[0]["arguments"])


async def test_ollama_embed_records_models_and_errors(fake_ollama: FakeOllama) -> None:
    async with ollama.AsyncClient(host=fake_ollama.url) as c:
        fake_ollama.embed_dim = 768
        assert len((await c.embed(model="nomic-embed-text", input=["a", "b"])).embeddings[1]) == 768
        (rec,) = fake_ollama.embed_requests
        assert rec.inputs == ["a", "b"] and rec.model == "nomic-embed-text"
        fake_ollama.embed_models = ["nomic-embed-text"]
        assert (await c.embed(model="nomic-embed-text:latest", input="a")).embeddings
        with pytest.raises(ollama.ResponseError) as err:
            await c.embed(model="all-minilm", input="a")
        assert err.value.status_code == 404
        assert err.value.error == 'model "all-minilm" not found, try pulling it first'
        fake_ollama.enqueue_embed(Reply.error(500, "embed failed"))
        with pytest.raises(ollama.ResponseError, match="embed failed"):
            await c.embed(model="nomic-embed-text", input="a")
    fake_ollama.reset()
    assert fake_ollama.embed_dim == 384 and fake_ollama.embed_models is None and fake_ollama.embed_requests == []
