"""A client for cross-encoder rerank servers: one call scores a batch of passages against a query.

Two wire dialects (`RERANK_API`), the only places the servers differ:

* `tei` — Hugging Face text-embeddings-inference `POST /rerank`
  `{"query", "texts", "raw_scores": false}` → `[{"index", "score"}, …]`.
* `cohere` — `POST /v1/rerank` as served by Infinity, llama.cpp (`--reranking`), Jina and Cohere
  `{"model", "query", "documents", "top_n"}` → `{"results": [{"index", "relevance_score"}, …]}`.

`score_batch` returns one entry per passage, in the order given: the server's score, or None for a passage the
server did not score (fewer results than passages, an index out of range or repeated, a score that is not a
finite number). Scores are relevance in 0..1: when a reply holds finite scores outside 0..1 (llama.cpp and
`raw_scores` servers answer logits), the whole reply is mapped through the logistic function, which keeps its
order. Transport errors, HTTP errors and replies of the wrong shape raise `RerankServerError`.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import httpx

RerankApi = Literal["tei", "cohere"]
PATHS: dict[str, str] = {"tei": "/rerank", "cohere": "/v1/rerank"}
MAX_REPLY_BYTES = 4 * 1024 * 1024


class RerankServerError(Exception):
    """The rerank server could not be reached, answered an error, or answered something unreadable."""


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def parse_results(api: RerankApi, reply: Any, count: int) -> list[float | None]:
    """One score (relevance 0..1) or None per passage, from a server's parsed JSON reply."""
    if api == "tei":
        items, key = reply, "score"
    else:
        items, key = reply.get("results") if isinstance(reply, dict) else None, "relevance_score"
    if not isinstance(items, list):
        raise RerankServerError(f"rerank server answered no result list ({type(reply).__name__})")
    scores: list[float | None] = [None] * count
    for item in items:
        if not isinstance(item, dict):
            continue
        index = item.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            continue
        if scores[index] is not None:
            scores[index] = None  # a repeated index: neither answer is trusted
            continue
        scores[index] = _number(item.get(key))
    if any(s is not None and not 0.0 <= s <= 1.0 for s in scores):
        scores = [None if s is None else _sigmoid(s) for s in scores]
    return scores


class HTTPRerankClient:
    """One pooled `httpx.AsyncClient` to the rerank server at `base_url`."""

    def __init__(self, base_url: str, api: RerankApi, *, model: str | None = None, api_key: str | None = None) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.api: RerankApi = api
        self.model = model
        self._url = base_url.rstrip("/") + PATHS[api]
        if api == "cohere" and base_url.rstrip("/").endswith("/v1"):
            self._url = base_url.rstrip("/") + "/rerank"
        self._client = httpx.AsyncClient(headers=headers, limits=httpx.Limits(max_connections=16))

    def body(self, query: str, texts: list[str]) -> dict[str, Any]:
        if self.api == "tei":
            return {"query": query, "texts": texts, "raw_scores": False, "truncate": True}
        body: dict[str, Any] = {"query": query, "documents": texts, "top_n": len(texts), "return_documents": False}
        if self.model:
            body["model"] = self.model
        return body

    async def score_batch(self, query: str, texts: list[str], timeout_s: float) -> list[float | None]:
        """Scores for `texts` (see the module docstring); raises `RerankServerError`."""
        try:
            response = await self._client.post(self._url, json=self.body(query, texts), timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise RerankServerError(f"rerank server unreachable: {exc!r}") from exc
        if response.status_code != 200:
            raise RerankServerError(f"rerank server answered HTTP {response.status_code}: {response.text[:200]}")
        if len(response.content) > MAX_REPLY_BYTES:
            raise RerankServerError("rerank server reply too large")
        try:
            reply = response.json()
        except ValueError as exc:
            raise RerankServerError("rerank server answered invalid JSON") from exc
        return parse_results(self.api, reply, len(texts))

    async def close(self) -> None:
        await self._client.aclose()
