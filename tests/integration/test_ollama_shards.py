"""OllamaShards: the reranker's parallel calls spread over several small connection pools."""

from __future__ import annotations

import pytest
from ollama import ResponseError

from ragchat.providers.llm import build_llm
from ragchat.providers.llm.ollama import OllamaProvider, OllamaShards
from ragchat.retrieval.rerank import LLMReranker
from ragchat.settings import Settings
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.unit.test_rerank import hits


def by_number(body: dict) -> Reply:
    number = int(body["messages"][-1]["content"].split("passage ")[1].split()[0])
    return Reply.json({"score": number / 100})


@pytest.mark.parametrize(("concurrency", "shards"), [(30, 8), (4, 8), (30, 1)])
async def test_parallel_rerank_is_spread_over_the_shards(
    fake_ollama: FakeOllama, concurrency: int, shards: int
) -> None:
    fake_ollama.responder, fake_ollama.latency = by_number, 0.05
    # the scorer's order alone (RERANK_RETRIEVAL_WEIGHT=0): scores 0.01 apart, the blend would keep the search's
    settings = Settings(_env_file=None, ollama_host=fake_ollama.url, rerank_concurrency=concurrency,  # type: ignore[call-arg]
                        rerank_client_shards=shards, rerank_retrieval_weight=0.0)  # fmt: skip
    provider = build_llm(settings.llm, json_shards=settings.retrieval.rerank_client_shards)
    assert isinstance(provider, OllamaProvider)
    client = provider.json_client
    try:
        out = await LLMReranker(provider, settings.retrieval, settings.llm.effective_rerank_model).rerank(
            "q", hits(*(f"passage {i}" for i in range(1, 31))), 30
        )
    finally:
        await provider.close()
    assert [h.id for h in out] == list(range(30, 0, -1))  # ordered by the fake's scores
    assert len(fake_ollama.chat_requests) == 30
    assert fake_ollama.max_concurrent <= concurrency
    assert len(client.clients) == shards and sum(client.calls) == 30
    if concurrency >= shards:  # least busy first: every shard takes its share
        assert max(client.calls) - min(client.calls) <= 30 // shards
    assert client.in_flight == [0] * shards


async def test_errors_pass_through_and_release_the_shard(fake_ollama: FakeOllama) -> None:
    fake_ollama.enqueue(Reply.error(500, "boom"))
    client = OllamaShards.for_host(fake_ollama.url, 3, timeout=5)
    try:
        with pytest.raises(ResponseError, match="boom"):
            await client.chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}])
        assert client.in_flight == [0, 0, 0]
        fake_ollama.enqueue(Reply.text("fine"))
        reply = await client.chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}])
        assert reply.message.content == "fine"
    finally:
        await client.close()
    with pytest.raises(ValueError):
        OllamaShards([])
