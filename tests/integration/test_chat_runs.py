"""Answers that survive navigation (issue 21): runs outlive their request, streams resume with Last-Event-ID,
threads refuse a parallel question, Stop stops, and regenerate / continue / edit branch the thread. Real HTTP
and SSE over a socket, the fake Ollama with a slow token pace, the real database."""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse

from tests.fakes.ollama_server import FakeOllama
from tests.fakes.script import Reply, split_tokens
from tests.support.accounts import add_user, setup_admin, signed_in
from tests.support.chat import chat, check_event, first, get_thread, text_of

ANSWER = " ".join(f"word{i}" for i in range(40)) + "."
Events = list[tuple[str, dict[str, Any], str]]  # name, data, id


@pytest.fixture
def server(live_app: Callable[..., Any], fake_ollama: FakeOllama) -> Any:
    # answers scripted without a search: with CHAT_SEARCH_FIRST on, one that states facts would be searched for and
    # asked again (chat/engine/pipeline.py); these tests are about runs, not grounding
    return live_app(ollama_host=fake_ollama.url, chat_search_first=False)


async def read(source: Any, until: Callable[[Events], bool] | None = None) -> Events:
    """SSE events (pings skipped) until `until(events)` says stop, or the stream ends."""
    events: Events = []
    if not hasattr(source, "iterator"):  # one iterator per stream: reading goes on where it stopped
        source.iterator = source.aiter_sse()
    async for sse in source.iterator:
        if not sse.data:
            continue
        data = json.loads(sse.data)
        check_event(sse.event, data)
        events.append((sse.event, data, sse.id))
        if until is not None and until(events):
            break
    return events


def tokens_in(events: Events) -> str:
    return "".join(data["delta"] for name, data, _ in events if name == "token")


def named(events: Events, name: str) -> dict[str, Any]:
    return next(data for n, data, _ in events if n == name)


async def wait_saved(url: str, thread_id: str, timeout: float = 10) -> dict[str, Any]:  # noqa: ASYNC109
    """The thread once no answer runs in it."""
    deadline = time.monotonic() + timeout
    while True:
        thread = await get_thread(url, thread_id)
        if thread["running_message_id"] is None or time.monotonic() > deadline:
            return thread
        await asyncio.sleep(0.05)


async def test_a_client_that_leaves_does_not_stop_the_answer(server: Any, fake_ollama: FakeOllama) -> None:
    fake_ollama.enqueue(Reply.text(ANSWER, token_delay=0.03))
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=10) as client,
        aconnect_sse(client, "POST", "/api/chat", json={"message": "hi"}) as source,
    ):
        events = await read(source, lambda ev: len(ev) >= 4)
    thread = named(events, "thread")
    assert set(thread) == {"thread_id", "question_id", "message_id"}
    assert [e[2] for e in events][:2] == [f"{thread['message_id']}:1", f"{thread['message_id']}:2"]
    running = await get_thread(server.url, thread["thread_id"])  # the rows exist while it streams
    assert running["running_message_id"] == thread["message_id"]
    assert [m["status"] for m in running["messages"]] == ["complete", "streaming"]
    assert running["messages"][0]["id"] == thread["question_id"]

    saved = await wait_saved(server.url, thread["thread_id"])
    question, answer = saved["messages"]
    assert answer["status"] == "complete" and answer["content"] == ANSWER and answer["error"] is None
    assert answer["id"] == thread["message_id"] and answer["parent_id"] == question["id"]
    assert answer["model"] == "llama3.2" and answer["siblings"] == [answer["id"]]
    assert not fake_ollama.chat_requests[0].disconnected  # the model was never cancelled
    async with httpx.AsyncClient(base_url=server.url) as client:  # done and forgotten: nothing to attach to
        assert (await client.get(f"/api/threads/{thread['thread_id']}/stream")).status_code == 204


