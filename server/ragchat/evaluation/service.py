"""A generated evaluation of the caller's own library, end to end: sample, generate, measure, keep the run.

Shared by `ragchat eval --generate N` and `POST /api/eval/runs` (which runs it in the background and reports
progress through the stored run)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ragchat.core.errors import BadRequest, ServiceUnavailable
from ragchat.core.ownership import Corpus
from ragchat.core.principal import Principal
from ragchat.core.search import SearchService
from ragchat.db.pool import Pool
from ragchat.evaluation import store
from ragchat.evaluation.generate import generate_questions, sample_chunks
from ragchat.evaluation.runner import Config, Query, check_ingest, configs_for, measure
from ragchat.providers.llm.base import LLMProvider
from ragchat.settings import LLMSettings, RetrievalSettings

log = logging.getLogger(__name__)

__all__ = ["EvalRuntime", "GeneratedEval", "run_generated", "start_generated"]

MODES: tuple[str, ...] = ("vector", "keyword", "hybrid")
Progress = Callable[[dict[str, Any]], None]


class EvalSettings(Protocol):
    """The settings groups an evaluation reads (ragchat.settings.Settings fits)."""

    @property
    def llm(self) -> LLMSettings: ...

    @property
    def retrieval(self) -> RetrievalSettings: ...


@runtime_checkable
class EvalRuntime(Protocol):
    """What an evaluation needs from the composition root (ragchat.runtime.Runtime fits)."""

    @property
    def settings(self) -> EvalSettings: ...

    pool: Pool
    llm: LLMProvider

    @property
    def searcher(self) -> SearchService: ...

    @property
    def corpus(self) -> Corpus: ...

    def spawn(self, make: Callable[[], Awaitable[Any]], name: str) -> asyncio.Task[Any]: ...


@dataclass(frozen=True)
class GeneratedEval:
    n: int
    rerank: Sequence[bool] = (False, True)
    modes: Sequence[str] = MODES
    category_key: str | None = None
    seed: str = "ragchat"

    def config(self) -> dict[str, Any]:
        return {
            "kind": "generated",
            "n": self.n,
            "modes": list(self.modes),
            "rerank": list(self.rerank),
            "category_key": self.category_key,
            "seed": self.seed,
        }


async def run_generated(
    rt: EvalRuntime,
    principal: Principal,
    spec: GeneratedEval,
    *,
    configs: Sequence[Config] | None = None,
    on_progress: Progress | None = None,
) -> tuple[dict[str, Any], str]:
    """Results (as stored) and notes of a generated evaluation over `principal`'s ready documents."""
    report = on_progress or (lambda _p: None)
    chunks = await sample_chunks(rt.corpus, principal.user_id, spec.n, spec.seed)
    if not chunks:
        raise BadRequest("no ingested documents to generate questions from: add documents first")
    report({"stage": "generating", "done": 0, "total": len(chunks)})
    llm = rt.settings.llm
    generation = await generate_questions(
        rt.llm,
        llm.chat_model,
        chunks,
        timeout_s=llm.llm_timeout_s,
        concurrency=rt.settings.retrieval.rerank_concurrency,
        on_progress=lambda done, total: report({"stage": "generating", "done": done, "total": total}),
    )
    if not generation.questions:
        raise ServiceUnavailable(
            f"the LLM ({llm.chat_model}) gave no valid question for any of the {len(chunks)} sampled passages "
            "(after one retry each): check that the model is running and can answer in JSON"
        )
    queries = [
        Query(
            q.qid,
            q.text,
            {str(q.chunk.document_id): 1},
            chunk=str(q.chunk.chunk_id),
            category=_category(q.chunk.metadata, spec.category_key),
        )
        for q in generation.questions
    ]
    chosen = (
        list(configs)
        if configs is not None
        else configs_for(rt.searcher, rt.settings.retrieval, spec.modes, spec.rerank)
    )
    measured = await measure(
        chosen,
        queries,
        principal,
        on_progress=lambda done, total: report({"stage": "searching", "done": done, "total": total}),
    )
    results = {
        "dataset": "library",
        "questions": len(queries),
        "sampled": generation.sampled,
        "skipped": generation.skipped,
        # every question asked (at most 500), so the page can list them with the document each came from
        "examples": [{"question": q.text, "document": q.chunk.title} for q in generation.questions],
        "configs": {name: m.to_json() for name, m in measured.items()},
    }
    notes = [f"{len(queries)} questions from {generation.sampled} sampled chunks"]
    if generation.skipped:
        notes.append(f"{generation.skipped} chunks skipped: the LLM's reply stayed invalid after a retry")
    ingest = await check_ingest(rt.corpus, principal.user_id)
    if not ingest.complete:
        notes.append(f"library not fully ingested ({ingest.failed} failed, {ingest.pending} not done)")
    return results, "; ".join(notes)


def _category(metadata: dict[str, Any], key: str | None) -> str | None:
    if not key:
        return None
    value = metadata.get(key)
    if value is None or isinstance(value, dict | list):
        return "(none)"
    return str(value)[:100]


async def start_generated(rt: EvalRuntime, principal: Principal, spec: GeneratedEval) -> int:
    """Store a `running` run and fill it in the background; returns its id at once."""
    if not 1 <= spec.n <= 500:
        raise BadRequest(f"n must be between 1 and 500, got {spec.n}")
    run_id = await store.create_run(rt.pool, principal.user_id, "library", spec.config(), status="running")

    async def work() -> None:
        latest: dict[str, Any] = {"stage": "sampling", "done": 0, "total": spec.n}
        written: dict[str, Any] = {}

        async def flush() -> None:
            while True:
                if latest != written:
                    written.clear()
                    written.update(latest)
                    await store.set_progress(rt.pool, run_id, dict(written))
                await asyncio.sleep(0.3)

        def progress(p: dict[str, Any]) -> None:
            latest.clear()
            latest.update(p)

        async def stop_flushing() -> None:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await flusher

        flusher = asyncio.create_task(flush())
        started = time.perf_counter()
        try:
            results, notes = await run_generated(rt, principal, spec, on_progress=progress)
        except asyncio.CancelledError:  # the server stops: the run must not stay `running` forever
            await stop_flushing()
            with contextlib.suppress(Exception):
                await asyncio.shield(
                    store.finish_run(rt.pool, run_id, status="failed", notes="interrupted: the server stopped")
                )
            raise
        except Exception as exc:
            await stop_flushing()
            message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            log.warning("evaluation run %s failed: %s", run_id, message)
            await store.finish_run(rt.pool, run_id, status="failed", notes=str(message)[:1000])
            return
        finally:
            await stop_flushing()
        results["seconds"] = round(time.perf_counter() - started, 2)
        await store.finish_run(rt.pool, run_id, status="done", results=results, notes=notes)

    rt.spawn(work, f"eval-run-{run_id}")
    return run_id
