"""Embedding models behind a server: Ollama's `/api/embed` and any OpenAI-compatible `/v1/embeddings`.

Chunks are sized with MiniLM's word pieces (`bundled_token_counter`), a close proxy for these models'
tokenizers at the chunk sizes ragchat uses (≤ 256), far below their input limits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from ragchat.providers.embeddings.base import EmbeddingError, bundled_token_counter, normalise

REMOTE_MAX_TOKENS = 512  # what chunks may hold; every supported remote model accepts at least this


class _Remote:
    provider = ""
    max_tokens = REMOTE_MAX_TOKENS

    def __init__(self, model: str, *, dim: int | None, batch_size: int, timeout_s: float) -> None:
        self.model_name = model
        self._dim = dim
        self._dim_configured = dim is not None
        self.batch_size = max(1, batch_size)
        self.timeout_s = timeout_s
        self._probe_lock = asyncio.Lock()

    async def _request(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    async def dimension(self) -> int:
        if self._dim is None:
            async with self._probe_lock:
                if self._dim is None:
                    self._dim = int((await self._request(["dimension probe"])).shape[1])
        return self._dim

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, await self.dimension()), dtype=np.float32)
        parts = [
            await self._request(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)
        ]
        vectors = np.concatenate(parts)
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        elif vectors.shape[1] != self._dim:
            if self._dim_configured:
                raise EmbeddingError(
                    f"{self.provider} model {self.model_name} returned {vectors.shape[1]}-dimension vectors, not "
                    f"{self._dim} (EMBED_DIM). Unset EMBED_DIM or pick the model it belongs to."
                )
            raise EmbeddingError(
                f"{self.provider} model {self.model_name} now returns {vectors.shape[1]}-dimension vectors; the "
                f"stored ones have {self._dim}. Nothing was mixed: run `ragchat reembed` to rebuild them with it."
            )
        return normalise(vectors)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.embed_documents(texts)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return bundled_token_counter()(texts)

    def _checked(self, rows: Any, n: int) -> np.ndarray:
        vectors = np.asarray(rows, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != n or vectors.shape[1] == 0:
            raise EmbeddingError(f"{self.provider} model {self.model_name} returned no usable vectors")
        return vectors


class OllamaEmbeddings(_Remote):
    provider = "ollama"

    def __init__(self, host: str, model: str, *, dim: int | None = None, batch_size: int = 64, timeout_s: float = 60.0):
        import ollama

        super().__init__(model, dim=dim, batch_size=batch_size, timeout_s=timeout_s)
        self.host = host
        self.client = ollama.AsyncClient(host=host, timeout=httpx.Timeout(timeout_s, connect=5.0))

    async def _request(self, texts: list[str]) -> np.ndarray:
        from ollama import ResponseError

        try:
            response = await self.client.embed(model=self.model_name, input=texts)
        except (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError) as exc:
            raise EmbeddingError(
                f"Ollama is not reachable at {self.host} for embeddings (EMBED_PROVIDER=ollama). Start it with "
                "`ollama serve` or set OLLAMA_HOST."
            ) from exc
        except httpx.TimeoutException as exc:
            raise EmbeddingError(f"Ollama did not return embeddings within {self.timeout_s:g} s") from exc
        except ResponseError as exc:
            if exc.status_code == 404 or "not found" in str(exc.error).lower():
                raise EmbeddingError(
                    f"The embedding model '{self.model_name}' is not in Ollama. Pull it with "
                    f"`ollama pull {self.model_name}` (or set EMBED_MODEL)."
                ) from exc
            raise EmbeddingError(f"Ollama failed to embed: {exc.error}") from exc
        return self._checked(response.embeddings, len(texts))

    async def close(self) -> None:
        await self.client.close()


class OpenAIEmbeddings(_Remote):
    provider = "openai"

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        dim: int | None = None,
        batch_size: int = 64,
        timeout_s: float = 60.0,
    ):
        import openai

        super().__init__(model, dim=dim, batch_size=batch_size, timeout_s=timeout_s)
        self.base_url = base_url.rstrip("/")
        self.client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=api_key or "not-needed",
            timeout=openai.Timeout(timeout_s, connect=5.0),
            max_retries=1,
        )

    async def _request(self, texts: list[str]) -> np.ndarray:
        import openai

        try:
            response = await self.client.embeddings.create(model=self.model_name, input=texts, encoding_format="float")
        except openai.APITimeoutError as exc:
            raise EmbeddingError(f"{self.base_url} did not return embeddings within {self.timeout_s:g} s") from exc
        except openai.APIConnectionError as exc:
            raise EmbeddingError(
                f"The OpenAI-compatible server is not reachable at {self.base_url} for embeddings "
                "(EMBED_PROVIDER=openai). Start it or set OPENAI_BASE_URL."
            ) from exc
        except openai.AuthenticationError as exc:
            raise EmbeddingError(f"{self.base_url} rejected the API key for embeddings: set OPENAI_API_KEY.") from exc
        except openai.NotFoundError as exc:
            raise EmbeddingError(
                f"The embedding model '{self.model_name}' is not served at {self.base_url} (set EMBED_MODEL)."
            ) from exc
        except openai.APIError as exc:
            raise EmbeddingError(f"{self.base_url} failed to embed: {exc}") from exc
        rows = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
        return self._checked(rows, len(texts))

    async def close(self) -> None:
        await self.client.close()
