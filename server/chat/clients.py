"""Ollama clients: the chat client, and a sharded one for the reranker's burst of parallel calls.

httpx's connection pool (httpcore 1.0) scans every pooled connection, with a `poll()` per idle one, for
every queued request, each time a request starts or ends: O(connections × requests) per event
(encode/httpcore#1035). Thirty parallel rerank calls through one pool spend about a millisecond of CPU
each there, so the last call leaves ~30 ms after the first. `OllamaShards` spreads the calls over a few
small pools (least busy first): measured on 30 parallel calls of 200 ms, 240 ms with one pool, 215 ms with 8.
"""

from __future__ import annotations

from typing import Any

import httpx
import ollama

from server.settings import Settings

# httpx allows 100 connections by default: more open chats than that would queue inside the client.
CHAT_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)


def ollama_timeout(settings: Settings) -> httpx.Timeout:
    return httpx.Timeout(settings.ollama_timeout_s, connect=settings.ollama_connect_timeout_s)


def chat_client(settings: Settings) -> ollama.AsyncClient:
    return ollama.AsyncClient(host=settings.ollama_host, timeout=ollama_timeout(settings), limits=CHAT_LIMITS)


class OllamaShards:
    """`chat()` like `ollama.AsyncClient`, sent through the least busy of `shards` clients to one host."""

    def __init__(self, clients: list[Any]) -> None:
        if not clients:
            raise ValueError("OllamaShards needs at least one client")
        self.clients = clients
        self.in_flight = [0] * len(clients)
        self.calls = [0] * len(clients)  # calls sent through each shard (for tests and benches)

    @classmethod
    def for_host(cls, host: str, shards: int, timeout: httpx.Timeout | float | None = None) -> OllamaShards:
        return cls([ollama.AsyncClient(host=host, timeout=timeout) for _ in range(max(1, shards))])

    async def chat(self, **kwargs: Any) -> Any:
        i = min(range(len(self.clients)), key=self.in_flight.__getitem__)
        self.in_flight[i] += 1
        self.calls[i] += 1
        try:
            return await self.clients[i].chat(**kwargs)
        finally:
            self.in_flight[i] -= 1

    async def close(self) -> None:
        for client in self.clients:
            await client.close()


def rerank_client(settings: Settings) -> OllamaShards:
    return OllamaShards.for_host(settings.ollama_host, settings.rerank_client_shards, ollama_timeout(settings))
