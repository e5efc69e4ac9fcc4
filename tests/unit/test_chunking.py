"""Chunking in the model's own tokens: bounds, overlap, word boundaries, sections, caps, large inputs."""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import string
import subprocess
import sys
from typing import Any

import pytest

from ragchat.documents.chunking.sentences import chunk_sections, content_hash, embedding_text, iter_chunks
from ragchat.documents.parsing.parsers import Section

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


# --- caps: no chunk over the token limit or the character cap, and nothing dropped (issue 17) ---


def _rand_run(rnd: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(rnd.choices(alphabet, k=n))


def _hostile_text() -> str:
    rnd = random.Random(17)
    return "\n\n".join(
        [
            "A normal sentence comes first. Then another one follows it.",
            _rand_run(rnd, 30_000),  # a no-space run: one [UNK] token per 100+ characters
            "Prefix words " + _rand_run(rnd, 9_000, string.ascii_letters + "+/=") + " suffix words.",  # base64-ish
            "https://example.org/" + "/".join(_rand_run(rnd, 30) for _ in range(300)),  # a long URL
            "".join(chr(rnd.randrange(0x4E00, 0x9FA5)) for _ in range(5_000)),  # CJK: no spaces, a token each
            "".join(rnd.choice("aeiou") + "\u0301" for _ in range(3_000)),  # combining accents
            " ".join(_rand_run(rnd, rnd.randint(1, 12)) for _ in range(3_000)) + ".",  # one huge sentence
        ]
    )


def _no_whitespace(text: str) -> str:
    return "".join(text.split())


def _assert_in_order_and_covering(text: str, chunks: list[Any]) -> None:
    """Each chunk is a piece of the whitespace-normalised text; they start in order and leave no gap."""
    norm = "\n\n".join(" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip())
    start, covered = -1, 0
    for chunk in chunks:
        found = norm.rfind(chunk.content, start + 1, covered + 2 + len(chunk.content))
        assert found >= 0, chunk.content[:80]
        assert not norm[covered:found].strip(), f"gap: {norm[covered:found][:80]!r}"
        start, covered = found, max(covered, found + len(chunk.content))
    assert not norm[covered:].strip()


@pytest.mark.parametrize(("max_tokens", "overlap", "max_chars"), [(200, 0, 2000), (64, 16, 300), (256, 40, 2000)])
def test_hostile_text_is_capped_and_every_character_survives(
    embedder: Any, max_tokens: int, overlap: int, max_chars: int
) -> None:
    text = _hostile_text()
    chunks = chunk_sections(
        [Section(text)], embedder.count_tokens, max_tokens=max_tokens, overlap=overlap, max_chars=max_chars
    )
    for chunk in chunks:
        assert len(chunk.content) <= max_chars
        assert chunk.token_count <= max_tokens
        assert embedder.count_tokens([chunk.content])[0] == chunk.token_count
    _assert_in_order_and_covering(text, chunks)
    if overlap == 0:  # no repeats: the chunks are exactly the text, whitespace aside
        assert "".join(_no_whitespace(c.content) for c in chunks) == _no_whitespace(text)


def test_a_10k_line_with_no_spaces_is_cut_at_the_cap(embedder: Any) -> None:
    line = _rand_run(random.Random(3), 10_000)
    chunks = chunk_sections([Section(line)], embedder.count_tokens, max_chars=2000)
    assert [len(c.content) for c in chunks] == [2000] * 5
    assert "".join(c.content for c in chunks) == line


def test_cuts_in_a_word_prefer_punctuation(embedder: Any) -> None:
    url = "/".join(f"segment{i:04d}" + "x" * 20 for i in range(400))
    chunks = chunk_sections([Section(url)], embedder.count_tokens, max_tokens=256, overlap=0, max_chars=500)
    assert len(chunks) > 10
    assert all(c.content.endswith("/") for c in chunks[:-1])
    assert "".join(c.content for c in chunks) == url


def test_the_character_cap_applies_to_prose(embedder: Any) -> None:
    chunks = chunk_sections([Section(TEXT)], embedder.count_tokens, max_tokens=256, overlap=40, max_chars=300)
    assert len(chunks) > 5
    assert all(len(c.content) <= 300 for c in chunks)
    assert all(". " not in c.content or c.content.endswith(".") for c in chunks)  # whole sentences still
    _assert_in_order_and_covering(TEXT, chunks)


def test_iter_chunks_streams(embedder: Any) -> None:
    sections = iter([Section(TEXT), Section("Second section.")])
    stream = iter_chunks(sections, embedder.count_tokens, max_tokens=64, overlap=16)
    first = next(stream)
    assert first.content.startswith("Sentence number 0 ")
    assert [c.content for c in stream][-1] == "Second section."


_MEASURE = """
import json, os, random, string, sys, time
os.environ["TOKENIZERS_PARALLELISM"] = "false"
from ragchat.documents.chunking.sentences import iter_chunks
from ragchat.documents.parsing.parsers import Section
from ragchat.providers.embeddings.base import bundled_token_counter
count = bundled_token_counter(); count(["warm up"])
kind, mb = sys.argv[1], float(sys.argv[2])
n = int(mb * 1024 * 1024)
if kind == "text":
    words = [("".join(random.Random(i).choices(string.ascii_lowercase, k=2 + i % 9))) for i in range(5000)]
    rnd = random.Random(1)
    sentences = (" ".join(rnd.choices(words, k=rnd.randint(5, 30))).capitalize() + "." for _ in range(3000))
    block = " ".join(s + ("\\n\\n" if i % 6 == 5 else "") for i, s in enumerate(sentences))
    text = (block * (n // len(block) + 1))[:n]
else:
    text = "".join(random.Random(2).choices(string.ascii_letters + string.digits, k=64 * 1024)) * (n // 65536)
def status(key):  # kB; VmHWM is this process's peak (getrusage's maxrss also counts the parent's, from fork)
    return int(next(line for line in open("/proc/self/status") if line.startswith(key)).split()[1])
base, t0, chunks, max_chars, max_tokens = status("VmRSS"), time.perf_counter(), 0, 0, 0
for c in iter_chunks([Section(text)], count):
    chunks, max_chars, max_tokens = chunks + 1, max(max_chars, len(c.content)), max(max_tokens, c.token_count)
peak = status("VmHWM")
print(json.dumps({"kind": kind, "mb": mb, "chunks": chunks, "seconds": round(time.perf_counter() - t0, 1),
                  "peak_growth_mb": round((peak - base) / 1024), "max_chars": max_chars, "max_tokens": max_tokens}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["text", "line"])
def test_large_inputs_chunk_in_bounded_memory(kind: str) -> None:
    """A big text (RAGCHAT_CHUNK_BENCH_MB, default 8; 40 for the issue's numbers) and a 10 MB line with no
    spaces, chunked in a fresh process: peak memory growth beyond the text itself stays small."""
    mb = float(os.environ.get("RAGCHAT_CHUNK_BENCH_MB", "8")) if kind == "text" else 10.0
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, kind, str(mb)], capture_output=True, text=True, check=True, timeout=900
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(result)
    assert result["max_chars"] <= 2000 and result["max_tokens"] <= 200
    assert result["peak_growth_mb"] < 150


def test_random_mixtures_keep_every_invariant() -> None:
    """Seeded mixtures of prose, glued runs and punctuation under random caps: within both caps, counts exact,
    nothing dropped, in order."""
    from ragchat.providers.embeddings.base import bundled_token_counter

    count = bundled_token_counter()
    rnd = random.Random(2026)
    parts = [
        lambda: f"Short sentence {rnd.randrange(10**6)} here. Another One {rnd.randrange(10**6)} follows!",
        lambda: _rand_run(rnd, rnd.randint(50, 3000)),
        lambda: _rand_run(rnd, rnd.randint(50, 3000), string.ascii_letters + "+/=-_.,"),
        lambda: " ".join(_rand_run(rnd, rnd.randint(1, 15)) for _ in range(rnd.randint(1, 400))),
        lambda: "\n\n",
    ]
    for _ in range(25):
        text = " ".join(rnd.choice(parts)() for _ in range(rnd.randint(1, 12)))
        max_tokens = rnd.choice([16, 40, 128, 256])
        overlap = rnd.randrange(0, max_tokens // 2)
        max_chars = rnd.choice([100, 333, 2000])
        chunks = chunk_sections([Section(text)], count, max_tokens=max_tokens, overlap=overlap, max_chars=max_chars)
        for chunk in chunks:
            assert len(chunk.content) <= max_chars
            assert chunk.token_count <= max_tokens
            assert count([chunk.content])[0] == chunk.token_count
        _assert_in_order_and_covering(text, chunks)
        if overlap == 0:
            assert "".join(_no_whitespace(c.content) for c in chunks) == _no_whitespace(text)
