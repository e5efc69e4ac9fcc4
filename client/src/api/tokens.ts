// The signed-in user's API tokens (docs/ACCOUNTS.md): /api/auth/tokens.
import { del, get, post } from "./client";

export const tokensApi = {
  list: async (signal?: AbortSignal) => (await get("/api/auth/tokens", { signal })).tokens,

  /** The answer's `token` is shown this once. */
  create: (name: string, expires_in_days: number | null = null) =>
    post("/api/auth/tokens", { body: { name, expires_in_days } }),

  revoke: (tokenId: string) => del("/api/auth/tokens/{token_id}", { params: { path: { token_id: tokenId } } }),
};
