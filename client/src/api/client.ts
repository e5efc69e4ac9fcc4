import type {
  Document,
  Health,
  ReembedProgress,
  SearchMode,
  SearchResponse,
  Thread,
  ThreadDetail,
  UploadResult,
} from "./types";

/** Error from a non-2xx API response; `detail` is the server's message, `code` its error code. */
export class ApiError extends Error {
  constructor(
    public status: number,
    public detail: string,
    /** The body's `code` (e.g. "unauthorized", "forbidden", "conflict"), when it has one. */
    public code: string | null = null,
    /** Seconds to wait, from a 429's `Retry-After` header or `retry_after` in the body. */
    public retryAfter: number | null = null,
  ) {
    super(detail);
    this.name = "ApiError";
  }
}

/** The session is gone: a 401 from any call except a failed login (`invalid_credentials`). */
export const isSessionLost = (e: ApiError) => e.status === 401 && e.code !== "invalid_credentials";

type UnauthorizedListener = (e: ApiError) => void;
const unauthorizedListeners = new Set<UnauthorizedListener>();

/** Be told when any API call answers 401 `unauthorized` (the app then shows the login page). */
export function onUnauthorized(listener: UnauthorizedListener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

function positive(v: unknown): number | null {
  const n = typeof v === "number" ? v : typeof v === "string" && v.trim() ? Number(v) : NaN;
  return Number.isFinite(n) && n >= 0 ? n : null;
}

/** Extract a human message (and code) from a Litestar-style error body; reports a lost session. */
export async function errorFromResponse(res: Response): Promise<ApiError> {
  let detail = `${res.status} ${res.statusText}`.trim();
  let code: string | null = null;
  let retryAfter = positive(res.headers.get("Retry-After"));
  try {
    const body = (await res.json()) as Record<string, unknown>;
    if (typeof body.detail === "string") detail = body.detail;
    else if (typeof body.message === "string") detail = body.message;
    else if (body.error && typeof (body.error as { message?: unknown }).message === "string")
      detail = (body.error as { message: string }).message;
    if (typeof body.code === "string") code = body.code;
    retryAfter ??= positive(body.retry_after);
  } catch {
    /* not JSON */
  }
  const err = new ApiError(res.status, detail, code, retryAfter);
  if (isSessionLost(err)) for (const l of [...unauthorizedListeners]) l(err);
  return err;
}

export async function request<T>(path: string, init?: RequestInit): Promise<T> {
  const res = await fetch(path, {
    // Never answer from the browser's HTTP cache: what a user may read changes (sharing, uploads, another
    // user signing in on this browser), and a cached GET would show the old answer.
    cache: "no-store",
    ...init,
    headers: { Accept: "application/json", ...(init?.headers ?? {}) },
  });
  if (!res.ok) throw await errorFromResponse(res);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export function json(method: string, body: unknown): RequestInit {
  return { method, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
}

/** The server's message as a sentence ("Wrong username or password."); a 429 says when to try again. */
export function errorMessage(e: unknown): string {
  const raw = e instanceof ApiError ? e.detail : e instanceof Error ? e.message : String(e);
  let text = raw.charAt(0).toUpperCase() + raw.slice(1);
  if (text && !/[.!?]$/.test(text)) text += ".";
  if (e instanceof ApiError && e.status === 429 && e.retryAfter != null)
    text += ` Try again in ${Math.ceil(e.retryAfter)} s.`;
  return text;
}

export const api = {
  health: (signal?: AbortSignal) => request<Health>("/api/health", { signal }),

  /** Progress of a switch of embedding model (admin only). */
  reembedProgress: (signal?: AbortSignal) => request<ReembedProgress>("/api/admin/reembed", { signal }),

  /** Start re-embedding (admin only); defaults to the configured EMBED_PROVIDER / EMBED_MODEL. */
  startReembed: (target: { provider?: string; model?: string } = {}) =>
    request<ReembedProgress>("/api/admin/reembed", json("POST", target)),

  listDocuments: (signal?: AbortSignal, collectionId?: string) =>
    request<{ documents: Document[] }>(
      collectionId ? `/api/documents?collection_id=${encodeURIComponent(collectionId)}` : "/api/documents",
      { signal },
    ).then((r) => r.documents),

  /** `collectionId`: the uploads also go into that collection (write access needed). */
  uploadDocuments: (files: File[], collectionId?: string | null) => {
    const form = new FormData();
    for (const f of files) form.append("files", f, f.name);
    if (collectionId) form.append("collection_id", collectionId);
    return request<{ results: UploadResult[] }>("/api/documents", {
      method: "POST",
      body: form,
    }).then((r) => r.results);
  },

  deleteDocument: (id: string) =>
    request<void>(`/api/documents/${encodeURIComponent(id)}`, { method: "DELETE" }),

  /** `mode`/`rerank` left null use the server's configured defaults. */
  search: (
    params: {
      q: string;
      mode?: SearchMode | null;
      rerank?: boolean | null;
      limit?: number;
      documentIds?: string[];
      collectionIds?: string[];
    },
    signal?: AbortSignal,
  ) => {
    const qs = new URLSearchParams({ q: params.q });
    if (params.mode) qs.set("mode", params.mode);
    if (params.rerank != null) qs.set("rerank", String(params.rerank));
    if (params.limit) qs.set("limit", String(params.limit));
    for (const id of params.documentIds ?? []) qs.append("document_ids", id);
    for (const id of params.collectionIds ?? []) qs.append("collection_ids", id);
    return request<SearchResponse>(`/api/search?${qs.toString()}`, { signal });
  },

  listThreads: () => request<{ threads: Thread[] }>("/api/threads").then((r) => r.threads),

  getThread: (id: string, signal?: AbortSignal) =>
    request<ThreadDetail>(`/api/threads/${encodeURIComponent(id)}`, { signal }),

  renameThread: (id: string, title: string) =>
    request<Thread>(`/api/threads/${encodeURIComponent(id)}`, json("PATCH", { title })),

  deleteThread: (id: string) =>
    request<void>(`/api/threads/${encodeURIComponent(id)}`, { method: "DELETE" }),
};