async def test_resuming_with_last_event_id_has_no_gap_and_no_duplicate(server: Any, fake_ollama: FakeOllama) -> None:
    fake_ollama.enqueue(Reply.text(ANSWER, token_delay=0.03))
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=10) as client,
        aconnect_sse(client, "POST", "/api/chat", json={"message": "hi"}) as source,
    ):
        before = await read(source, lambda ev: len(ev) >= 6)
    thread_id = named(before, "thread")["thread_id"]
    last_id = before[-1][2]
    await asyncio.sleep(0.2)  # more tokens arrive while nobody listens
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=10) as client,
        aconnect_sse(client, "GET", f"/api/threads/{thread_id}/stream", headers={"Last-Event-ID": last_id}) as source,
    ):
        assert source.response.status_code == 200
        after = await read(source)
    assert after[-1][0] == "done" and all(n != "thread" for n, _, _ in after)
    seqs = [int(e[2].split(":")[1]) for e in before + after]
    assert seqs == sorted(set(seqs)), seqs  # ids only grow: nothing twice
    saved = await wait_saved(server.url, thread_id)
    assert tokens_in(before) + tokens_in(after) == saved["messages"][1]["content"] == ANSWER

    # a replay from the first event (?after=) is the whole answer again, tokens merged
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=10) as client,
        aconnect_sse(client, "GET", f"/api/threads/{thread_id}/stream", params={"after": before[0][2]}) as source,
    ):
        replay = await read(source)
    # (an uncited answer that states something gets its check: `citations` with a no_source verdict)
    assert tokens_in(replay) == ANSWER and [n for n, _, _ in replay] == ["token", "citations", "done"]
    async with httpx.AsyncClient(base_url=server.url) as client:
        bad = await client.get(f"/api/threads/{thread_id}/stream", params={"after": "nonsense"})
        assert bad.status_code == 400


async def test_two_subscribers_see_the_same_answer_and_a_second_question_is_refused(
    server: Any, fake_ollama: FakeOllama
) -> None:
    fake_ollama.enqueue(Reply.text(ANSWER, token_delay=0.03))
    started = asyncio.Event()
    box: dict[str, Any] = {}

    async def ask() -> Events:
        async with (
            httpx.AsyncClient(base_url=server.url, timeout=10) as client,
            aconnect_sse(client, "POST", "/api/chat", json={"message": "hi"}) as source,
        ):
            events: Events = []
            async for sse in source.aiter_sse():
                if sse.data:
                    events.append((sse.event, json.loads(sse.data), sse.id))
                    if sse.event == "thread":
                        box["thread"] = json.loads(sse.data)
                        started.set()
            return events

    task = asyncio.create_task(ask())
    await asyncio.wait_for(started.wait(), 10)
    thread_id = box["thread"]["thread_id"]
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        busy = await client.post("/api/chat", json={"message": "again", "thread_id": thread_id})
        assert busy.status_code == 409 and busy.json()["code"] == "conflict"
        branch = await client.post(
            f"/api/threads/{thread_id}/branch", json={"message_id": box["thread"]["question_id"]}
        )
        assert branch.status_code == 409
        async with aconnect_sse(client, "GET", f"/api/threads/{thread_id}/stream") as source:
            second = await read(source)
    first_tab = await task
    assert named(second, "thread") == box["thread"]  # attached from the start
    assert tokens_in(first_tab) == tokens_in(second) == ANSWER
    assert first_tab[-1][0] == second[-1][0] == "done"
    assert len(fake_ollama.chat_requests) == 1


async def test_stop_saves_the_answer_incomplete(server: Any, fake_ollama: FakeOllama) -> None:
    fake_ollama.enqueue(Reply.text(ANSWER, token_delay=0.05))
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=10) as client,
        aconnect_sse(client, "POST", "/api/chat", json={"message": "hi"}) as source,
    ):
        events = await read(source, lambda ev: len(ev) >= 4)
        thread_id = named(events, "thread")["thread_id"]
        stopped = await client.post(f"/api/threads/{thread_id}/stop")
        assert stopped.status_code == 200 and stopped.json() == {"stopped": True}
        events += await read(source)
    assert events[-1][0] == "error" and events[-1][1]["code"] == "stopped"
    saved = await get_thread(server.url, thread_id)
    answer = saved["messages"][1]
    assert answer["status"] == "incomplete" and answer["error"]["code"] == "stopped"
    assert answer["content"] and ANSWER.startswith(answer["content"]) and answer["content"] != ANSWER
    assert answer["content"].startswith(tokens_in(events))
    assert saved["running_message_id"] is None
    async with httpx.AsyncClient(base_url=server.url) as client:
        assert (await client.post(f"/api/threads/{thread_id}/stop")).json() == {"stopped": False}
        assert (await client.post(f"/api/threads/{uuid.uuid4()}/stop")).status_code == 404


