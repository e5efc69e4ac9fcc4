"""Bounds every chunking strategy keeps on hostile text (issue 34): no sliver pieces, a bounded number of pieces
per kilobyte, within the caps, nothing dropped; and the sentence splitter's abbreviations and CJK stops."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from ragchat.documents.chunking.line import line_chunks
from ragchat.documents.chunking.semantic import semantic_chunks
from ragchat.documents.chunking.sentences import MIN_SHARE, chunk_sections, units_within
from ragchat.documents.chunking.strategy import blocking_embed, route
from ragchat.documents.parsing.parsers import Section

MAX_TOKENS, MAX_CHARS = 200, 2000
# every chunk but the last of its section holds at least MAX_TOKENS // MIN_SHARE tokens or MAX_CHARS // MIN_SHARE
# characters, so a text of N characters gives at most about N / (MAX_TOKENS // MIN_SHARE) pieces (CJK: 1 token a
# character is the densest text there is)
MAX_PIECES_PER_1000_CHARS = 1000 / (MAX_TOKENS // MIN_SHARE)

_RNG = random.Random(7)
_VOCAB = "the of model data patients cells trial results protein levels during after before study analysis".split()


def _sentence(words: int) -> str:
    return " ".join(_RNG.choice(_VOCAB) for _ in range(words)).capitalize() + "."


_CJK = "我们的研究表明蛋白质水平在治疗后显著下降。这是一个重要的发现！是吗？"
HOSTILE = {
    "60-word sentences": " ".join(_sentence(60) for _ in range(60)),
    # ~1,500 tokens each: several pieces of MAX_TOKENS (the semantic strategy embeds every unit: 4,000 one-word
    # lines took 45 s of the suite's time)
    "unpunctuated": " ".join(_RNG.choice(_VOCAB) for _ in range(1500)),
    "one-word lines": "\n".join(_RNG.choice(_VOCAB) for _ in range(1500)),
    "a short sentence before each long one": " ".join("Ok. " + _sentence(150) for _ in range(30)),
    "CJK without spaces": "".join(
        _RNG.choice("我们的研究表明蛋白质水平在治疗后显著下降。这是一个重要的发现！是吗？") for _ in range(3000)
    ),
}


def _check(text: str, chunks: list[Any], count: Any) -> None:
    assert chunks
    for chunk in chunks:
        assert chunk.token_count <= MAX_TOKENS and len(chunk.content) <= MAX_CHARS
    for chunk in chunks[:-1]:  # one section: only the last may be short
        assert chunk.token_count >= MAX_TOKENS // MIN_SHARE or len(chunk.content) >= MAX_CHARS // MIN_SHARE, chunk
    assert len(chunks) <= 1 + len(text) * MAX_PIECES_PER_1000_CHARS / 1000
    joined = " ".join(c.content for c in chunks)
    assert set(text.split()) <= set(joined.split()) or "。" in text  # nothing dropped (CJK: no spaces to split)


@pytest.fixture(scope="module")
def embed(embedder: Any) -> Any:
    return blocking_embed(embedder, None)


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("strategy", ["sentence", "line", "semantic"])
def test_every_strategy_keeps_its_bounds_on_hostile_text(embedder: Any, embed: Any, name: str, strategy: str) -> None:
    text, count = HOSTILE[name], embedder.count_tokens
    sections = [Section(text)]
    if strategy == "sentence":
        chunks = chunk_sections(sections, count, max_tokens=MAX_TOKENS, overlap=0, max_chars=MAX_CHARS)
    elif strategy == "line":
        chunks = line_chunks(sections, count, max_tokens=MAX_TOKENS, max_chars=MAX_CHARS)
    else:
        chunks = semantic_chunks(sections, count, embed, max_tokens=MAX_TOKENS, max_chars=MAX_CHARS)
    _check(text, chunks, count)


@pytest.mark.parametrize("strategy", ["sentence", "line"])
def test_a_10_mb_single_line_is_cut_by_characters_in_bounded_time(embedder: Any, strategy: str) -> None:
    text = "x" * 10_000_000
    started = time.monotonic()
    if strategy == "sentence":
        chunks = chunk_sections([Section(text)], embedder.count_tokens, max_tokens=MAX_TOKENS, overlap=40)
    else:
        chunks = line_chunks([Section(text)], embedder.count_tokens, max_tokens=MAX_TOKENS)
    assert time.monotonic() - started < 60
    assert len(chunks) == 5000 and all(len(c.content) == MAX_CHARS for c in chunks)


def test_a_short_sentence_before_a_long_one_is_not_left_as_a_sliver(embedder: Any) -> None:
    long = _sentence(150)
    chunks = chunk_sections([Section("Ok. " + long)], embedder.count_tokens, max_tokens=MAX_TOKENS, overlap=0)
    assert chunks[0].content.startswith("Ok. ") and chunks[0].token_count >= MAX_TOKENS // MIN_SHARE
    assert " ".join(c.content for c in chunks) == "Ok. " + long


def _sentences(text: str, embedder: Any) -> list[str]:
    return [u.text for u in units_within(text, MAX_TOKENS, MAX_CHARS, embedder.count_tokens)]


def test_abbreviations_do_not_end_a_sentence(embedder: Any) -> None:
    text = "Dr. Smith showed Fig. 2 to Prof. Jones, e.g. the curve. It fell. See No. 5 vs. No. 6 next."
    assert _sentences(text, embedder) == [
        "Dr. Smith showed Fig. 2 to Prof. Jones, e.g. the curve.",
        "It fell.",
        "See No. 5 vs. No. 6 next.",
    ]


def test_cjk_sentences_end_at_their_own_stops_without_spaces(embedder: Any) -> None:
    assert _sentences("我们去了。然后回家！好吗？是的", embedder) == ["我们去了。", "然后回家！", "好吗？", "是的"]
    chunks = chunk_sections([Section("我们去了。然后回家！")], embedder.count_tokens, max_tokens=MAX_TOKENS)
    assert [c.content for c in chunks] == ["我们去了。然后回家！"]  # glued back as written: no space added


def test_auto_never_picks_the_costly_semantic_strategy() -> None:
    flat = [Section(" ".join(_sentence(60) for _ in range(200)))]  # about 14,000 tokens under no heading
    decision = route(flat, "notes.md")
    assert decision.strategy == "sentence" and "semantic" in decision.reason
