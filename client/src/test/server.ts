import axe from "axe-core";
import { vi } from "vitest";
import type { ErrorBody, SessionInfo, User } from "../api/types";
import { jsonResponse } from "./fixtures";

export interface Call {
  method: string;
  path: string;
  url: string;
  body: unknown;
  init: RequestInit;
}

/** Answer a request: a Response, or undefined to fall through to the next handler. */
export type Handler = (call: Call) => Response | Promise<Response> | undefined;

export const user = (over: Partial<User> = {}): User => ({
  id: "u-admin",
  username: "admin",
  is_admin: true,
  disabled: false,
  created_at: "2024-01-01T00:00:00Z",
  ...over,
});

export const session = (over: Partial<SessionInfo> = {}): SessionInfo => ({
  auth: "on",
  setup_required: false,
  user: user(),
  ...over,
});

export const noContent = () => new Response(null, { status: 204 });

/** The server's one error body (`ErrorBody`); its request id is the X-Request-ID header's, else "req-test". */
export const apiError = (status: number, code: string, detail: string, headers: Record<string, string> = {}) => {
  const body: ErrorBody = { status_code: status, code, detail, request_id: headers["X-Request-ID"] ?? "req-test" };
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", ...headers },
  });
};

/** Boot routes every page calls, plus what the handlers answer; anything else throws (a test bug). */
export function mockServer(...handlers: Handler[]) {
  const calls: Call[] = [];
  const fetchMock = vi.fn(async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? "GET";
    const path = url.split("?")[0];
    let body: unknown = init.body;
    if (typeof init.body === "string") {
      try {
        body = JSON.parse(init.body);
      } catch {
        /* plain text */
      }
    }
    const call = { method, path, url, body, init };
    calls.push(call);
    for (const h of handlers) {
      const res = await h(call);
      if (res) return res;
    }
    if (path === "/api/health")
      return jsonResponse({
        status: "ok",
        llm: { provider: "ollama", reachable: true, model: "m", model_available: true, message: null },
      });
    if (path === "/api/collections" && method === "GET") return jsonResponse({ collections: [] });
    if (path === "/api/threads" && method === "GET") return jsonResponse({ threads: [] });
    if (path === "/api/documents" && method === "GET") return jsonResponse({ documents: [] });
    if (path === "/api/auth/oidc/config") return jsonResponse({ sso: false, local_login: true });
    throw new Error(`unmocked ${method} ${url}`);
  });
  vi.stubGlobal("fetch", fetchMock);
  return { calls, fetchMock, find: (method: string, path: string) => calls.filter((c) => c.method === method && c.path === path) };
}

/** A handler for one method + path (exact, or a RegExp). */
export function on(method: string, path: string | RegExp, respond: (call: Call) => Response | Promise<Response>): Handler {
  return (call) =>
    call.method === method && (typeof path === "string" ? call.path === path : path.test(call.path))
      ? respond(call)
      : undefined;
}

/** axe-core on the whole document (jsdom cannot compute colours, so color-contrast is left to the browser). */
export async function axeViolations(): Promise<string[]> {
  // What index.html provides.
  document.documentElement.lang = "en";
  document.title = "ragchat";
  const results = await axe.run(document, { rules: { "color-contrast": { enabled: false } } });
  return results.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`);
}
