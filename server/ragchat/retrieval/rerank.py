"""LLM reranker: relevance scores for the fused candidates from the LLM provider, in parallel, validated.

`LLMReranker.rerank(query, candidates, limit)` scores the candidates, sorts them by score and slices to `limit`.
The Searcher calls it when `RERANK_ENABLED=true` (or `rerank=true` per request), after fetching
`limit × RERANK_CANDIDATES_FACTOR` candidates. `RERANK_METHOD` says how (prompts and label reading in
rerank_graded.py):

* `json` (default): one `complete_json` call per candidate, `{"score": <0..1>}` validated with `RerankScore`
  (cleaned of `<think>` blocks, fences and prose; out-of-range, non-numeric or missing → invalid).
* `logprobs`: one `complete_logprobs` call per candidate (a one-token "Yes"/"No" reply with the top 20 token
  log-probabilities); score = P(yes) / (P(yes) + P(no)). A provider that returns no log-probabilities, or
  unreadable ones, is scored with `json` instead, and remembered for `LOGPROBS_RETRY_S` per model, so later
  calls go to `json` directly; a reply whose top tokens hold neither label is scored with `json` too. The
  status's `method` and `warning` say so.
* `listwise`: one call over the first `RERANK_LISTWISE_SIZE` candidates (fewer, and shorter, when the model's
  context is smaller: `listwise_budget`); the later candidates follow in retrieval order (`skipped`).

Cost: passages are cut to `RERANK_PASSAGE_CHARS` around the sentences sharing the query's words; the prompt
starts with what every call shares (instructions, query), which llama.cpp's prompt cache (`cache_prompt`)
evaluates once per slot; calls run in fused order, at most `RERANK_CONCURRENCY` at a time per search and
across searches (one `asyncio.Semaphore`; set it to the server's slots, e.g. `OLLAMA_NUM_PARALLEL` or
llama.cpp's `--parallel`: more only queues inside the server, against the per-call timeout). Early stop
(`RERANK_EARLY_STOP`): once the first `limit` candidates in fused order before the next unscored one all hold
the best possible score (1.0), no later candidate can displace them (ties keep the retrieval order), so the
rest are not scored (`skipped`) and follow in retrieval order.

Failures and time limits: a call that fails or gets no reply within `RERANK_TIMEOUT_S` leaves its candidate
unscored, as does the whole rerank's deadline `RERANK_DEADLINE_S` (pending calls are cancelled). The scored
candidates come first, by their score blended with their retrieval position (`RERANK_RETRIEVAL_WEIGHT`, `blend`;
stable: ties keep the retrieval order); the unscored and skipped ones follow
in retrieval order with their retrieval score (never a made-up 0 % relevance). `rerank_with_status` says how
many were scored and skipped; the Searcher turns that into the response's `rerank` status (ok / partial /
failed, with a warning).

Cache: scores per (model and method, query, chunk content hash), a bounded LRU; failures are not cached;
identical passages are scored once; listwise scores are reused only when the whole window is cached. The
passage is untrusted text in the prompt: it can talk the model into a high score, which only reorders the
caller's own documents (a quality issue, not an access-control one).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass

from ragchat.core.search import ChunkHit
from ragchat.providers.llm.base import LLMBadResponse, LLMError, LLMProvider, SupportsLogprobs
from ragchat.retrieval.rerank_graded import (
    RERANK_SCHEMA,
    TOP_LOGPROBS,
    CacheKey,
    RerankScore,
    Scoring,
    build_messages,
    cap_text,
    parse_score,
    yes_no_messages,
    yes_probability,
)
from ragchat.retrieval.rerank_listwise import score_listwise
from ragchat.settings import RetrievalSettings

log = logging.getLogger(__name__)

DEFAULT_CACHE_SIZE = 10_000
BEST_SCORE = 1.0  # no candidate scores above it: the early stop's bound
LOGPROBS_RETRY_S = 600.0  # a model found without logprobs is asked again (the server may be upgraded) after this

__all__ = [
    "RERANK_SCHEMA",
    "BaseReranker",
    "CacheKey",
    "LLMReranker",
    "RerankScore",
    "Reranked",
    "build_messages",
    "cap_text",
    "parse_score",
]


@dataclass(frozen=True)
class Reranked:
    """The reranked hits (at most `limit`), how many of the `candidates` the LLM scored, and how many it did not
    need to (`skipped`: the early stop, or beyond the listwise window)."""

    hits: list[ChunkHit]
    scored: int
    candidates: int
    scorer: str = "the language model"  # who scored, for the status warning
    skipped: int = 0
    method: str | None = None  # json | logprobs | logprobs+json | listwise | listwise-json | None (cache, http)
    note: str | None = None  # for people: why a graded method fell back


def _content_key(hit: ChunkHit) -> str:
    return hit.content_hash or hashlib.sha256(hit.content.encode()).hexdigest()


class BaseReranker:
    """Cache, ordering and status shared by the rerankers; subclasses score in `_score_all` (or `_score`)."""

    def __init__(self, settings: RetrievalSettings, model: str, *, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        self.settings = settings
        self.model = model  # RERANK_MODEL, else CHAT_MODEL (LLMSettings.effective_rerank_model)
        self.cache_size = max(0, cache_size)
        self._cache: OrderedDict[CacheKey, float] = OrderedDict()
        self._semaphore: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    # ---- public ----------------------------------------------------------------------------------
    async def rerank(self, query: str, candidates: list[ChunkHit], limit: int) -> list[ChunkHit]:
        """Candidates sorted by rerank score (descending, stable), at most `limit`; see the module docstring."""
        return (await self.rerank_with_status(query, candidates, limit)).hits

    async def rerank_with_status(self, query: str, candidates: list[ChunkHit], limit: int) -> Reranked:
        """`rerank`'s hits, and how many of the candidates the LLM scored."""
        if not candidates or limit <= 0:
            return Reranked([], 0, len(candidates))
        name = self.cache_name
        keys = [(name, query, _content_key(hit)) for hit in candidates]
        scores: dict[CacheKey, float] = {}
        todo: dict[CacheKey, str] = {}
        for key, hit in zip(keys, candidates, strict=True):
            cached = self._cache_get(key)
            if cached is not None:
                scores[key] = cached
            elif key not in todo:
                todo[key] = hit.content
        outcome = Scoring({})
        if todo:
            texts = {k: hit.content for k, hit in zip(keys, candidates, strict=True)}
            outcome = await self._score(self.model_name, query, todo, keys, dict(scores), limit, texts)
            scores.update(outcome.scores)

        weight = self.settings.rerank_retrieval_weight
        scored = [
            (blend(scores[k], i, limit, weight), scores[k], hit)
            for i, (k, hit) in enumerate(zip(keys, candidates, strict=True))
            if k in scores
        ]
        scored.sort(key=lambda row: -row[0])  # stable: ties keep the retrieval order
        out = [
            hit.model_copy(update={"score": b, "trace": hit.trace.model_copy(update={"rerank_score": s})})
            for b, s, hit in scored
        ]
        out.extend(hit for k, hit in zip(keys, candidates, strict=True) if k not in scores)
        skipped = sum(1 for k in keys if k in outcome.skipped and k not in scores)
        return Reranked(out[:limit], len(scored), len(candidates), self.scorer, skipped, outcome.method, outcome.note)

    scorer = "the language model"

    @property
    def model_name(self) -> str:
        """The model the calls name."""
        return self.model

    @property
    def cache_name(self) -> str:
        """What the cache keys scores by (the model, and how it was asked)."""
        return self.model_name

    async def _score(
        self,
        model: str,
        query: str,
        todo: dict[CacheKey, str],
        keys: list[CacheKey],
        known: dict[CacheKey, float],
        limit: int,
        texts: dict[CacheKey, str],
    ) -> Scoring:
        """Score `todo` (unique keys in retrieval order); `keys` are every candidate's, `known` the cached scores,
        `texts` every candidate's passage."""
        return Scoring(await self._score_all(model, query, todo))

    async def _score_all(self, model: str, query: str, todo: dict[CacheKey, str]) -> dict[CacheKey, float]:
        raise NotImplementedError

    async def close(self) -> None:
        """Release what the reranker holds (nothing for the LLM one: the LLM provider is closed by its owner)."""

    # ---- helpers ---------------------------------------------------------------------------------
    def _get_semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._semaphore[0] is not loop:
            self._semaphore = (loop, asyncio.Semaphore(max(1, self.settings.rerank_concurrency)))
        return self._semaphore[1]

    def _cache_get(self, key: CacheKey) -> float | None:
        score = self._cache.get(key)
        if score is not None:
            self._cache.move_to_end(key)
        return score

    def _cache_put(self, key: CacheKey, score: float) -> None:
        if self.cache_size == 0:
            return
        self._cache[key] = score
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


