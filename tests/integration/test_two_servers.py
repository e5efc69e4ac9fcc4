"""Two server processes over one database (issue 30): an answer streams from the process that generates it;
the other one refuses to attach to it (409: route /stream by thread) but can stop it, and the stop reaches the
generating process at its next heartbeat. Each server is the real app with its own runtime (its own pool and
run registry, as a separate process has), over real HTTP, with the fake Ollama pacing tokens."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from tests.fakes.ollama_server import FakeOllama
from tests.fakes.script import Reply
from tests.support.chat import get_thread

ANSWER = " ".join(f"word{i}" for i in range(40)) + "."


async def test_the_other_server_refuses_to_attach_but_stops_the_answer(
    live_app: Callable[..., Any], fake_ollama: FakeOllama
) -> None:
    owner = live_app(ollama_host=fake_ollama.url)
    other = live_app(ollama_host=fake_ollama.url)
    fake_ollama.enqueue(Reply.text(ANSWER, token_delay=0.25))  # ~10 s of answer
    events: list[tuple[str, dict[str, Any]]] = []
    async with (
        httpx.AsyncClient(base_url=owner.url, timeout=20) as client,
        httpx.AsyncClient(base_url=other.url, timeout=20) as elsewhere,
        aconnect_sse(client, "POST", "/api/chat", json={"message": "hi"}) as source,
    ):
        stream = source.aiter_sse()
        async for sse in stream:
            if sse.data:
                events.append((sse.event, json.loads(sse.data)))
            if len(events) >= 2:
                break
        thread_id = next(data for name, data in events if name == "thread")["thread_id"]

        attach = await elsewhere.get(f"/api/threads/{thread_id}/stream")
        assert attach.status_code == 409, attach.text
        assert attach.json()["code"] == "conflict"
        assert "another server process" in attach.json()["detail"]

        stopped = await elsewhere.post(f"/api/threads/{thread_id}/stop")
        assert stopped.status_code == 200 and stopped.json() == {"stopped": True}
        asked = time.monotonic()
        async for sse in stream:
            if sse.data:
                events.append((sse.event, json.loads(sse.data)))
    assert events[-1][0] == "error" and events[-1][1]["code"] == "stopped"
    assert time.monotonic() - asked < 7  # the owner's heartbeat runs every 5 s
    answer = (await get_thread(other.url, thread_id))["messages"][1]
    assert answer["status"] == "incomplete" and answer["error"]["code"] == "stopped" and answer["content"] != ANSWER
    async with httpx.AsyncClient(base_url=other.url, timeout=10) as elsewhere:
        assert (await elsewhere.post(f"/api/threads/{thread_id}/stop")).json() == {"stopped": False}
        assert (await elsewhere.get(f"/api/threads/{thread_id}/stream")).status_code == 204


async def test_a_server_gone_mid_answer_leaves_it_stoppable_and_saved_elsewhere(
    live_app: Callable[..., Any], fake_ollama: FakeOllama
) -> None:
    """The owning server shuts down while it streams: the answer is saved incomplete; the other server then has
    nothing to attach to or stop (204, stopped false), and the thread takes a new question there."""
    owner = live_app(ollama_host=fake_ollama.url)
    other = live_app(ollama_host=fake_ollama.url)
    fake_ollama.enqueue(Reply.text(ANSWER, token_delay=0.25))
    thread_id = ""
    async with (
        httpx.AsyncClient(base_url=owner.url, timeout=20) as client,
        aconnect_sse(client, "POST", "/api/chat", json={"message": "hi"}) as source,
    ):
        async for sse in source.aiter_sse():
            if sse.event == "thread":
                thread_id = json.loads(sse.data)["thread_id"]
                break
    owner.__exit__()
    async with httpx.AsyncClient(base_url=other.url, timeout=10) as elsewhere:
        assert (await elsewhere.post(f"/api/threads/{thread_id}/stop")).json() == {"stopped": False}
        assert (await elsewhere.get(f"/api/threads/{thread_id}/stream")).status_code == 204
    saved = await get_thread(other.url, thread_id)
    assert saved["running_message_id"] is None
    assert saved["messages"][1]["status"] == "incomplete"
