"""`ragchat eval`: ingest a BEIR corpus into its own owner, run every query per mode, score the runs."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

from server.core.principal import Principal
from server.core.search import SearchService
from server.db.pool import Pool
from server.evaluation.beir import BeirDataset
from server.evaluation.metrics import dedup_keep_first, evaluate, percentiles


class CorpusLoader(Protocol):
    """What the evaluation needs from the documents domain (its `DocumentService` fits)."""

    async def register_bulk(self, principal: Principal, filename: str, data: bytes) -> Sequence[Any]: ...

    async def ingest(
        self, ids: Sequence[UUID] | None = None, on_progress: Callable[[Any], None] | None = None
    ) -> Any: ...


_NAMESPACE = uuid.UUID("5b1f6f0e-6d1c-4d0e-9d55-7e3f1b8a2c10")


def eval_owner(dataset: BeirDataset) -> UUID:
    """A stable owner per dataset, so its corpus never mixes with the user's documents."""
    return uuid.uuid5(_NAMESPACE, f"beir:{dataset.path.resolve().name}")


async def ensure_corpus(
    pool: Pool,
    loader: CorpusLoader,
    dataset: BeirDataset,
    owner: UUID,
    on_progress: Callable[[Any], None] | None = None,
) -> int:
    """Ingest the corpus for `owner` unless it is already there; returns the number of documents ingested now."""
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO users (id, name) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING",
            (owner, f"eval:{dataset.path.name}"),
        )
    data = dataset.corpus_path.read_bytes()
    registered = await loader.register_bulk(Principal(owner, "eval", False), dataset.corpus_path.name, data)
    queued = [r.document_id for r in registered if r.status in ("queued", "requeued") and r.document_id]
    if not queued:
        return 0
    progress = await loader.ingest(queued, on_progress)
    return int(progress.documents_done)


@dataclass
class ModeReport:
    metrics: dict[str, float]
    latency_ms: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        return {**{k: round(v, 5) for k, v in self.metrics.items()}, "latency_ms": self.latency_ms}


async def run_queries(
    searcher: SearchService,
    dataset: BeirDataset,
    owner: UUID,
    modes: Sequence[str],
    ks: Sequence[int],
    *,
    rerank: bool = False,
) -> dict[str, ModeReport]:
    depth = max(ks)
    principal = Principal(owner, "eval", False)
    reports: dict[str, ModeReport] = {}
    for mode in modes:
        run: dict[str, list[str]] = {}
        latencies: list[float] = []
        for qid, text in dataset.queries.items():
            start = time.perf_counter()
            result = await searcher.search(text, principal=principal, limit=depth, mode=mode, rerank=rerank)
            latencies.append((time.perf_counter() - start) * 1000)
            run[qid] = dedup_keep_first(str(h.metadata.get("source_id", h.document_id)) for h in result.chunks)
        reports[mode] = ModeReport(
            evaluate(run, dataset.qrels, ks), {k: round(v, 2) for k, v in percentiles(latencies).items()}
        )
    return reports


def format_table(reports: dict[str, ModeReport], ks: Sequence[int]) -> str:
    cols = ["ndcg@10", "mrr@10", *[f"recall@{k}" for k in ks], *[f"precision@{k}" for k in ks if k <= 10]]
    cols = [c for c in dict.fromkeys(cols) if all(c in r.metrics for r in reports.values())]
    head = f"{'mode':<8} " + " ".join(f"{c:>12}" for c in cols) + f" {'p50 ms':>8} {'p95 ms':>8}"
    lines = [head, "-" * len(head)]
    for mode, r in reports.items():
        vals = " ".join(f"{r.metrics[c]:>12.4f}" for c in cols)
        lines.append(f"{mode:<8} {vals} {r.latency_ms['p50']:>8.1f} {r.latency_ms['p95']:>8.1f}")
    return "\n".join(lines)
