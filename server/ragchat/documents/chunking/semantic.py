"""The `semantic` strategy: cut where the meaning of consecutive sentences shifts, within token bounds.

A section's sentences (chunking.py's units, each within both caps) are embedded in batches with the
pipeline's embedder. At each gap between two sentences, the window of `WINDOW` sentences before it is
compared with the window after it (cosine of the summed unit vectors). A gap is a candidate cut when its
similarity is a local minimum and below the document's `THRESHOLD_PERCENTILE`-th percentile of gap
similarities. Chunks are then built left to right: a chunk ends at the first candidate once it holds at
least `min_tokens`; when none comes before the caps are reached, at the least similar gap in its second
half. No overlap (the cuts are where topics change). Like every strategy: within `max_tokens` and
`max_chars`, nothing dropped, never across a section, page, heading and location kept.

Optionally (`choose`), a caller-given function picks among the best candidate cuts of a chunk (the
LLM-assisted choice); any failure or an answer outside the candidates keeps the embedding's choice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragchat.documents.chunking.sentences import (
    DEFAULT_MAX_CHARS,
    Chunk,
    TokenCounter,
    Unit,
    joined_within,
    units_within,
)
from ragchat.documents.parsing.parsers import Section

Embed = Callable[[Sequence[str]], np.ndarray]
# (text before each candidate cut, text after it) for 2+ candidates -> the index of the one to use, or None
Choose = Callable[[list[tuple[str, str]]], int | None]

WINDOW = 2  # sentences on each side of a gap
THRESHOLD_PERCENTILE = 30.0
EMBED_BATCH = 256  # sentences per embed call
MAX_UNITS = 20_000  # more sentences than this in one document: the caller chunks it by sentences instead


class TooLong(Exception):
    """The document has more than MAX_UNITS sentences (embedding them all would cost more than it helps)."""


@dataclass
class _Section:
    section: Section
    units: list[Unit]
    start: int  # index of its first unit among the document's


def gap_similarities(vectors: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """Cosine between the summed `window` vectors before each gap and the `window` after it (n-1 values)."""
    n = len(vectors)
    if n < 2:
        return np.zeros(0, dtype=np.float32)
    cum = np.vstack([np.zeros((1, vectors.shape[1]), dtype=np.float64), np.cumsum(vectors, axis=0, dtype=np.float64)])
    gaps = np.arange(1, n)  # gap g sits before unit g
    left = cum[gaps] - cum[np.maximum(gaps - window, 0)]
    right = cum[np.minimum(gaps + window, n)] - cum[gaps]
    norms = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    return (np.einsum("ij,ij->i", left, right) / np.where(norms == 0, 1, norms)).astype(np.float32)


def _candidates(sims: np.ndarray, threshold: float) -> np.ndarray:
    """Gaps (index g: before unit g+1) that are local minima below `threshold`."""
    if not len(sims):
        return np.zeros(0, dtype=bool)
    before = np.concatenate([[np.inf], sims[:-1]])
    after = np.concatenate([sims[1:], [np.inf]])
    return (sims <= before) & (sims <= after) & (sims < threshold)


def _cuts(
    units: list[Unit],
    sims: np.ndarray,
    candidate: np.ndarray,
    *,
    max_tokens: int,
    max_chars: int,
    min_tokens: int,
    choose: Choose | None,
) -> list[int]:
    """End indices (exclusive) of the chunks of one section's units."""
    n, cuts, start = len(units), [], 0
    while start < n:
        tokens, chars, end = 0, 0, start
        sizes: list[int] = []  # tokens of units[start:end] for each end
        while end < n:
            extra = len(units[end].text) + (len(units[end].sep) if end > start else 0)
            if end > start and (tokens + units[end].tokens > max_tokens or chars + extra > max_chars):
                break
            tokens += units[end].tokens
            chars += extra
            end += 1
            sizes.append(tokens)
        # a cut after unit k (k in start..end-2) is gap k; its chunk holds sizes[k - start] tokens
        options = [k for k in range(start, end - 1) if sizes[k - start] >= min_tokens]
        marked = [k for k in options if candidate[k]]
        if marked:
            cut = marked[0]
            if choose is not None and len(marked) > 1:
                best = sorted(marked, key=lambda k: sims[k])[:3]
                cut = _chosen(choose, units, best) or cut
        elif end == n:
            cut = n - 1
        else:
            late = [k for k in options if sizes[k - start] >= max_tokens // 2] or options
            cut = min(late, key=lambda k: sims[k]) if late else end - 1
        cuts.append(cut + 1)
        start = cut + 1
    return cuts


def _chosen(choose: Choose, units: list[Unit], options: list[int]) -> int | None:
    """The caller's pick among `options` (gap indices), None on any failure or an answer outside them."""
    pairs = [(units[k].text, units[k + 1].text) for k in options]
    try:
        picked = choose(pairs)
    except Exception:
        return None
    return options[picked] if isinstance(picked, int) and 0 <= picked < len(options) else None


def semantic_chunks(
    sections: Sequence[Section],
    count: TokenCounter,
    embed: Embed,
    *,
    max_tokens: int = 200,
    max_chars: int = DEFAULT_MAX_CHARS,
    min_tokens: int | None = None,
    choose: Choose | None = None,
) -> list[Chunk]:
    """Chunks cut at shifts of meaning, in document order. Raises TooLong past MAX_UNITS sentences."""
    min_tokens = max(8, max_tokens // 3) if min_tokens is None else min_tokens
    parts: list[_Section] = []
    total = 0
    for section in sections:
        units = list(units_within(section.text, max_tokens, max_chars, count))
        if units:
            parts.append(_Section(section, units, total))
            total += len(units)
            if total > MAX_UNITS:
                raise TooLong(f"more than {MAX_UNITS:,} sentences")
    texts = [u.text for part in parts for u in part.units]
    vectors = (
        np.vstack([embed(texts[i : i + EMBED_BATCH]) for i in range(0, len(texts), EMBED_BATCH)]) if texts else None
    )
    sims_by_part = [gap_similarities(vectors[p.start : p.start + len(p.units)]) for p in parts if vectors is not None]
    every = np.concatenate(sims_by_part) if sims_by_part else np.zeros(0)
    threshold = float(np.percentile(every, THRESHOLD_PERCENTILE)) if len(every) else 0.0
    out: list[Chunk] = []
    for part, sims in zip(parts, sims_by_part, strict=True):
        cuts = _cuts(
            part.units,
            sims,
            _candidates(sims, threshold),
            max_tokens=max_tokens,
            max_chars=max_chars,
            min_tokens=min_tokens,
            choose=choose,
        )
        begin, s = 0, part.section
        for end in cuts:
            for text, tokens in joined_within(part.units[begin:end], count, max_tokens):
                out.append(Chunk(text, s.page, s.heading, tokens, s.location))
            begin = end
    return out
