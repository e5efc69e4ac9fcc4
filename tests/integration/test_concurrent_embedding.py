"""Chunking (token counting) and encoding at the same time from several threads, on the real MiniLM.

A Hugging Face fast tokenizer shared by chunking and `encode` failed 107 of 3,633 NFCorpus documents with
"expected sequence of length 220 at dim 1 (got 226)": counting turns the tokenizer's padding off while an
encode batch is being padded. Token counting now has its own tokenizer per thread and the model's tokenizer
is only entered under a lock; here the two run together and every result must match a sequential run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragchat.documents.chunking.sentences import chunk_sections
from ragchat.documents.parsing.parsers import Section

ROOT = Path(__file__).resolve().parents[2]
Count = Callable[[Sequence[str]], list[int]]
Embed = Callable[[Sequence[str]], np.ndarray]


def repository_prose() -> list[Section]:
    """The repository's own prose, one section per paragraph group: real text of many lengths."""
    text = "\n\n".join(
        p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    )
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    return [Section("\n\n".join(paragraphs[i : i + 3])) for i in range(0, len(paragraphs), 3)]


def run_concurrently(
    count: Count,
    embed: Embed,
    sections: list[Section],
    *,
    rounds: int = 2,
    counters: int = 3,
    encoders: int = 2,
    batch_count: int = 16,
) -> tuple[list[BaseException], list[str]]:
    """`counters` threads chunk `sections` `rounds` times while `encoders` threads embed the chunks in small
    batches of mixed lengths. Returns the exceptions raised and the mismatches against a sequential run."""
    expected_chunks = chunk_sections(sections, count, max_tokens=64, overlap=16)
    texts = [c.content for c in expected_chunks]
    batches = [texts[i : i + 8] for i in range(0, len(texts), 8)]
    expected_vectors = [embed(b) for b in batches[:batch_count]]
    errors: list[BaseException] = []
    mismatches: list[str] = []
    start = threading.Barrier(counters + encoders)

    def chunker() -> None:
        start.wait()
        for _ in range(rounds):
            got = chunk_sections(sections, count, max_tokens=64, overlap=16)
            if got != expected_chunks:
                mismatches.append("chunks differ from the sequential run")

    def encoder(offset: int) -> None:
        start.wait()
        for _ in range(rounds):
            for i in range(offset, len(expected_vectors), encoders):
                got = embed(batches[i])
                if not np.allclose(got, expected_vectors[i], atol=1e-4):
                    mismatches.append(f"batch {i}: vectors differ from the sequential run")

    def guarded(target: Callable[..., None], *args: Any) -> Callable[[], None]:
        def run() -> None:
            try:
                target(*args)
            except BaseException as exc:  # collected, asserted on by the caller
                errors.append(exc)

        return run

    threads = [threading.Thread(target=guarded(chunker)) for _ in range(counters)]
    threads += [threading.Thread(target=guarded(encoder, k)) for k in range(encoders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors, mismatches


@pytest.mark.slow
def test_chunking_and_encoding_share_no_tokenizer_across_threads(embedder: Any) -> None:
    """Three chunking threads, two document-batch threads and the query thread (its own model copy in bf16
    mode, the same tokenizer lock): no error, and every result as in a sequential run."""
    sections = repository_prose()
    assert sum(len(s.text) for s in sections) > 50_000
    queries = [s.text[:200] for s in sections[:16]]
    expected = embedder.embed_queries_sync(queries)
    errors: list[BaseException] = []
    done = threading.Event()

    def query_loop() -> None:
        try:
            while not done.is_set():
                got = embedder.embed_queries_sync(queries)
                assert np.allclose(got, expected, atol=1e-4)
        except BaseException as exc:  # asserted on below
            errors.append(exc)

    thread = threading.Thread(target=query_loop)
    thread.start()
    try:
        more_errors, mismatches = run_concurrently(embedder.count_tokens, embedder.embed_sync, sections)
    finally:
        done.set()
        thread.join()
    assert errors == [] and more_errors == [] and mismatches == []