async def test_a_stop_from_another_server_process_is_seen_at_the_next_heartbeat(
    server: Any, fake_ollama: FakeOllama, pool: Any
) -> None:
    from ragchat.chat.store import repository

    fake_ollama.enqueue(Reply.text(ANSWER, token_delay=0.25))  # ~10 s of answer
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=20) as client,
        aconnect_sse(client, "POST", "/api/chat", json={"message": "hi"}) as source,
    ):
        events = await read(source, lambda ev: len(ev) >= 2)
        thread_id = named(events, "thread")["thread_id"]
        async with pool.connection() as conn:  # what POST .../stop does in a process that does not run it
            assert await repository.request_stop(conn, uuid.UUID(thread_id))
        asked = time.monotonic()
        events += await read(source)
    assert events[-1][1]["code"] == "stopped" and time.monotonic() - asked < 7  # heartbeat every 5 s
    answer = (await get_thread(server.url, thread_id))["messages"][1]
    assert answer["status"] == "incomplete" and answer["error"]["code"] == "stopped" and answer["content"] != ANSWER


async def test_regenerate_makes_a_sibling_and_the_branch_switch_works(server: Any, fake_ollama: FakeOllama) -> None:
    fake_ollama.enqueue("First answer.", "Second answer.", "Next answer.")
    events = await chat(server.url, {"message": "Question one"})
    thread_id, first_id = first(events, "thread")["thread_id"], first(events, "done")["message_id"]
    events = await chat(server.url, {"thread_id": thread_id, "regenerate_id": first_id, "model": "other:7b"})
    thread = first(events, "thread")
    second_id = thread["message_id"]
    assert text_of(events) == "Second answer." and second_id != first_id
    request = fake_ollama.chat_requests[-1]
    assert request.model == "other:7b"
    assert [m["content"] for m in request.messages if m["role"] != "system"] == ["Question one"]

    saved = await get_thread(server.url, thread_id)
    question, answer = saved["messages"]
    assert question["id"] == thread["question_id"] and len(saved["messages"]) == 2
    assert answer["id"] == second_id and answer["siblings"] == [first_id, second_id]
    assert answer["model"] == "other:7b" and answer["content"] == "Second answer."

    async with httpx.AsyncClient(base_url=server.url) as client:
        switched = await client.post(f"/api/threads/{thread_id}/branch", json={"message_id": first_id})
        assert switched.status_code == 200, switched.text
        assert [m["content"] for m in switched.json()["messages"]] == ["Question one", "First answer."]
        missing = await client.post(f"/api/threads/{thread_id}/branch", json={"message_id": str(uuid.uuid4())})
        assert missing.status_code == 404
    await chat(server.url, {"thread_id": thread_id, "message": "Question two"})  # follows the chosen branch
    sent = [m["content"] for m in fake_ollama.chat_requests[-1].messages if m["role"] != "system"]
    assert sent == ["Question one", "First answer.", "Question two"]
    saved = await get_thread(server.url, thread_id)
    assert [m["content"] for m in saved["messages"]] == [
        "Question one",
        "First answer.",
        "Question two",
        "Next answer.",
    ]


