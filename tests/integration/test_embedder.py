"""The real MiniLM query path: bf16 copy agrees with float32, concurrent queries are batched."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from ragchat.providers.embeddings.sentence_transformers import (
    BF16_MIN_COSINE,
    SentenceTransformerEmbedder,
    _native_bf16,
)

QUERIES = [
    "What causes ocean tides?",
    "sourdough bread rises because of wild yeast",
    "Are Python tuples mutable?",
    "Welche Farbe hat der Himmel?",
    "a",
    "BRCA1 " * 300,  # longer than the model's 256 word pieces: truncated like documents
]


def test_query_embeddings_match_document_embeddings(embedder: Any) -> None:
    docs = embedder.embed_sync(QUERIES)
    queries = embedder.embed_queries_sync(QUERIES)
    assert queries.dtype == np.float32 and queries.shape == (len(QUERIES), 384)
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    cosine = (docs * queries).sum(axis=1)
    assert cosine.min() >= BF16_MIN_COSINE
    expected = "bf16" if _native_bf16() else "fp32"
    assert embedder.query_precision == expected


def test_fp32_setting_uses_the_document_model(embedder: Any) -> None:
    fp32 = SentenceTransformerEmbedder(query_precision="fp32")
    assert fp32.query_precision == "fp32" and fp32.query_model is fp32.model
    assert np.allclose(fp32.embed_queries_sync(QUERIES[:3]), embedder.embed_sync(QUERIES[:3]), atol=1e-5)


async def test_concurrent_queries_share_forward_passes(embedder: Any) -> None:
    texts = [f"question number {i} about tides and volcanoes" for i in range(40)]
    before = embedder._queries.batches
    rows = await asyncio.gather(*(embedder.embed_queries([t]) for t in texts))
    passes = embedder._queries.batches - before
    assert 1 <= passes < len(texts) // 4
    together = np.concatenate(rows)
    alone = embedder.embed_queries_sync(texts)  # padding inside a batch does not change a query's vector
    assert (together * alone).sum(axis=1).min() > 0.9999
    assert (await embedder.embed_queries([])).shape == (0, 384)
