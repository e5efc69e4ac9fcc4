"""The ONNX Runtime int8 backend of the bundled MiniLM (EMBED_BACKEND=onnx-int8) against torch float32.

The export lives in the user's cache (~/.cache/ragchat/onnx), shared by every test session: only the first
session on a machine pays the export (about 20-40 s on 2 cores); later ones load the file in under a second.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragchat.core.options import options_of
from ragchat.providers.embeddings import build_embedder, onnx_export
from ragchat.providers.embeddings.onnx import OnnxEmbedder
from ragchat.providers.embeddings.sentence_transformers import SentenceTransformerEmbedder
from ragchat.settings import Settings
from tests.support.services import LOCAL, ingest_texts, make_searcher

SENTENCES = [
    "What causes ocean tides?",
    "The gravitational pull of the moon raises the sea on the side of the Earth facing it.",
    "sourdough bread rises because of wild yeast",
    "Are Python tuples mutable?",
    "Welche Farbe hat der Himmel?",
    "Mutations in the BRCA1 gene increase the risk of breast cancer. " * 3,
    "a",
    "BRCA1 " * 300,  # longer than the model's 256 word pieces: truncated like the torch backend truncates
]
MIN_COSINE = 0.98  # int8 against float32, per text (measured: ≥ 0.99 on these)


@pytest.fixture(scope="module")
def onnx() -> Any:
    os.environ["HF_HUB_OFFLINE"] = "1"  # the bundled weights only: no network, no hub lookups
    return OnnxEmbedder()


def embedder_of(settings: Settings, *args: str) -> Any:
    return build_embedder(settings.embeddings, settings.llm, *args)


def test_loads_offline_from_the_bundled_weights_into_the_shared_cache(onnx: OnnxEmbedder) -> None:
    assert onnx.model_path.parent.parent == onnx_export.default_cache_dir()
    assert onnx_export.intact(onnx.model_path)
    assert (onnx.provider, onnx.model_name, onnx.dim, onnx.max_tokens) == (
        "sentence-transformers",
        "all-MiniLM-L6-v2-onnx-int8",
        384,
        256,
    )


def test_second_load_reuses_the_export(onnx: OnnxEmbedder, caplog: pytest.LogCaptureFixture) -> None:
    before = onnx.model_path.stat().st_mtime_ns
    with caplog.at_level(logging.INFO, logger="ragchat.providers.embeddings.onnx_export"):
        again = OnnxEmbedder()
    assert again.model_path == onnx.model_path and again.model_path.stat().st_mtime_ns == before
    assert not [r for r in caplog.records if "exporting" in r.getMessage()]
    assert np.array_equal(again.embed_sync(SENTENCES[:3]), onnx.embed_sync(SENTENCES[:3]))


def test_vectors_agree_with_float32(onnx: OnnxEmbedder, embedder: SentenceTransformerEmbedder) -> None:
    fast, reference = onnx.embed_sync(SENTENCES), embedder.embed_sync(SENTENCES)
    assert fast.dtype == np.float32 and fast.shape == (len(SENTENCES), 384)
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
    assert (fast * reference).sum(axis=1).min() >= MIN_COSINE
    # the nearest neighbours are the same: each query's best sentence is the one float32 picks
    assert np.array_equal((fast[:1] @ fast[1:].T).argmax(), (reference[:1] @ reference[1:].T).argmax())
    queries = onnx.embed_queries_sync(SENTENCES)
    assert (queries * reference).sum(axis=1).min() >= MIN_COSINE


def test_token_counting_and_limits_are_the_torch_backends(onnx: OnnxEmbedder, embedder: Any) -> None:
    assert onnx.count_tokens(SENTENCES) == embedder.count_tokens(SENTENCES)
    assert onnx.max_tokens == embedder.max_tokens == 256
    cut = onnx.embed_sync(["BRCA1 " * 300, "BRCA1 " * 1000])  # both truncated to the same 256 word pieces
    assert float(cut[0] @ cut[1]) > 0.999


async def test_concurrent_queries_share_forward_passes(onnx: OnnxEmbedder) -> None:
    texts = [f"question number {i} about tides and volcanoes" for i in range(40)]
    before = onnx._queries.batches
    rows = await asyncio.gather(*(onnx.embed_queries([t]) for t in texts))
    assert 1 <= onnx._queries.batches - before < len(texts) // 4
    alone = onnx.embed_queries_sync(texts)
    assert (np.concatenate(rows) * alone).sum(axis=1).min() >= MIN_COSINE  # int8 scales vary with the batch
    assert (await onnx.embed_queries([])).shape == (0, 384)
    assert onnx.embed_sync([]).shape == (0, 384)


def test_the_setting_picks_the_backend_and_each_has_its_own_space(settings: Settings) -> None:
    int8 = settings.model_copy(update={"embed_backend": "onnx-int8"})
    fast = build_embedder(int8.embeddings, int8.llm)
    assert isinstance(fast, OnnxEmbedder) and fast.model_name == "all-MiniLM-L6-v2-onnx-int8"
    slow = embedder_of(settings.model_copy(update={"embed_backend": "torch"}))
    assert isinstance(slow, SentenceTransformerEmbedder) and slow.model_name == "all-MiniLM-L6-v2"
    # a stored space is rebuilt on the backend that made it, whatever EMBED_BACKEND says now
    assert isinstance(
        build_embedder(int8.embeddings, int8.llm, "sentence-transformers", "all-MiniLM-L6-v2"),
        SentenceTransformerEmbedder,
    )
    assert isinstance(
        build_embedder(settings.embeddings, settings.llm, "sentence-transformers", fast.model_name), OnnxEmbedder
    )


def test_embed_threads_caps_the_document_threads_of_either_backend(settings: Settings) -> None:
    """EMBED_THREADS=1: each of two workers on a 2-core machine embeds on its own core (0 = every core)."""
    one = settings.model_copy(update={"embed_threads": 1})
    onnx = embedder_of(one.model_copy(update={"embed_backend": "onnx-int8"}))
    assert isinstance(onnx, OnnxEmbedder)
    assert onnx._docs.get_session_options().intra_op_num_threads == 1  # pyright: ignore[reportPrivateUsage]
    torch_one = embedder_of(one.model_copy(update={"embed_backend": "torch"}))
    assert isinstance(torch_one, SentenceTransformerEmbedder)
    assert torch_one._doc_threads == 1  # pyright: ignore[reportPrivateUsage]
    every = embedder_of(settings.model_copy(update={"embed_backend": "onnx-int8", "embed_threads": 0}))
    assert isinstance(every, OnnxEmbedder)
    cores = len(os.sched_getaffinity(0))
    assert every._docs.get_session_options().intra_op_num_threads == cores  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(ValueError):
        Settings(embed_threads=-1)


def test_a_corrupt_manifest_or_file_is_detected(onnx: OnnxEmbedder, tmp_path: Path) -> None:
    copy = tmp_path / onnx.model_path.parent.name
    shutil.copytree(onnx.model_path.parent, copy, ignore=shutil.ignore_patterns(".lock", ".export-*"))
    model = copy / "model.onnx"
    assert onnx_export.intact(model)
    with model.open("r+b") as f:  # same size, one flipped byte in the weights
        f.seek(model.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert not onnx_export.intact(model)
    (copy / "manifest.json").write_text("{not json")
    assert not onnx_export.intact(model)


@pytest.mark.slow
def test_a_corrupt_cached_export_is_rebuilt(onnx: OnnxEmbedder, tmp_path: Path) -> None:
    """A truncated model file in the cache (a crash mid-copy, a full disk) is exported again (~20-40 s)."""
    target = tmp_path / onnx.model_path.parent.name
    shutil.copytree(onnx.model_path.parent, target, ignore=shutil.ignore_patterns(".lock", ".export-*"))
    (target / "model.onnx").write_bytes((target / "model.onnx").read_bytes()[:4096])
    rebuilt = OnnxEmbedder(cache_dir=tmp_path)
    assert rebuilt.model_path == target / "model.onnx" and onnx_export.intact(rebuilt.model_path)
    assert (rebuilt.embed_sync(SENTENCES) * onnx.embed_sync(SENTENCES)).sum(axis=1).min() > 0.9999


async def test_ingest_and_search_end_to_end(onnx: OnnxEmbedder, pool: Any, settings: Settings) -> None:
    docs = {
        "tides.txt": "Ocean tides are caused by the gravitational pull of the moon and the sun on the seas.",
        "bread.txt": "Sourdough bread rises because wild yeast and lactic acid bacteria ferment the dough.",
        "python.txt": "In Python, tuples are immutable sequences; lists can be changed in place.",
    }
    await ingest_texts(pool, onnx, settings, docs)
    searcher = make_searcher(pool, onnx, settings)
    for query, expected in [
        ("why does the sea rise and fall", "tides.txt"),
        ("what makes dough leaven", "bread.txt"),
        ("can I modify a tuple", "python.txt"),
    ]:
        result = await searcher.search(
            query, principal=LOCAL, options=options_of(searcher.settings, limit=3, mode="vector")
        )
        assert result.chunks[0].filename == expected, (query, [c.filename for c in result.chunks])
