"""/api/eval/runs: start a generated evaluation of the caller's documents, list and read the caller's runs."""

from __future__ import annotations

from litestar import Controller, get, post

from ragchat.core.principal import Principal
from ragchat.evaluation import store
from ragchat.evaluation.schemas import EvalRun, EvalRunBody, EvalRunList, EvalRunStarted, EvalRunSummary
from ragchat.evaluation.service import EvalRuntime, GeneratedEval, start_generated
from ragchat.httpapi.http import error_responses


class EvalController(Controller):
    path = "/api/eval/runs"
    tags = ("evaluation",)

    @post("/", status_code=202, responses=error_responses(400))
    async def start(self, runtime: EvalRuntime, principal: Principal, data: EvalRunBody) -> EvalRunStarted:
        """Start a generated evaluation (N questions from your documents, every mode, rerank optional) in the
        background; poll GET /api/eval/runs/{id} for progress and results."""
        spec = GeneratedEval(
            n=data.n, rerank=(False, True) if data.rerank else (False,), category_key=data.category_key or None
        )
        run_id = await start_generated(runtime, principal, spec)
        return EvalRunStarted(id=run_id, status="running")

    @get("/")
    async def list_runs(self, runtime: EvalRuntime, principal: Principal) -> EvalRunList:
        """Your evaluation runs, newest first (50 at most)."""
        rows = await store.list_runs(runtime.pool, principal.user_id)
        return EvalRunList(runs=[EvalRunSummary.model_validate(r) for r in rows])

    @get("/{run_id:int}", responses=error_responses(404))
    async def get_run(self, runtime: EvalRuntime, principal: Principal, run_id: int) -> EvalRun:
        """One of your runs with its results (another user's run is a 404)."""
        return EvalRun.model_validate(await store.get_run(runtime.pool, principal.user_id, run_id))
