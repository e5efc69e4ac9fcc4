"""Switching embedding models without downtime: MiniLM (384) → a 768-dimension Ollama model (the fake).

Searches answer throughout the build and after the switch; a `kill -9` of `ragchat reembed` mid-build loses
nothing, search keeps answering from the old vectors, and running it again resumes (only the missing chunks
are embedded).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ragchat.core.options import options_of
from ragchat.runtime import Overrides, open_runtime
from ragchat.settings import Settings
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.support.services import LOCAL

ROOT = Path(__file__).resolve().parents[2]
TOPICS = [
    "Volcanic eruptions eject magma, ash and gases from the crater.",
    "Sourdough bread rises because wild yeast ferments the flour.",
    "Ocean tides follow the gravitational pull of the moon.",
    "Python lists are mutable sequences; tuples are immutable.",
    "The Danube flows through ten countries to the Black Sea.",
    "Espresso is brewed by forcing hot water through ground coffee.",
]


def space_rows(db: str) -> list[dict[str, Any]]:
    with psycopg.connect(db, row_factory=psycopg.rows.dict_row) as conn:
        return conn.execute(
            """SELECT s.id, s.provider, s.model, s.dim, s.state, count(e.chunk_id) AS vectors
               FROM embedding_spaces s LEFT JOIN chunk_embeddings e ON e.space_id = s.id
               GROUP BY s.id ORDER BY s.id"""
        ).fetchall()


async def ingest_topics(rt: Any, copies: int = 1) -> int:
    """Documents with one chunk each (several copies of each topic, numbered); returns the chunk count."""
    for i in range(copies):
        for j, text in enumerate(TOPICS):
            await rt.documents.ingestion.register_upload(LOCAL, f"doc-{i}-{j}.txt", f"{text} (note {i})".encode())
    await rt.documents.ingestion.ingest()
    async with rt.pool.connection() as conn:
        row = await (await conn.execute("SELECT count(*) AS n FROM document_chunks")).fetchone()
    return int(row["n"])


def start_then_kill(env: dict[str, str], db: str, chunks: int) -> None:
    """Run `ragchat reembed` and `kill -9` it once some, not all, of the new vectors are stored."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragchat.cli", "reembed", "--quiet"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            building = [r for r in space_rows(db) if r["state"] == "building"]
            if building and 0 < building[0]["vectors"] < chunks:
                return
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, space_rows(db)
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture
def ollama_embeds(fake_ollama: FakeOllama) -> FakeOllama:
    fake_ollama.embed_dim = 768
    fake_ollama.embed_models = ["nomic-embed-text", "llama3.2"]
    return fake_ollama


async def test_searches_answer_throughout_the_switch(
    settings: Settings, pool: Any, embedder: Any, ollama_embeds: FakeOllama, db: str
) -> None:
    tuned = settings.model_copy(update={"ollama_host": ollama_embeds.url, "embed_batch_size": 1})
    async with open_runtime(tuned, Overrides(pool=pool, embedder=embedder)) as rt:
        chunks = await ingest_topics(rt, copies=2)
        ollama_embeds.enqueue_embed(*[Reply.hang(0.15)] * 100)  # each batch of 4 chunks takes a while

        await rt.reembedder.start("ollama", "nomic-embed-text")
        build = asyncio.create_task(rt.reembedder.run())
        answered = 0
        seen_building = False
        while not build.done():
            old_space = (await rt.spaces.active_space(fresh=True)).model == "all-MiniLM-L6-v2"  # type: ignore[union-attr]
            result = await rt.searcher.search(
                "what makes bread rise?",
                principal=LOCAL,
                options=options_of(rt.searcher.settings, limit=3, mode="vector"),
            )
            assert len(result.chunks) == 3
            # the switch may land during the search: judge the ranking only if the old space held throughout
            old_space = old_space and (await rt.spaces.active_space(fresh=True)).model == "all-MiniLM-L6-v2"  # type: ignore[union-attr]
            if old_space:  # the fake's vectors are not semantic: only MiniLM must rank the bread chunk first
                assert "Sourdough" in result.chunks[0].content, result.chunks
            answered += 1
            progress = await rt.reembedder.progress()
            seen_building = seen_building or (progress.state == "building" and 0 < progress.done < progress.total)
            await asyncio.sleep(0.05)
        space = await build
        assert space is not None and space.dim == 768
        assert answered >= 5 and seen_building

        # after the switch: the new space answers (the query is embedded by the new model), the old one is gone
        before = len(ollama_embeds.embed_requests)
        result = await rt.searcher.search(
            "what causes the tides?", principal=LOCAL, options=options_of(rt.searcher.settings, limit=3, mode="hybrid")
        )
        assert result.chunks and len(ollama_embeds.embed_requests) == before + 1
    rows = space_rows(db)
    assert [(r["model"], r["dim"], r["state"], r["vectors"]) for r in rows] == [
        ("nomic-embed-text", 768, "active", chunks)
    ]


