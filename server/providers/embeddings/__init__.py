"""Embedding providers behind one interface (`EmbeddingProvider`), built by `build_embedder`."""

from __future__ import annotations

from server.providers.embeddings.base import EmbeddingProvider
from server.settings import EmbedProvider, Settings

DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"


def build_embedder(settings: Settings, provider: str | None = None, model: str | None = None) -> EmbeddingProvider:
    """The provider for (`provider`, `model`), defaulting to EMBED_PROVIDER / EMBED_MODEL. Loads a local model
    (seconds): call it off the event loop."""
    kind = EmbedProvider(provider or settings.embed_provider)
    name = model or settings.embed_model
    dim = settings.embed_dim if (provider is None and model is None) else None
    if kind is EmbedProvider.ollama:
        from server.providers.embeddings.remote import OllamaEmbeddings

        return OllamaEmbeddings(
            settings.ollama_host,
            name,
            dim=dim,
            batch_size=settings.embed_batch_size,
            timeout_s=settings.embed_timeout_s,
        )
    if kind is EmbedProvider.openai:
        from server.providers.embeddings.remote import OpenAIEmbeddings

        key = settings.openai_key
        return OpenAIEmbeddings(
            settings.openai_base_url,
            key,
            name,
            dim=dim,
            batch_size=settings.embed_batch_size,
            timeout_s=settings.embed_timeout_s,
        )
    from server.providers.embeddings.sentence_transformers import SentenceTransformerEmbedder

    if name != DEFAULT_LOCAL_MODEL:
        from server.core.errors import BadRequest

        raise BadRequest(
            f"EMBED_PROVIDER=sentence-transformers ships only {DEFAULT_LOCAL_MODEL} (offline); got EMBED_MODEL={name}. "
            "Use EMBED_PROVIDER=ollama or openai for other models."
        )
    return SentenceTransformerEmbedder(
        name, batch_size=settings.embed_batch_size, query_precision=settings.query_embed_precision
    )
