"""In-process fakes of cross-encoder rerank servers, one per wire dialect, over real HTTP (for tests).

`FakeRerank(dialect)` serves `tei` (`POST /rerank`, `{query, texts}` → `[{index, score}]`), `cohere`
(`POST /v1/rerank`, `{query, documents, top_n}` → `{results: [{index, relevance_score}]}`, as Infinity, Jina and
Cohere answer), or `llamacpp` (the same path and shape, with raw logits as scores, as llama.cpp `--reranking`
answers). A passage's score is the share of the query's words it contains (or `scorer(query, text)`);
knobs: `latency` (seconds before answering), `status` (an HTTP error), `drop` (answer only the first N results),
`override` (a fixed score, e.g. 7.5 or "high", for every result).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable
from typing import Any

from tests.fakes.script import Receive, RequestRecord, ScriptedServer, Send

PATHS = {"tei": "/rerank", "cohere": "/v1/rerank", "llamacpp": "/v1/rerank"}
_WORD = re.compile(r"\w+")


def overlap(query: str, text: str) -> float:
    """Share of the query's distinct words found in `text`, 0..1."""
    q = {w.lower() for w in _WORD.findall(query)}
    t = {w.lower() for w in _WORD.findall(text)}
    return len(q & t) / len(q) if q else 0.0


class FakeRerank(ScriptedServer):
    label = "fake rerank"

    def __init__(self, dialect: str = "cohere") -> None:
        self.dialect = dialect
        super().__init__()

    def _set_defaults(self) -> None:
        super()._set_defaults()
        self.scorer: Callable[[str, str], float] = overlap
        self.status: int | None = None
        self.drop: int | None = None
        self.override: Any = None

    @property
    def rerank_requests(self) -> list[RequestRecord]:
        return [r for r in self.requests if r.path == PATHS[self.dialect]]

    async def _route(self, send: Send, receive: Receive, rec: RequestRecord, gen: int) -> None:
        if rec.method != "POST" or rec.path != PATHS[self.dialect]:
            await self._send_json(send, rec, 404, {"error": "not found"})
            return
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        if self.status is not None:
            await self._send_json(send, rec, self.status, {"error": "scripted error"})
            return
        body = rec.body if isinstance(rec.body, dict) else {}
        texts = body.get("texts" if self.dialect == "tei" else "documents")
        query = body.get("query")
        if not isinstance(texts, list) or not isinstance(query, str):
            await self._send_json(send, rec, 422, {"error": "query and texts/documents required"})
            return
        scored = []
        for i, text in enumerate(texts):
            score: Any = self.scorer(query, str(text))
            if self.dialect == "llamacpp" and 0 <= score <= 1:
                score = math.log(score + 1e-3) - math.log(1 - score + 1e-3)  # a logit, like llama.cpp's raw score
            if self.override is not None:
                score = self.override
            scored.append((i, score))
        scored.sort(key=lambda p: -p[1] if isinstance(p[1], int | float) else 0)
        if self.drop is not None:
            scored = scored[: self.drop]
        if self.dialect == "tei":
            await self._send_json(send, rec, 200, [{"index": i, "score": s} for i, s in scored])
        else:
            results = [{"index": i, "relevance_score": s} for i, s in scored]
            await self._send_json(send, rec, 200, {"model": body.get("model"), "object": "list", "results": results})
