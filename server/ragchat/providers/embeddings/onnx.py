"""all-MiniLM-L6-v2 on ONNX Runtime, int8 (EMBED_BACKEND=onnx-int8): the same model, about twice as fast.

The model is exported once from the bundled weights and cached (`onnx_export.cached_model`). Tokenization
uses the model's own `tokenizer.json` (one tokenizer per thread: fast tokenizers are not thread-safe);
pooling (mean over real tokens) and L2 normalisation are done here, as the sentence-transformers model
defines them (`1_Pooling`, `2_Normalize`), so vectors are 384-d normalised float32 like the torch backend's.

Documents: one session with an intra-op thread per core, texts sorted by token count so each batch pads
to similar lengths. Queries: a second session with one thread, run on the dedicated nice'd query thread
(the event loop wins the CPU), concurrent queries batched into one pass (`QueryBatcher`).
Thread pools do not spin while idle: on a shared machine spinning threads steal the cores they wait for.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ragchat.providers.embeddings import onnx_export
from ragchat.providers.embeddings.base import EmbeddingError, TokenCounter, bundled_model_path
from ragchat.providers.embeddings.batching import QueryBatcher

log = logging.getLogger(__name__)

QUERY_THREAD_NICE = 5  # as the torch backend's query thread


class OnnxEmbedder:
    """The bundled MiniLM through onnxruntime. Its vectors are an embedding space of their own (model name
    "all-MiniLM-L6-v2-onnx-int8"): int8 and float32 vectors agree to a cosine of about 0.995, not exactly,
    so the two are not mixed in one index; switching EMBED_BACKEND is a `ragchat reembed`.

    Dynamic int8 quantisation scales activations per batch: a text's vector varies slightly (cosine ≥ 0.98)
    with the batch it is encoded in."""

    provider = "sentence-transformers"

    def __init__(
        self,
        model_name: str = "all-MiniLM-L6-v2-onnx-int8",
        *,
        batch_size: int = 64,
        path: str | None = None,
        cache_dir: Path | None = None,
        variant: onnx_export.Variant = "int8",
        threads: int | None = None,
    ):
        import onnxruntime as ort

        self.model_name = model_name
        self.batch_size = max(1, batch_size)
        self.backend = f"onnx-{variant}"
        model_dir = Path(path or bundled_model_path())
        config = json.loads((model_dir / "sentence_bert_config.json").read_text())
        self.max_tokens = int(config.get("max_seq_length", 256))
        self._tokenizers = _Tokenizers(str(model_dir / "tokenizer.json"), self.max_tokens)
        self._counter = TokenCounter(str(model_dir / "tokenizer.json"))
        self.model_path = onnx_export.cached_model(model_dir, cache_dir, variant)
        cores = threads or len(os.sched_getaffinity(0))
        try:
            self._docs = _session(ort, self.model_path, cores)
        except Exception as exc:  # an intact-looking file onnxruntime rejects: export again, once
            log.warning("cached ONNX model %s does not load (%s): exporting it again", self.model_path, exc)
            onnx_export.invalidate(self.model_path)
            self.model_path = onnx_export.cached_model(model_dir, cache_dir, variant)
            self._docs = _session(ort, self.model_path, cores)
        self._query_session = _session(ort, self.model_path, 1)
        self.dim = int(self._run(self._docs, ["dimension probe"]).shape[1])
        self.query_precision = variant
        self._query_thread = ThreadPoolExecutor(1, thread_name_prefix="query-embed", initializer=_lower_priority)
        self._queries = QueryBatcher(self._encode_queries, max_batch=self.batch_size, executor=self._query_thread)

    async def dimension(self) -> int:
        return self.dim

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """Document vectors on the calling thread, in batches of `batch_size` texts of similar token counts."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokenizers.get().encode_batch(list(texts))
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        out = np.zeros((len(encodings), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            out[idx] = self._forward(self._docs, [encodings[i] for i in idx])
        return out

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_sync, texts)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await self._queries.embed(texts)

    def embed_queries_sync(self, texts: Sequence[str]) -> np.ndarray:
        """The query path without batching (benches and tests), on the query thread."""
        return self._query_thread.submit(self._encode_queries, list(texts)).result()

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._counter(texts)

    async def close(self) -> None:
        self._query_thread.shutdown(wait=False)

    def _encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._run(self._query_session, texts)

    def _run(self, session: Any, texts: list[str]) -> np.ndarray:
        return self._forward(session, self._tokenizers.get().encode_batch(texts))

    def _forward(self, session: Any, encodings: list[Any]) -> np.ndarray:
        """Mean-pooled, L2-normalised vectors of one padded batch."""
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        try:
            states = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        except Exception as exc:
            raise EmbeddingError(f"ONNX Runtime failed to embed with {self.model_path}: {exc}") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (states[0] * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)


class _Tokenizers:
    """One truncating tokenizer per thread (special tokens added, no padding: batches pad themselves)."""

    def __init__(self, path: str, max_tokens: int) -> None:
        self.path, self.max_tokens = path, max_tokens
        self._local = threading.local()

    def get(self) -> Any:
        tok = getattr(self._local, "tok", None)
        if tok is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(self.path)
            tok.enable_truncation(max_length=self.max_tokens)
            tok.no_padding()
            self._local.tok = tok
        return tok


def _session(ort: Any, path: Path, threads: int) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _lower_priority() -> None:
    try:
        os.setpriority(
            os.PRIO_PROCESS, threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0) + QUERY_THREAD_NICE
        )
    except (AttributeError, OSError):
        pass
