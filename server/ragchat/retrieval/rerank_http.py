"""Cross-encoder reranker behind an HTTP API (`RERANK_PROVIDER=http`), and `build_reranker` for either kind.

`HTTPReranker` sends the candidates in batches of `RERANK_BATCH_SIZE` to the server at `RERANK_URL`
(`RERANK_API=tei` or `cohere`; see providers/rerank/http.py), at most `RERANK_CONCURRENCY` batches at once,
each bounded by `RERANK_TIMEOUT_S` and the whole rerank by `RERANK_DEADLINE_S`. The ordering, cache and honest
status are the LLM reranker's (retrieval/rerank.py): a batch that fails (server down, HTTP error, unreadable
reply, timeout) leaves its candidates unscored; a reply with fewer scores than passages scores the ones it has
(partial); scores outside 0..1 are read as logits (see the provider); non-numbers leave their candidate
unscored. None scored: the retrieval order, and the response's rerank status says `failed`.
"""

from __future__ import annotations

import asyncio
import logging

from ragchat.providers.llm.base import LLMProvider
from ragchat.providers.rerank.http import HTTPRerankClient, RerankServerError
from ragchat.retrieval.rerank import BaseReranker, CacheKey, LLMReranker, cap_text
from ragchat.settings import RetrievalSettings

log = logging.getLogger(__name__)


class HTTPReranker(BaseReranker):
    """Reranks with a cross-encoder server through `HTTPRerankClient`."""

    scorer = "the rerank server"

    def __init__(self, client: HTTPRerankClient, settings: RetrievalSettings) -> None:
        super().__init__(settings, client.model or "")
        self.client = client

    @property
    def model_name(self) -> str:
        return f"http:{self.settings.rerank_url}:{self.model}"

    async def _score_all(self, model: str, query: str, todo: dict[CacheKey, str]) -> dict[CacheKey, float]:
        semaphore = self._get_semaphore()
        size = max(1, self.settings.rerank_batch_size)
        keys = list(todo)
        batches = [keys[i : i + size] for i in range(0, len(keys), size)]
        chars = self.settings.rerank_passage_chars
        timeout = self.settings.rerank_timeout_s
        capped_query = cap_text(query, chars)

        async def one(batch: list[CacheKey]) -> list[float | None]:
            async with semaphore:
                texts = [cap_text(todo[k], chars) for k in batch]
                return await asyncio.wait_for(self.client.score_batch(capped_query, texts, timeout), timeout)

        tasks = [asyncio.create_task(one(batch)) for batch in batches]
        try:
            await asyncio.wait(tasks, timeout=max(0.0, self.settings.rerank_deadline_s))
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        results: dict[CacheKey, float] = {}
        for batch, task in zip(batches, tasks, strict=True):
            if task.cancelled():
                deadline = self.settings.rerank_deadline_s
                log.warning("rerank deadline (%.1f s) passed: %d candidates unscored", deadline, len(batch))
                continue
            exc = task.exception()
            if exc is not None:
                reason = "timed out" if isinstance(exc, TimeoutError) else str(exc)
                if not isinstance(exc, TimeoutError | RerankServerError):
                    reason = repr(exc)
                log.warning("rerank batch of %d failed (%s), kept unscored in retrieval order", len(batch), reason)
                continue
            scores = task.result()
            missing = sum(s is None for s in scores)
            if missing:
                log.warning("rerank server scored %d of %d passages", len(batch) - missing, len(batch))
            for key, score in zip(batch, scores, strict=True):
                if score is not None:
                    results[key] = score
                    self._cache_put(key, score)
        return results

    async def close(self) -> None:
        await self.client.close()


def build_reranker(
    llm: LLMProvider, settings: RetrievalSettings, *, rerank_model: str | None, chat_model: str
) -> BaseReranker:
    """The reranker `RERANK_PROVIDER` names: the LLM one (default; RERANK_MODEL, else the chat model) or a
    cross-encoder server over HTTP (RERANK_MODEL named to it when set)."""
    if settings.rerank_provider == "http":
        if not settings.rerank_url:
            raise ValueError("RERANK_PROVIDER=http needs RERANK_URL (e.g. http://127.0.0.1:8080)")
        key = settings.rerank_api_key.get_secret_value() if settings.rerank_api_key else None
        client = HTTPRerankClient(settings.rerank_url, settings.rerank_api, model=rerank_model, api_key=key)
        return HTTPReranker(client, settings)
    return LLMReranker(llm, settings, rerank_model or chat_model)
