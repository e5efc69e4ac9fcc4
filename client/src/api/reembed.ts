// A switch of embedding model (admin only): /api/admin/reembed.
import { get, post, type JsonBody } from "./client";

export const reembedApi = {
  /** Progress of the switch and the stored vectors' status. */
  progress: (signal?: AbortSignal) => get("/api/admin/reembed", { signal }),

  /** Start re-embedding; defaults to the configured EMBED_PROVIDER / EMBED_MODEL. */
  start: (target: JsonBody<"/api/admin/reembed", "post"> = {}) => post("/api/admin/reembed", { body: target }),
};
