"""A request sent on a kept-alive connection that the model server closed at that moment (its idle timeout) is
sent once more on a new connection, before any answer came; the page saw this as "Ollama's answer broke off"
on a busy machine (issue 45). A server that drops every request is still an error, said once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from ragchat.providers.llm.base import LLMBadResponse
from ragchat.providers.llm.ollama import OllamaProvider
from tests.fakes.ollama_server import FakeOllama, Reply


@asynccontextmanager
async def dropping_proxy(target_port: int, drop: int) -> AsyncIterator[dict[str, Any]]:
    """A TCP proxy to the fake: the first `drop` connections are closed once a request arrived, unanswered."""
    seen = {"connections": 0, "dropped": 0}

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen["connections"] += 1
        if seen["dropped"] < drop:
            await reader.read(65536)  # the request came in: hang up without a byte of answer
            seen["dropped"] += 1
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target_port)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    seen["url"] = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    async with server:
        yield seen


async def answer(provider: OllamaProvider) -> str:
    parts = [c.content async for c in provider.stream_chat(model="m", messages=[{"role": "user", "content": "hi"}])]
    return "".join(parts)


async def test_a_dropped_connection_is_redialled_once(fake_ollama: FakeOllama) -> None:
    fake_ollama.enqueue(Reply.text("twenty-five days"))
    port = int(fake_ollama.url.rsplit(":", 1)[1])
    async with dropping_proxy(port, drop=1) as proxy:
        provider = OllamaProvider(proxy["url"])
        assert await answer(provider) == "twenty-five days"
    assert (proxy["connections"], proxy["dropped"]) == (2, 1) and len(fake_ollama.chat_requests) == 1


async def test_a_server_that_always_drops_is_an_error(fake_ollama: FakeOllama) -> None:
    port = int(fake_ollama.url.rsplit(":", 1)[1])
    async with dropping_proxy(port, drop=10) as proxy:
        with pytest.raises(LLMBadResponse, match="broke off"):
            await answer(OllamaProvider(proxy["url"]))
    assert proxy["dropped"] == 2  # the request and its one repeat, no more
