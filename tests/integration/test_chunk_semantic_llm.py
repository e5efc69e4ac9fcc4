"""CHUNK_SEMANTIC_LLM: the semantic chunker asks the (fake) chat model to choose among its best cuts over real
HTTP; a valid reply is obeyed, garbage, an out-of-range number and a timeout keep the embeddings' choice."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from ragchat.documents.chunking.llm import llm_chooser
from ragchat.documents.chunking.semantic import semantic_chunks
from ragchat.documents.chunking.strategy import blocking_embed
from ragchat.documents.parsing.parsers import Section
from ragchat.providers.llm import build_llm
from ragchat.settings import Settings
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.unit.test_chunk_strategies import contract_markdown


async def chunks_with(llm: Any, embedder: Any, settings: Settings, timeout_s: float = 2.0) -> list[str]:
    flat = [Section(contract_markdown(3).decode())]
    choose = llm_chooser(llm, settings.llm.chat_model, asyncio.get_running_loop(), timeout_s)
    embed = blocking_embed(embedder, None)
    assert embed is not None
    return await _run(flat, embedder, _memo(embed), choose)


_VECTORS: dict[str, Any] = {}


def _memo(embed: Any) -> Any:
    """The same sentences are embedded once for the whole test (the choice, not the model, varies)."""

    def run(texts: list[str]) -> Any:
        import numpy as np

        todo = [t for t in texts if t not in _VECTORS]
        if todo:
            _VECTORS.update(zip(todo, embed(todo), strict=True))
        return np.vstack([_VECTORS[t] for t in texts])

    return run


async def _run(flat: list[Section], embedder: Any, embed: Any, choose: Any) -> list[str]:
    found = await asyncio.to_thread(semantic_chunks, flat, embedder.count_tokens, embed, max_tokens=200, choose=choose)
    return [c.content for c in found]


async def test_the_model_chooses_the_cut_and_failures_fall_back(
    fake_ollama: FakeOllama, embedder: Any, settings: Settings
) -> None:
    settings = settings.model_copy(update={"ollama_host": fake_ollama.url, "llm_provider": "ollama"})
    llm = build_llm(settings.llm)
    try:
        fake_ollama.responder = lambda body: Reply.json("<think>no idea</think>not json at all")
        plain = await chunks_with(llm, embedder, settings)
        asked = len(fake_ollama.chat_requests)
        assert asked >= 2  # the chunker asked at every chunk with 2+ candidates, and ignored the garbage
        prompt = fake_ollama.chat_requests[-1]
        assert "||" in str(prompt.body) and '"cut"' in str(prompt.body)

        fake_ollama.responder = lambda body: Reply.json({"cut": 99})  # not one of the candidates
        assert await chunks_with(llm, embedder, settings) == plain

        fake_ollama.responder = lambda body: Reply.json('```json\n{"cut": 2}\n```')
        chosen = await chunks_with(llm, embedder, settings)
        assert chosen != plain
        assert "".join("".join(c.split()) for c in chosen) == "".join("".join(c.split()) for c in plain)

        fake_ollama.responder = lambda body: dataclasses.replace(Reply.json({"cut": 2}), delay=3.0)
        started = asyncio.get_running_loop().time()
        assert await chunks_with(llm, embedder, settings, timeout_s=0.3) == plain
        assert asyncio.get_running_loop().time() - started < 0.3 * asked + 20
    finally:
        await llm.close()
