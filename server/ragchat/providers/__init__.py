"""Providers below the domains: LLMs (Ollama, OpenAI-compatible) and embedding models."""
