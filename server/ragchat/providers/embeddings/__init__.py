"""Embedding providers behind one interface (`EmbeddingProvider`), built by `build_embedder`."""

from __future__ import annotations

import logging

from ragchat.providers.embeddings.base import EmbeddingProvider
from ragchat.settings import EmbeddingSettings, EmbedProvider, LLMSettings

DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
INT8_MODEL = f"{DEFAULT_LOCAL_MODEL}-onnx-int8"  # its own embedding space: int8 vectors are close, not identical
log = logging.getLogger(__name__)


def build_embedder(
    settings: EmbeddingSettings, servers: LLMSettings, provider: str | None = None, model: str | None = None
) -> EmbeddingProvider:
    """The provider for (`provider`, `model`), defaulting to EMBED_PROVIDER / EMBED_MODEL; a remote one at the
    LLM's server (`servers`: OLLAMA_HOST, OPENAI_BASE_URL, OPENAI_API_KEY). Loads a local model (seconds): call it
    off the event loop."""
    kind = EmbedProvider(provider or settings.embed_provider)
    name = model or settings.embed_model
    dim = settings.embed_dim if (provider is None and model is None) else None
    if kind is EmbedProvider.ollama:
        from ragchat.providers.embeddings.remote import OllamaEmbeddings

        return OllamaEmbeddings(
            servers.ollama_host,
            name,
            dim=dim,
            batch_size=settings.embed_batch_size,
            timeout_s=settings.embed_timeout_s,
        )
    if kind is EmbedProvider.openai:
        from ragchat.providers.embeddings.remote import OpenAIEmbeddings

        key = servers.openai_key
        return OpenAIEmbeddings(
            servers.openai_base_url,
            key,
            name,
            dim=dim,
            batch_size=settings.embed_batch_size,
            timeout_s=settings.embed_timeout_s,
        )
    if name == INT8_MODEL:  # a stored space names its backend: rebuild exactly that one
        return _onnx(settings)
    if model is not None:  # a stored float32 space: torch, whatever EMBED_BACKEND says
        return build_local(settings.model_copy(update={"embed_backend": "torch"}), model)
    if name != DEFAULT_LOCAL_MODEL:
        from ragchat.core.errors import BadRequest

        raise BadRequest(
            f"EMBED_PROVIDER=sentence-transformers ships only {DEFAULT_LOCAL_MODEL} (offline); got EMBED_MODEL={name}. "
            "Use EMBED_PROVIDER=ollama or openai for other models."
        )
    return build_local(settings, name)


def build_local(settings: EmbeddingSettings, name: str = DEFAULT_LOCAL_MODEL) -> EmbeddingProvider:
    """The bundled MiniLM on EMBED_BACKEND: ONNX Runtime int8 (default) or torch float32. int8 vectors form
    their own embedding space (model name `INT8_MODEL`: switching backends is a `ragchat reembed`). An ONNX
    backend that cannot be built (no onnxruntime, a failed export) falls back to torch with a warning."""
    from ragchat.providers.embeddings.sentence_transformers import SentenceTransformerEmbedder

    if settings.embed_backend == "onnx-int8":
        try:
            return _onnx(settings)
        except (ImportError, OSError, RuntimeError, ValueError) as exc:
            log.warning("EMBED_BACKEND=onnx-int8 is unavailable (%s): using torch", exc)
    return SentenceTransformerEmbedder(
        name,
        batch_size=settings.embed_batch_size,
        query_precision=settings.query_embed_precision,
        threads=settings.embed_threads or None,
    )


def _onnx(settings: EmbeddingSettings) -> EmbeddingProvider:
    """The bundled MiniLM as ONNX Runtime int8 (raises ImportError/OSError/RuntimeError/ValueError if unusable)."""
    from ragchat.providers.embeddings.onnx import OnnxEmbedder

    return OnnxEmbedder(
        INT8_MODEL,
        batch_size=settings.embed_batch_size,
        cache_dir=settings.embed_cache_dir,
        threads=settings.embed_threads or None,
    )
