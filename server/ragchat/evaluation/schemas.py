"""Typed requests and responses of /api/eval/runs."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragchat.core.schemas import Flag


class EvalRunBody(BaseModel):
    n: int = Field(default=20, ge=1, le=500, description="questions to generate (one per sampled chunk)")
    rerank: Flag = Field(default=False, description="also measure every mode with the LLM reranker")
    category_key: str | None = Field(
        default=None,
        max_length=100,
        pattern=r"^[^\x00-\x1f\x7f]*$",  # no NUL or other control character: it is stored in Postgres text
        description="a document metadata key: results per its value (byCategory)",
    )


class EvalRunStarted(BaseModel):
    id: int
    status: Literal["running", "done", "failed"]


class EvalProgress(BaseModel):
    stage: str = ""
    done: int = 0
    total: int = 0


class CategoryResult(BaseModel):
    queries: int
    metrics: dict[str, float]


class ConfigResult(BaseModel):
    metrics: dict[str, float] = Field(description="recall@1/5/10, ndcg@10, mrr@10, chunk_recall@1/5/10")
    latency_ms: dict[str, float] = Field(description="p50, p95 of one search, milliseconds")
    by_category: dict[str, CategoryResult] = Field(default_factory=dict)


class EvalResults(BaseModel):
    dataset: str = ""
    questions: int = 0
    sampled: int = 0
    skipped: int = 0
    seconds: float | None = None
    examples: list[dict[str, str]] = Field(
        default_factory=list, description="the generated questions asked ({question, document}), all of them"
    )
    configs: dict[str, ConfigResult] = Field(default_factory=dict)


class EvalRunSummary(BaseModel):
    id: int
    created_at: datetime
    dataset: str
    status: Literal["running", "done", "failed"]
    partial: bool
    notes: str
    config: dict[str, Any]
    progress: EvalProgress


class EvalRun(EvalRunSummary):
    results: EvalResults


class EvalRunList(BaseModel):
    runs: list[EvalRunSummary]
