"""Listwise LLM rerank (`RERANK_METHOD=listwise`): one call over the first candidates, labelled [A], [B], ...

The window is `RERANK_LISTWISE_SIZE` candidates in retrieval order, fewer and shorter when the model's context
is smaller (`listwise_budget`: passages shrink to 200 characters first, then fewer are sent; when not even two
fit, nothing is scored and the status says why). With token probabilities the score of each passage is its
label's share of the first token's probability ("which passage best answers the query?"); without them (or
when no label is among the top tokens) the model is asked for a JSON ranking of the labels (first 1.0 down to
1/N, unlisted 0). Candidates after the window are not scored (`skipped`) and follow in retrieval order.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from ragchat.providers.llm.base import LLMBadResponse, LLMError, LLMProvider, SupportsLogprobs
from ragchat.providers.llm.replies import parse_reply
from ragchat.retrieval.rerank_graded import (
    LABELS,
    LISTWISE_SCHEMA,
    TOP_LOGPROBS,
    CacheKey,
    ListwiseRanking,
    Scoring,
    cap_text,
    label_probabilities,
    listwise_budget,
    listwise_messages,
    ranking_scores,
)


class ListwiseHost(Protocol):
    """What listwise scoring uses of the reranker (rerank.LLMReranker), without importing it."""

    llm: LLMProvider
    settings: Any

    def logprobs_unavailable(self, model: str) -> str | None: ...
    def _mark_no_logprobs(self, model: str, why: str) -> None: ...
    def _cache_put(self, key: CacheKey, score: float) -> None: ...
    def _get_semaphore(self) -> asyncio.Semaphore: ...


log = logging.getLogger(__name__)


async def _context_tokens(rr: ListwiseHost, model: str) -> int | None:
    try:
        return await asyncio.wait_for(rr.llm.context_window(model), 5.0)
    except Exception:  # unknown: the configured size
        return None


async def score_listwise(
    rr: ListwiseHost, model: str, query: str, texts: dict[CacheKey, str], known: dict[CacheKey, float]
) -> Scoring:
    """Scores for the window of `texts` (every candidate, in retrieval order); the cached `known` ones are used
    only when the whole window is cached (listwise scores are relative to the set)."""
    s = rr.settings
    query = cap_text(query, s.rerank_passage_chars)
    window = await _context_tokens(rr, model)
    budget = listwise_budget(s.rerank_listwise_size, len(query), s.rerank_passage_chars, window)
    items = list(texts.items())
    if budget.size == 0:
        note = f"The model's context ({window} tokens) cannot hold two passages: listwise rerank skipped."
        return Scoring({}, set(), "listwise", note)
    head, rest = items[: budget.size], items[budget.size :]
    if all(key in known for key, _ in head):
        return Scoring({key: known[key] for key, _ in head}, {key for key, _ in rest})
    labels = LABELS[: len(head)]
    passages = [text for _, text in head]
    deadline = max(0.0, s.rerank_deadline_s)
    method, note = "listwise", None
    probs: dict[str, float] | None = None
    async with rr._get_semaphore():
        why = rr.logprobs_unavailable(model)
        if why is None:
            assert isinstance(rr.llm, SupportsLogprobs)
            messages = listwise_messages(query, passages, budget.passage_chars, json_reply=False)
            try:
                reply = await asyncio.wait_for(
                    rr.llm.complete_logprobs(
                        model=model, messages=messages, timeout_s=deadline, top_logprobs=TOP_LOGPROBS, max_tokens=1
                    ),
                    deadline,
                )
                if reply.tokens is None:
                    why = reply.problem or "the server returned no token probabilities"
                    rr._mark_no_logprobs(model, why)
                else:
                    probs = label_probabilities(reply.tokens, labels)
                    if probs is None:
                        note = "The model answered with no passage label; the passages were ranked by a JSON reply."
            except TimeoutError:
                return Scoring({}, set(), method, None)
            except LLMError as exc:
                if not isinstance(exc, LLMBadResponse) and exc.code != "llm_error":
                    log.debug("listwise rerank call failed: %r", exc)
                    return Scoring({}, set(), method, None)
                why = exc.message[:160]
                rr._mark_no_logprobs(model, why)
        if probs is None:
            method = "listwise-json"
            if why is not None:
                note = f"Graded rerank is not available ({why}): the passages were ranked by a JSON reply."
            messages = listwise_messages(query, passages, budget.passage_chars, json_reply=True)
            try:
                content = await asyncio.wait_for(
                    rr.llm.complete_json(
                        model=model, messages=messages, schema=LISTWISE_SCHEMA, timeout_s=deadline, max_tokens=120
                    ),
                    deadline,
                )
            except Exception as exc:
                log.debug("listwise rerank call failed: %r", exc)
                return Scoring({}, set(), method, note)
            ranking = parse_reply(content, ListwiseRanking)
            probs = ranking_scores(ranking.ranking, labels) if ranking is not None else None
            if probs is None:
                log.debug("listwise reply rejected: %r", (content or "")[:200])
                return Scoring({}, set(), method, note)
    scores: dict[CacheKey, float] = {}
    for label, (key, _) in zip(labels, head, strict=True):
        scores[key] = probs[label]
        rr._cache_put(key, probs[label])
    return Scoring(scores, {key for key, _ in rest}, method, note)
