// Evaluation runs (/api/eval/runs): start one, list them, follow one.
import { get, post, type JsonBody } from "./client";

export const evaluationApi = {
  start: (body: JsonBody<"/api/eval/runs", "post">) => post("/api/eval/runs", { body }),

  list: async (signal?: AbortSignal) => (await get("/api/eval/runs", { signal })).runs,

  get: (runId: number, signal?: AbortSignal) => get("/api/eval/runs/{run_id}", { params: { path: { run_id: runId } }, signal }),
};
