"""Running an evaluation: make sure the corpus is fully ingested, run every query per configuration (mode,
rerank, fusion), score the runs with ir-measures (server/ragchat/evaluation/scoring.py), overall and per category."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from uuid import UUID

from ragchat.core.options import options_of
from ragchat.core.ownership import Corpus
from ragchat.core.principal import Principal
from ragchat.core.search import SearchOptions, SearchService
from ragchat.evaluation.beir import BeirDataset
from ragchat.evaluation.metrics import dedup_keep_first, percentiles
from ragchat.evaluation.scoring import mean_scores, measure_names, per_query_scores
from ragchat.settings import RetrievalSettings

__all__ = [
    "Config",
    "CorpusLoader",
    "IngestCheck",
    "Measurement",
    "ServiceUsers",
    "check_ingest",
    "ensure_corpus",
    "eval_owner",
    "measure",
]

KS: tuple[int, ...] = (1, 5, 10)
DEPTH = 50  # chunks asked of the search per query (the chat's own depth per arm)
MAX_LISTED_FAILURES = 20


class CorpusLoader(Protocol):
    """What the evaluation needs from the documents domain (its `IngestService` fits)."""

    async def register_bulk(self, principal: Principal, filename: str, data: bytes) -> Sequence[Any]: ...

    async def ingest(
        self, ids: Sequence[UUID] | None = None, on_progress: Callable[[Any], None] | None = None
    ) -> Any: ...


class ServiceUsers(Protocol):
    """What the evaluation needs from the accounts domain: a user row to own a dataset's corpus (its
    `AccountService` fits)."""

    async def ensure_service_user(self, user_id: UUID, name: str) -> None: ...


_NAMESPACE = uuid.UUID("5b1f6f0e-6d1c-4d0e-9d55-7e3f1b8a2c10")


def eval_owner(dataset: BeirDataset) -> UUID:
    """A stable owner per dataset, so its corpus never mixes with the user's documents."""
    return uuid.uuid5(_NAMESPACE, f"beir:{dataset.path.resolve().name}")


async def ensure_corpus(
    users: ServiceUsers,
    loader: CorpusLoader,
    dataset: BeirDataset,
    owner: UUID,
    on_progress: Callable[[Any], None] | None = None,
) -> int:
    """Ingest the corpus for `owner` unless it is already there; returns the number of documents ingested now."""
    await users.ensure_service_user(owner, f"eval:{dataset.path.name}")
    data = dataset.corpus_path.read_bytes()
    registered = await loader.register_bulk(Principal(owner, "eval", False), dataset.corpus_path.name, data)
    queued = [r.document_id for r in registered if r.status in ("queued", "requeued") and r.document_id]
    if not queued:
        return 0
    progress = await loader.ingest(queued, on_progress)
    return int(progress.documents_done)


@dataclass
class IngestCheck:
    """How much of an owner's corpus is searchable: the failed documents (first few, with reasons) and a count."""

    ready: int
    failed: int
    pending: int
    failures: list[tuple[str, str]] = field(default_factory=list)  # (document, reason), the first 20

    @property
    def complete(self) -> bool:
        return self.failed == 0 and self.pending == 0

    def describe(self) -> str:
        lines = [f"the corpus did not fully ingest: {self.ready} ready, {self.failed} failed, {self.pending} not done"]
        lines += [f"  {doc}: {reason}" for doc, reason in self.failures]
        if self.failed > len(self.failures):
            lines.append(f"  ... and {self.failed - len(self.failures)} more failed documents")
        return "\n".join(lines)


async def check_ingest(corpus: Corpus, owner: UUID) -> IngestCheck:
    state = await corpus.corpus_state(owner, MAX_LISTED_FAILURES)
    failures = [(doc, " ".join(error.split())[:300]) for doc, error in state.failures]
    return IngestCheck(state.ready, state.failed, state.pending, failures)


@dataclass(frozen=True)
class Config:
    """One column of the comparison: a searcher and its options (a mode, a fusion, rerank on or off)."""

    name: str
    mode: str
    rerank: bool
    searcher: SearchService
    options: SearchOptions  # the mode, rerank and fusion of this column (the limit is the measure's depth)


