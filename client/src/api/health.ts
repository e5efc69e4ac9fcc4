// The server's health (GET /api/health): the app's banner and the search page's mode and reranker.
import { errorFromResponse } from "./client";
import type { Health } from "./types";

export const healthApi = {
  /**
   * The server's health; a 503 (the database does not answer) carries the same body, `status: "down"`, which
   * is answered too. Its own fetch: `request` would make the 503 an error.
   */
  get: async (signal?: AbortSignal): Promise<Health> => {
    const res = await fetch("/api/health", { cache: "no-store", signal, headers: { Accept: "application/json" } });
    if (res.status === 503) {
      const body = (await res
        .clone()
        .json()
        .catch(() => null)) as Health | null;
      if (body && body.status === "down") return body;
    }
    if (!res.ok) throw await errorFromResponse(res);
    return (await res.json()) as Health;
  },
};