async def test_new_documents_during_a_build_get_both_models(
    settings: Settings, pool: Any, embedder: Any, ollama_embeds: FakeOllama, db: str
) -> None:
    tuned = settings.model_copy(update={"ollama_host": ollama_embeds.url, "embed_batch_size": 1})
    async with open_runtime(tuned, Overrides(pool=pool, embedder=embedder)) as rt:
        await ingest_topics(rt)
        ollama_embeds.enqueue_embed(*[Reply.hang(0.2)] * 3)
        await rt.reembedder.start("ollama", "nomic-embed-text")
        build = asyncio.create_task(rt.reembedder.run())
        await asyncio.sleep(0.1)
        await rt.documents.ingestion.register_upload(
            LOCAL, "late.txt", b"Glaciers carve U-shaped valleys as they move."
        )
        await rt.documents.ingestion.ingest()  # into the active (MiniLM) space; the build picks it up before switching
        await build
        result = await rt.searcher.search(
            "Glaciers carve U-shaped valleys as they move.",
            principal=LOCAL,
            options=options_of(rt.searcher.settings, limit=1, mode="keyword"),
        )
        assert result.chunks[0].filename == "late.txt"
    rows = space_rows(db)
    assert [(r["model"], r["state"], r["vectors"]) for r in rows] == [("nomic-embed-text", "active", len(TOPICS) + 1)]


async def test_reembed_survives_kill_and_resumes(
    settings: Settings, pool: Any, embedder: Any, ollama_embeds: FakeOllama, db: str, tmp_path: Path
) -> None:
    tuned = settings.model_copy(update={"ollama_host": ollama_embeds.url, "embed_batch_size": 1})
    async with open_runtime(tuned, Overrides(pool=pool, embedder=embedder)) as rt:
        chunks = await ingest_topics(rt, copies=3)  # 18 chunks, 5 batches of 4
    ollama_embeds.enqueue_embed(*[Reply.hang(0.4)] * 100)
    env = {
        **os.environ,
        "DATABASE_URL": db,
        "RAGCHAT_DATA_DIR": str(tmp_path / "data"),
        "OLLAMA_HOST": ollama_embeds.url,
        "EMBED_PROVIDER": "ollama",
        "EMBED_MODEL": "nomic-embed-text",
        "EMBED_BATCH_SIZE": "1",
        "HF_HUB_OFFLINE": "1",
    }
    await asyncio.to_thread(start_then_kill, env, db, chunks)
    done_before = next(r["vectors"] for r in space_rows(db) if r["state"] == "building")
    requests_before = len(ollama_embeds.embed_requests)

    ollama_embeds.reset()
    ollama_embeds.embed_dim = 768
    async with open_runtime(tuned, Overrides(pool=pool, embedder=embedder)) as rt:
        # killed mid-build: search still answers from the MiniLM vectors, nothing mixed
        result = await rt.searcher.search(
            "what makes bread rise?", principal=LOCAL, options=options_of(rt.searcher.settings, limit=3, mode="vector")
        )
        assert "Sourdough" in result.chunks[0].content
        assert (await rt.spaces.active_space(fresh=True)).model == "all-MiniLM-L6-v2"  # type: ignore[union-attr]
        # run it again: it resumes (the killed process's lock died with it) and embeds only what is missing
        space = await rt.reembedder.run()
        assert space is not None and space.model == "nomic-embed-text"
    resumed = [text for r in ollama_embeds.embed_requests for text in r.inputs if text != "dimension probe"]
    assert len(resumed) == chunks - done_before, (requests_before, done_before)
    assert [(r["model"], r["state"], r["vectors"]) for r in space_rows(db)] == [("nomic-embed-text", "active", chunks)]


async def test_reembed_refuses_a_second_target_and_can_be_cancelled(
    settings: Settings, pool: Any, embedder: Any, ollama_embeds: FakeOllama, db: str
) -> None:
    from ragchat.core.errors import BadRequest

    tuned = settings.model_copy(update={"ollama_host": ollama_embeds.url})
    async with open_runtime(tuned, Overrides(pool=pool, embedder=embedder)) as rt:
        await ingest_topics(rt)
        with pytest.raises(BadRequest, match="already use"):
            await rt.reembedder.start("sentence-transformers", "all-MiniLM-L6-v2")
        await rt.reembedder.start("ollama", "nomic-embed-text")
        with pytest.raises(BadRequest, match="under way"):
            await rt.reembedder.start("ollama", "mxbai-embed-large")
        assert await rt.reembedder.cancel()
    assert [(r["model"], r["state"]) for r in space_rows(db)] == [("all-MiniLM-L6-v2", "active")]


async def test_admin_api_switches_the_model(live_app: Any, ollama_embeds: FakeOllama, runtime: Any, db: str) -> None:
    import httpx

    await ingest_topics(runtime)
    server = live_app(ollama_host=ollama_embeds.url)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        started = await client.post("/api/admin/reembed", json={"provider": "ollama", "model": "nomic-embed-text"})
        assert started.status_code == 202, started.text
        deadline = time.monotonic() + 30
        while (progress := (await client.get("/api/admin/reembed")).json())["state"] != "idle":
            assert time.monotonic() < deadline, progress
            await asyncio.sleep(0.1)
        health = (await client.get("/api/health")).json()
    assert health["embeddings"]["stored"] == {"provider": "ollama", "model": "nomic-embed-text", "dim": 768}
    # the configured model (MiniLM) now differs from the stored one: health says so
    assert health["embeddings"]["status"] == "mismatch"