async def test_continue_appends_to_a_stopped_answer(server: Any, fake_ollama: FakeOllama) -> None:
    fake_ollama.enqueue(Reply.text(ANSWER, token_delay=0.05))
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=10) as client,
        aconnect_sse(client, "POST", "/api/chat", json={"message": "hi"}) as source,
    ):
        events = await read(source, lambda ev: len(ev) >= 4)
        thread = named(events, "thread")
        await client.post(f"/api/threads/{thread['thread_id']}/stop")
    partial = (await get_thread(server.url, thread["thread_id"]))["messages"][1]["content"]
    fake_ollama.enqueue(Reply.tokens([" and", " the", " rest."], token_delay=0.2))
    body = {"thread_id": thread["thread_id"], "continue_id": thread["message_id"]}
    asking = asyncio.create_task(chat(server.url, body))
    await fake_ollama.await_until(lambda: len(fake_ollama.chat_requests) == 2, timeout=5)
    async with (  # another tab attaching from the start gets the whole text, the earlier part included
        httpx.AsyncClient(base_url=server.url, timeout=10) as client,
        aconnect_sse(client, "GET", f"/api/threads/{thread['thread_id']}/stream") as source,
    ):
        attached = await read(source)
    assert tokens_in(attached) == partial + " and the rest." and attached[0][0] == "thread"
    events = await asking
    assert first(events, "thread")["message_id"] == thread["message_id"]
    assert text_of(events) == " and the rest." and first(events, "done")["message_id"] == thread["message_id"]
    request = fake_ollama.chat_requests[-1]
    assert request.messages[-2] == {"role": "assistant", "content": partial} and not request.tool_names
    assert "Continue it exactly where it stopped" in request.messages[-1]["content"]
    saved = await get_thread(server.url, thread["thread_id"])
    assert len(saved["messages"]) == 2
    answer = saved["messages"][1]
    assert answer["content"] == partial + " and the rest." and answer["status"] == "complete"
    async with httpx.AsyncClient(base_url=server.url) as client:  # only a cut-off answer can be continued
        again = await client.post("/api/chat", json={"thread_id": thread["thread_id"], "continue_id": answer["id"]})
        assert again.status_code == 400


async def test_edit_branches_from_the_question(server: Any, fake_ollama: FakeOllama) -> None:
    fake_ollama.enqueue("A1.", "A2.", "A2 edited.")
    thread_id = first(await chat(server.url, {"message": "Q1"}), "thread")["thread_id"]
    q2 = first(await chat(server.url, {"message": "Q2", "thread_id": thread_id}), "thread")["question_id"]
    events = await chat(server.url, {"message": "Q2 edited", "thread_id": thread_id, "edit_id": q2})
    sent = [m["content"] for m in fake_ollama.chat_requests[-1].messages if m["role"] != "system"]
    assert sent == ["Q1", "A1.", "Q2 edited"]
    saved = await get_thread(server.url, thread_id)
    assert [m["content"] for m in saved["messages"]] == ["Q1", "A1.", "Q2 edited", "A2 edited."]
    edited = saved["messages"][2]
    assert edited["id"] == first(events, "thread")["question_id"] and edited["siblings"] == [q2, edited["id"]]
    async with httpx.AsyncClient(base_url=server.url) as client:
        back = (await client.post(f"/api/threads/{thread_id}/branch", json={"message_id": q2})).json()
    assert [m["content"] for m in back["messages"]] == ["Q1", "A1.", "Q2", "A2."]


async def test_wrong_ids_and_combinations(live_app: Callable[..., Any], fake_ollama: FakeOllama) -> None:
    server = live_app(auth="on", ollama_host=fake_ollama.url)
    admin = await setup_admin(server.url)
    await add_user(admin, "bob")
    bob = await signed_in(server.url, "bob")
    fake_ollama.enqueue("A.", "B.")
    try:
        events = await read_chat(admin, {"message": "Q"})
        thread_id, question_id = named(events, "thread")["thread_id"], named(events, "thread")["question_id"]
        answer_id = named(events, "thread")["message_id"]
        other = named(await read_chat(admin, {"message": "other"}), "thread")["thread_id"]
        cases = [
            ({"regenerate_id": question_id}, 400),  # a question is not an answer
            ({"edit_id": answer_id, "message": "x"}, 400),
            ({"edit_id": question_id}, 400),  # the edited question is empty
            ({"regenerate_id": answer_id, "continue_id": answer_id}, 400),
            ({"regenerate_id": str(uuid.uuid4())}, 404),
        ]
        for body, status in cases:
            response = await admin.post("/api/chat", json={"thread_id": thread_id, **body})
            assert response.status_code == status, (body, response.text)
        response = await admin.post("/api/chat", json={"thread_id": other, "regenerate_id": answer_id})
        assert response.status_code == 404  # another thread's message
        assert (await admin.post("/api/chat", json={"regenerate_id": answer_id})).status_code == 400
        for body in ({"thread_id": thread_id, "regenerate_id": answer_id}, {"thread_id": thread_id, "message": "x"}):
            assert (await bob.post("/api/chat", json=body)).status_code == 404
        for path in ("stream", "stop"):
            method = bob.get if path == "stream" else bob.post
            assert (await method(f"/api/threads/{thread_id}/{path}")).status_code == 404
        branch = await bob.post(f"/api/threads/{thread_id}/branch", json={"message_id": answer_id})
        assert branch.status_code == 404
    finally:
        await admin.aclose()
        await bob.aclose()


