"""Chunking in the model's own tokens: bounds, overlap, word boundaries, sections."""

from __future__ import annotations

import itertools
from typing import Any

from server.documents.chunking import chunk_sections, content_hash, embedding_text
from server.documents.parsers import Section

TEXT = " ".join(
    f"Sentence number {i} talks about retrieval augmented generation and vector indexes." for i in range(60)
)


def test_chunks_respect_token_budget_and_overlap(embedder: Any) -> None:
    chunks = chunk_sections([Section(TEXT)], embedder.count_tokens, max_tokens=64, overlap=16)
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.token_count <= 64
        assert embedder.count_tokens([chunk.content])[0] == chunk.token_count
    # consecutive chunks share their boundary sentence(s)
    for prev, nxt in itertools.pairwise(chunks):
        first_sentence = nxt.content.split(". ")[0]
        assert first_sentence in prev.content


def test_never_cuts_words_even_in_a_huge_sentence(embedder: Any) -> None:
    words = [f"word{i}" for i in range(2000)]
    chunks = chunk_sections([Section(" ".join(words))], embedder.count_tokens, max_tokens=100, overlap=0)
    rebuilt = " ".join(c.content for c in chunks).split()
    assert rebuilt == words
    assert all(c.token_count <= 100 for c in chunks)


def test_empty_and_whitespace_yield_nothing(embedder: Any) -> None:
    assert chunk_sections([Section(""), Section("  \n\n \t ")], embedder.count_tokens) == []


def test_sections_keep_page_and_heading(embedder: Any) -> None:
    sections = [Section("Page one text.", page=1), Section("Install steps here.", page=None, heading="Guide > Install")]
    chunks = chunk_sections(sections, embedder.count_tokens)
    assert [(c.page, c.section) for c in chunks] == [(1, None), (None, "Guide > Install")]


def test_paragraphs_are_kept_apart(embedder: Any) -> None:
    chunks = chunk_sections([Section("First para.\n\nSecond para.")], embedder.count_tokens)
    assert chunks[0].content == "First para.\n\nSecond para."


def test_embedding_text_and_hash() -> None:
    assert embedding_text("Title", "body") == "Title\nbody"
    assert embedding_text("", "body") == "body"
    assert content_hash("a") != content_hash("b")
