// Sign-in and sessions (docs/ACCOUNTS.md): /api/auth/... except the API tokens (tokens.ts).
import { get, post } from "./client";

export const authApi = {
  /** Public: is auth on, must the first account be created, who am I. */
  session: (signal?: AbortSignal) => get("/api/auth/session", { signal }),

  /** Public: is single sign-on on (its button's label, why it is unavailable), is the password form on. */
  ssoConfig: (signal?: AbortSignal) => get("/api/auth/oidc/config", { signal }),

  /** Create the first (admin) account; 409 `setup_done` once one exists, 403 `setup_token_required` without
   * the server's setup token (a server others can reach: the link `ragchat serve` printed). Sets the session cookie. */
  setup: async (username: string, password: string, setupToken?: string | null) =>
    (await post("/api/auth/setup", { body: { username, password, ...(setupToken ? { setup_token: setupToken } : {}) } }))
      .user,

  /** 401 `invalid_credentials` for a wrong username or password (never reported as a lost session). */
  login: async (username: string, password: string) =>
    (await post("/api/auth/login", { body: { username, password } })).user,

  logout: () => post("/api/auth/logout"),

  /** End every session of the signed-in user, this one too; with `revoke_tokens` every API token too. */
  logoutAll: (revokeTokens = true) => post("/api/auth/logout-all", { params: { query: { revoke_tokens: revokeTokens } } }),

  changePassword: (current_password: string, new_password: string) =>
    post("/api/auth/password", { body: { current_password, new_password } }),
};