async def read_chat(client: httpx.AsyncClient, body: dict[str, Any]) -> Events:
    async with aconnect_sse(client, "POST", "/api/chat", json=body) as source:
        assert source.response.status_code == 200
        return await read(source)


async def test_every_saved_question_has_an_answer_when_clients_abort(
    server: Any, fake_ollama: FakeOllama, pool: Any
) -> None:
    """Tried 100 times: a client aborting at any moment of its request (0 to twice the time a whole answer takes
    on this machine, measured first: on an idle one about 60 ms) never leaves a question without an answer."""
    fake_ollama.responder = lambda body: Reply.tokens(split_tokens("Twenty five days."), token_delay=0.01)
    rng = random.Random(21)
    window = 0.06

    async def ask(client: httpx.AsyncClient) -> None:
        request = client.post("/api/chat", json={"message": "How many holidays?"})
        try:
            await asyncio.wait_for(request, rng.uniform(0, window))
        except (TimeoutError, httpx.HTTPError):
            pass

    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        began = time.monotonic()
        await client.post("/api/chat", json={"message": "How many holidays?"})
        window = max(window, 2 * (time.monotonic() - began))
        for _ in range(10):
            await asyncio.gather(*(ask(client) for _ in range(10)))
    # the answers still running finish one after another: wait while they do (a busy machine is slow), and
    # stop once none has finished for 20 s (one stuck for good stays "streaming" and fails below)
    deadline, unfinished = time.monotonic() + 20, -1
    while True:
        async with pool.connection() as conn:
            rows = await (
                await conn.execute(
                    """SELECT q.id, a.status FROM messages q
                       LEFT JOIN messages a ON a.parent_id = q.id AND a.role = 'assistant'
                       WHERE q.role = 'user'"""
                )
            ).fetchall()
        left = sum(r["status"] in (None, "streaming") for r in rows)
        if left == 0 or time.monotonic() > deadline:
            break
        if left != unfinished:
            deadline, unfinished = time.monotonic() + 20, left
        await asyncio.sleep(0.1)
    statuses = [r["status"] for r in rows]
    assert None not in statuses, f"{statuses.count(None)} of {len(rows)} questions have no answer row"
    assert set(statuses) <= {"complete", "incomplete", "error"}, statuses
    assert len(rows) > 0


async def test_stale_answers_become_interrupted(server: Any, fake_ollama: FakeOllama, pool: Any) -> None:
    fake_ollama.enqueue("A.", "B.")
    events = await chat(server.url, {"message": "Q"})
    thread_id, answer_id = first(events, "thread")["thread_id"], first(events, "done")["message_id"]
    async with pool.connection() as conn:  # as a process that died mid-answer leaves it
        await conn.execute(
            "UPDATE messages SET status = 'streaming', heartbeat_at = now() - interval '31 seconds' WHERE id = %s",
            (answer_id,),
        )
    saved = await get_thread(server.url, thread_id)
    assert saved["running_message_id"] is None
    assert saved["messages"][1]["status"] == "incomplete" and saved["messages"][1]["error"]["code"] == "interrupted"
    assert text_of(await chat(server.url, {"message": "Q2", "thread_id": thread_id})) == "B."


async def test_shutdown_saves_running_answers_incomplete(
    live_app: Callable[..., Any], fake_ollama: FakeOllama, pool: Any
) -> None:
    server = live_app(ollama_host=fake_ollama.url)
    fake_ollama.enqueue(Reply.text(ANSWER, token_delay=0.05))
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=10) as client,
        aconnect_sse(client, "POST", "/api/chat", json={"message": "hi"}) as source,
    ):
        events = await read(source, lambda ev: len(ev) >= 3)
    await asyncio.to_thread(server.__exit__)
    async with pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT status, error, content FROM messages WHERE id = %s", (named(events, "thread")["message_id"],)
            )
        ).fetchone()
    assert row is not None and row["status"] == "incomplete" and row["error"]["code"] == "interrupted"
    assert row["content"] and ANSWER.startswith(row["content"])
