"""LLM providers behind one interface (`LLMProvider`), built from settings by `build_llm`."""

from __future__ import annotations

from ragchat.providers.llm.base import LLMProvider
from ragchat.providers.llm.streaming import StreamLimits
from ragchat.settings import LLMProviderName, LLMSettings


def stream_limits(settings: LLMSettings) -> StreamLimits:
    """The first-token, stall and overall limits of streamed calls (streaming.py) from the settings."""
    return StreamLimits(
        first_token_floor_s=settings.llm_timeout_s,
        first_token_factor=settings.llm_first_token_factor,
        stall_s=settings.llm_stall_timeout_s,
        max_call_s=settings.llm_max_call_s,
    )


def build_llm(settings: LLMSettings, *, json_shards: int = 8) -> LLMProvider:
    """The chat model's provider: `LLM_PROVIDER=ollama` (native API) or `openai` (any compatible server).
    `json_shards`: small HTTP connection pools Ollama's parallel JSON calls are spread over (RERANK_CLIENT_SHARDS)."""
    if settings.llm_provider == LLMProviderName.openai:
        from ragchat.providers.llm.openai import OpenAIProvider

        key = settings.openai_key
        return OpenAIProvider(
            settings.openai_base_url,
            key,
            timeout_s=settings.llm_timeout_s,
            connect_timeout_s=settings.llm_connect_timeout_s,
            limits=stream_limits(settings),
        )
    from ragchat.providers.llm.ollama import OllamaProvider

    return OllamaProvider(
        settings.ollama_host,
        timeout_s=settings.llm_timeout_s,
        connect_timeout_s=settings.llm_connect_timeout_s,
        json_shards=json_shards,
        limits=stream_limits(settings),
    )