def blend(score: float, position: int, limit: int, weight: float) -> float:
    """The order's key: (1 − weight) × the rerank score + weight × the retrieval position's prior, which falls
    linearly from 1 (the first candidate) to 0 at position `limit` and stays 0 below it. So the retrieval order
    breaks the scorer's near-ties among the top, and a later candidate needs a clearly higher score to pass an
    earlier one; weight 0 is the scorer's order alone. The prior never rises down the list, so the early stop
    stays sound."""
    prior = max(0.0, 1.0 - position / max(1, limit))
    return score if weight == 0 else (1.0 - weight) * score + weight * prior


def settled(keys: list[CacheKey], scores: dict[CacheKey, float], upto: int, limit: int) -> bool:
    """Do the candidates before position `upto` hold `limit` best-possible scores? Then nothing from `upto` on
    can enter the top `limit` (it scores at most that, and ties keep the retrieval order)."""
    return sum(1 for k in keys[:upto] if scores.get(k, -1.0) >= BEST_SCORE) >= limit


class LLMReranker(BaseReranker):
    """Reranks search hits with a chat model through any `LLMProvider`."""

    def __init__(
        self, llm: LLMProvider, settings: RetrievalSettings, model: str, *, cache_size: int = DEFAULT_CACHE_SIZE
    ) -> None:
        super().__init__(settings, model, cache_size=cache_size)
        self.llm = llm
        self._no_logprobs: dict[str, tuple[float, str]] = {}  # model -> (when found, why)

    @property
    def cache_name(self) -> str:
        return f"{self.model_name}|{self.settings.rerank_method}"

    # ---- logprobs availability -------------------------------------------------------------------
    def logprobs_unavailable(self, model: str) -> str | None:
        """Why `model` is scored without logprobs (remembered for LOGPROBS_RETRY_S), or None."""
        if not isinstance(self.llm, SupportsLogprobs):
            return "the provider cannot return token probabilities"
        seen = self._no_logprobs.get(model)
        if seen is None or time.monotonic() - seen[0] > LOGPROBS_RETRY_S:
            return None
        return seen[1]

    def _mark_no_logprobs(self, model: str, why: str) -> None:
        if model not in self._no_logprobs or self.logprobs_unavailable(model) is None:
            log.warning("rerank: %s gives no usable token probabilities (%s): scoring with JSON", model, why)
        self._no_logprobs[model] = (time.monotonic(), why)

    # ---- scoring ---------------------------------------------------------------------------------
    async def _score(
        self,
        model: str,
        query: str,
        todo: dict[CacheKey, str],
        keys: list[CacheKey],
        known: dict[CacheKey, float],
        limit: int,
        texts: dict[CacheKey, str],
    ) -> Scoring:
        if self.settings.rerank_method == "listwise":
            return await score_listwise(self, model, query, texts, known)
        return await self._score_pointwise(model, query, todo, keys, known, limit)

    async def _score_pointwise(
        self,
        model: str,
        query: str,
        todo: dict[CacheKey, str],
        keys: list[CacheKey],
        known: dict[CacheKey, float],
        limit: int,
    ) -> Scoring:
        """Score in retrieval order, at most RERANK_CONCURRENCY at a time; stop launching once the top is settled;
        failed ones and those still unscored at the deadline are left out."""
        semaphore = self._get_semaphore()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, self.settings.rerank_deadline_s)
        width = max(1, self.settings.rerank_concurrency)
        position = {}
        for i, key in enumerate(keys):
            position.setdefault(key, i)
        queue = list(todo)
        scores = dict(known)
        results: dict[CacheKey, float] = {}
        how: dict[str, int] = {}
        running: dict[asyncio.Task[tuple[float | None, str]], CacheKey] = {}
        skipped: set[CacheKey] = set()

        async def bounded(passage: str) -> tuple[float | None, str]:
            async with semaphore:
                return await self._score_one(model, query, passage)

        failed = 0
        try:
            while queue or running:
                while queue and len(running) < width:
                    if self.settings.rerank_early_stop and settled(keys, scores, position[queue[0]], limit):
                        skipped.update(queue)
                        queue.clear()
                        break
                    key = queue.pop(0)
                    running[asyncio.create_task(bounded(todo[key]))] = key
                remaining = deadline - loop.time()
                if not running or remaining <= 0:
                    break
                done, _ = await asyncio.wait(running, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    key = running.pop(task)
                    score, used = task.result()
                    how[used] = how.get(used, 0) + 1
                    if score is None:
                        failed += 1
                        continue
                    scores[key] = results[key] = score
                    self._cache_put(key, score)
        finally:
            for task in running:
                task.cancel()  # also runs if our caller is cancelled
            await asyncio.gather(*running, return_exceptions=True)
        if unscored := len(running) + len(queue):
            log.warning(
                "rerank deadline (%.1f s) passed: %d of %d candidates unscored, kept in retrieval order",
                self.settings.rerank_deadline_s,
                unscored,
                len(todo),
            )
        if failed:
            log.warning("rerank: %d of %d candidates failed, kept unscored in retrieval order", failed, len(todo))
        method, note = self._method_note(model, how)
        return Scoring(results, skipped, method, note)

    def _method_note(self, model: str, how: dict[str, int]) -> tuple[str | None, str | None]:
        graded, fallback = how.get("logprobs", 0), how.get("json", 0) + how.get("outside", 0)
        if self.settings.rerank_method != "logprobs":
            return ("json" if how else None), None
        if not fallback:
            return ("logprobs" if graded else None), None
        method = "logprobs+json" if graded else "json"
        why = self.logprobs_unavailable(model)
        if why is not None:
            return method, f"Graded rerank is not available ({why}): passages were scored with the JSON score."
        outside = how.get("outside", 0)
        return method, (
            f"The model answered outside Yes/No for {outside} of {graded + fallback} passages; those were scored "
            "with the JSON score."
        )

    async def _score_one(self, model: str, query: str, passage: str) -> tuple[float | None, str]:
        """One candidate's score and how it was obtained (logprobs, json, or outside: the reply held neither label
        and JSON scored it); None when the call fails or times out."""
        how = "json"
        if self.settings.rerank_method == "logprobs" and self.logprobs_unavailable(model) is None:
            graded = await self._graded(model, query, passage)
            if isinstance(graded, float) or graded is None:
                return graded, "logprobs"
            how = "outside" if graded == "outside" else "json"
        return await self._json_score(model, query, passage), how

    async def _graded(self, model: str, query: str, passage: str) -> float | str | None:
        """P(yes) for the passage; None when the call failed; "unavailable" (remembered) or "outside" when JSON
        has to score it."""
        assert isinstance(self.llm, SupportsLogprobs)
        messages = yes_no_messages(query, passage, self.settings.rerank_passage_chars)
        timeout = self.settings.rerank_timeout_s
        try:
            reply = await asyncio.wait_for(
                self.llm.complete_logprobs(
                    model=model, messages=messages, timeout_s=timeout, top_logprobs=TOP_LOGPROBS, max_tokens=1
                ),
                timeout,
            )
        except TimeoutError:
            log.debug("rerank call timed out after %.1f s", timeout)
            return None
        except LLMBadResponse as exc:  # unreadable (Ollama's client rejects malformed logprobs here)
            self._mark_no_logprobs(model, f"unreadable answer: {exc.message[:120]}")
            return "unavailable"
        except LLMError as exc:
            if exc.code == "llm_error":  # the server refused the request as such (e.g. `logprobs` unsupported)
                self._mark_no_logprobs(model, exc.message[:160])
                return "unavailable"
            log.debug("rerank call failed: %r", exc)
            return None
        except Exception as exc:
            log.debug("rerank call failed: %r", exc)
            return None
        if reply.tokens is None:
            self._mark_no_logprobs(model, reply.problem or "the server returned no token probabilities")
            return "unavailable"
        score = yes_probability(reply.tokens)
        if score is None:
            log.debug("rerank reply outside the labels: %r", reply.content[:40])
            return "outside"
        return score

    async def _json_score(self, model: str, query: str, passage: str) -> float | None:
        """One candidate's JSON score, or None when the call fails, times out or answers invalid JSON."""
        messages = build_messages(query, passage, self.settings.rerank_passage_chars)
        timeout = self.settings.rerank_timeout_s
        try:
            content = await asyncio.wait_for(
                self.llm.complete_json(model=model, messages=messages, schema=RERANK_SCHEMA, timeout_s=timeout),
                timeout,
            )
        except TimeoutError:
            log.debug("rerank call timed out after %.1f s", timeout)
            return None
        except Exception as exc:  # any client/server/transport error: unscored
            log.debug("rerank call failed: %r", exc)
            return None
        score = parse_score(content)
        if score is None:
            log.debug("rerank reply rejected: %r", (content or "")[:200])
        return score
