"""One ingestion run through the composition root, timed: the part of `bench/ingest.py` that
`bench/ingest_backends.py` reuses (its own module, so that neither of those two imports the other)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import psutil

from bench.common import Stopwatch
from ragchat.core.principal import LOCAL_OWNER_ID, Principal
from ragchat.documents.catalog import chunk_store
from ragchat.documents.ingest import queue
from ragchat.documents.ingest.pipeline import IngestionPipeline, Progress
from ragchat.runtime import Overrides, Runtime, open_runtime
from ragchat.vectors import store

PRINCIPAL = Principal(LOCAL_OWNER_ID)


class TimedEmbedder:
    """Wraps the real embedding provider: records model busy time (the pipeline calls `embed_documents`, which
    runs `embed_sync` in a thread). Same provider and model name, so it owns the same embedding space."""

    def __init__(self, inner: Any, watch: Stopwatch) -> None:
        self.inner = inner
        self.watch = watch
        self.provider = inner.provider
        self.model_name = inner.model_name
        self.max_tokens = inner.max_tokens
        self.texts: list[str] = []

    async def dimension(self) -> int:
        return await self.inner.dimension()

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        out = self.inner.embed_sync(texts)
        self.watch.add("embed (model)", time.perf_counter() - start)
        self.texts.extend(texts)
        return out

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_sync, texts)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.inner.embed_queries(texts)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    async def close(self) -> None:
        pass  # the real provider is closed by whoever built it


class ReplayEmbedder(TimedEmbedder):
    """Returns vectors recorded in run A (keyed by text): the pipeline without the model's cost."""

    def __init__(self, inner: Any, watch: Stopwatch, vectors: dict[str, np.ndarray]) -> None:
        super().__init__(inner, watch)
        self.vectors = vectors

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        out = np.stack([self.vectors[t] for t in texts])
        self.watch.add("embed (model)", time.perf_counter() - start)
        return out


def instrument(watch: Stopwatch) -> list[tuple[Any, str, Any]]:
    """Time the DB calls the pipeline makes (repository and vector-store functions, looked up through their
    modules at call time) and its parse+chunk and per-document store steps; `restore` undoes it."""
    saved: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, name: str, label: str, *, sync: bool = False) -> None:
        original = getattr(owner, name)
        if sync:

            def timed_sync(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    watch.add(label, time.perf_counter() - start)

            replacement: Any = timed_sync
        else:

            async def timed(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return await original(*args, **kwargs)
                finally:
                    watch.add(label, time.perf_counter() - start)

            replacement = timed
        saved.append((owner, name, original))
        setattr(owner, name, replacement)

    wrap(queue, "claim", "claim (SQL)")
    wrap(store, "cached_vectors", "embedding-cache lookup (SQL)")
    wrap(chunk_store, "store_chunks", "store (SQL, in txn)")
    wrap(queue, "set_progress", "set_progress (SQL)")
    wrap(IngestionPipeline, "_prepare_rows", "parse+chunk (thread)", sync=True)
    wrap(IngestionPipeline, "_store", "store (total per doc)")
    return saved


def restore(saved: list[tuple[Any, str, Any]]) -> None:
    for owner, name, original in reversed(saved):
        setattr(owner, name, original)


def postgres_cpu(pid: int | None) -> float:
    """CPU seconds (user+sys) used so far by the postmaster and all its children (backends, workers)."""
    if not pid:
        return 0.0
    total = 0.0
    try:
        root = psutil.Process(pid)
        for p in [root, *root.children(recursive=True)]:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                continue
    except psutil.Error:
        return 0.0
    return total


def self_cpu() -> float:
    t = psutil.Process().cpu_times()
    return t.user + t.system


async def reset_tables(rt: Runtime) -> None:
    """Empty the documents and their chunks and vectors; the embedding space (and its index) stays."""
    async with rt.pool.connection() as conn:
        await conn.execute(
            "TRUNCATE document_chunks, chunk_embeddings, document_blobs, documents, "
            "bm25_groups, bm25_document_groups, bm25_group_terms, "
            "bm25_group_stats RESTART IDENTITY CASCADE"
        )


async def one_run(
    label: str,
    rt: Runtime,
    embedder: TimedEmbedder,
    data: bytes,
    pg_pid: int | None,
    watch: Stopwatch,
    *,
    quiet: bool,
) -> dict[str, Any]:
    """Register and ingest `data` through the document service of a runtime over `rt`'s pool whose embedding
    provider is `embedder`."""
    async with open_runtime(rt.settings, Overrides(pool=rt.pool, embedder=embedder, llm=rt.llm)) as run_rt:
        t0 = time.perf_counter()
        registered = await run_rt.documents.ingestion.register_bulk(PRINCIPAL, "corpus.jsonl", data)
        register_s = time.perf_counter() - t0
        ids = [r.document_id for r in registered if r.status == "queued" and r.document_id]
        last = [0.0]

        def report(p: Progress) -> None:
            now = time.perf_counter()
            if not quiet and now - last[0] > 15:
                last[0] = now
                el = now - started
                print(
                    f"  [{label}] {p.documents_done}/{len(ids)} docs, {p.chunks_done} chunks, "
                    f"{p.chunks_done / el:.1f} chunks/s",
                    file=sys.stderr,
                    flush=True,
                )

        saved = instrument(watch)
        pg0, me0 = postgres_cpu(pg_pid), self_cpu()
        started = time.perf_counter()
        try:
            progress = await run_rt.documents.ingestion.ingest(ids, on_progress=report)
        finally:
            restore(saved)
        wall = time.perf_counter() - started
    pg_cpu, my_cpu = postgres_cpu(pg_pid) - pg0, self_cpu() - me0
    if progress.documents_failed:
        print(f"  [{label}] {progress.documents_failed} documents failed: {progress.failures[:3]}", file=sys.stderr)
    return {
        "documents": progress.documents_done,
        "documents_failed": progress.documents_failed,
        "chunks": progress.chunks_done,
        "chunks_embedded": progress.chunks_embedded,
        "chunks_reused": progress.chunks_reused,
        "register_s": round(register_s, 2),
        "pipeline_wall_s": round(wall, 2),
        "documents_per_s": round(progress.documents_done / wall, 2),
        "chunks_per_s": round(progress.chunks_done / wall, 2),
        "busy_s": {k: round(v, 2) for k, v in watch.seconds.items()},
        "calls": dict(watch.calls),
        "cpu_s": {"postgres": round(pg_cpu, 1), "bench_process": round(my_cpu, 1)},
    }
