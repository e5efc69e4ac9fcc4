"""LLM providers behind one interface (`LLMProvider`), built from settings by `build_llm`."""

from __future__ import annotations

from ragchat.providers.llm.base import LLMProvider
from ragchat.settings import LLMProviderName, Settings


def build_llm(settings: Settings) -> LLMProvider:
    """The chat model's provider: `LLM_PROVIDER=ollama` (native API) or `openai` (any compatible server)."""
    if settings.llm_provider == LLMProviderName.openai:
        from ragchat.providers.llm.openai import OpenAIProvider

        key = settings.openai_key
        return OpenAIProvider(
            settings.openai_base_url,
            key,
            timeout_s=settings.llm_timeout_s,
            connect_timeout_s=settings.llm_connect_timeout_s,
        )
    from ragchat.providers.llm.ollama import OllamaProvider

    return OllamaProvider(
        settings.ollama_host,
        timeout_s=settings.llm_timeout_s,
        connect_timeout_s=settings.llm_connect_timeout_s,
        json_shards=settings.rerank_client_shards,
    )