@dataclass(frozen=True)
class Query:
    qid: str
    text: str
    docs: Mapping[str, int]  # relevant documents: id -> relevance
    chunk: str | None = None  # the source chunk, when the question was generated from one
    category: str | None = None


@dataclass
class Measurement:
    metrics: dict[str, float]
    latency_ms: dict[str, float]
    by_category: dict[str, dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {
            "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
            "latency_ms": self.latency_ms,
            "by_category": self.by_category,
        }


DocKey = Callable[[Any], str]


def source_document(hit: Any) -> str:
    """A BEIR corpus document is judged by its `_id` (kept as `source_id`); a library document by its id."""
    return str(hit.metadata.get("source_id", hit.document_id))


def library_document(hit: Any) -> str:
    return str(hit.document_id)


async def measure(
    configs: Sequence[Config],
    queries: Sequence[Query],
    principal: Principal,
    *,
    doc_key: DocKey = library_document,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, Measurement]:
    """Run every query in every configuration and score it: documents, and chunks where known. The search asks
    for `DEPTH` chunks, so that after several chunks of one document collapse into it the ranking still holds
    at least max(KS) documents (asking for only 10 chunks left fewer than 10 documents where documents have
    several chunks: NFCorpus hybrid nDCG@10 0.291 end to end, against 0.3305 offline over 100-deep lists)."""
    depth = max(DEPTH, max(KS))
    qrels = {q.qid: dict(q.docs) for q in queries}
    chunk_qrels = {q.qid: {q.chunk: 1} for q in queries if q.chunk is not None}
    names = measure_names(KS)
    total, done = len(configs) * len(queries), 0
    out: dict[str, Measurement] = {}
    for config in configs:
        docs_run: dict[str, list[str]] = {}
        chunks_run: dict[str, list[str]] = {}
        latencies: list[float] = []
        for q in queries:
            start = time.perf_counter()
            result = await config.searcher.search(
                q.text, principal=principal, options=replace(config.options, limit=depth)
            )
            latencies.append((time.perf_counter() - start) * 1000)
            docs_run[q.qid] = dedup_keep_first(doc_key(h) for h in result.chunks)
            chunks_run[q.qid] = dedup_keep_first(str(h.id) for h in result.chunks)
            done += 1
            if on_progress is not None:
                on_progress(done, total)
        per_query = per_query_scores(docs_run, qrels, KS)
        if chunk_qrels:
            for qid, scores in per_query_scores(chunks_run, chunk_qrels, KS).items():
                per_query[qid].update({f"chunk_recall@{k}": scores[f"recall@{k}"] for k in KS})
        metric_names = names + ([f"chunk_recall@{k}" for k in KS] if chunk_qrels else [])
        out[config.name] = Measurement(
            mean_scores(per_query, metric_names),
            {k: round(v, 2) for k, v in percentiles(latencies, (50, 95)).items()},
            _by_category(queries, per_query, metric_names),
        )
    return out


def _by_category(
    queries: Sequence[Query], per_query: Mapping[str, Mapping[str, float]], names: Sequence[str]
) -> dict[str, dict[str, Any]]:
    groups: dict[str, dict[str, Mapping[str, float]]] = {}
    for q in queries:
        if q.category is not None:
            groups.setdefault(q.category, {})[q.qid] = per_query[q.qid]
    return {
        cat: {"queries": len(group), "metrics": {k: round(v, 6) for k, v in mean_scores(group, names).items()}}
        for cat, group in sorted(groups.items())
    }


def beir_queries(dataset: BeirDataset, categories: Mapping[str, str] | None = None) -> list[Query]:
    cats = categories or {}
    return [Query(qid, text, dataset.qrels[qid], category=cats.get(qid)) for qid, text in dataset.queries.items()]


def configs_for(
    searcher: SearchService,
    settings: RetrievalSettings,
    modes: Sequence[str],
    rerank: Sequence[bool],
    fusion: str | None = None,
) -> list[Config]:
    suffix = f"/{fusion}" if fusion else ""
    return [
        Config(
            f"{mode}{suffix}{'+rerank' if r else ''}",
            mode,
            r,
            searcher,
            options_of(settings, mode=mode, rerank=r, fusion=fusion, limit=DEPTH),
        )
        for r in rerank
        for mode in modes
    ]
