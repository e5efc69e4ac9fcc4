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

/** Error from a non-2xx API response; `detail` is the server's message. */
export class ApiError extends Error {
  constructor(
    public status: number,
    public detail: string,
  ) {
    super(detail);
    this.name = "ApiError";
  }
}

/** Extract a human message from a Litestar-style error body. */
export async function errorFromResponse(res: Response): Promise<ApiError> {
  let detail = `${res.status} ${res.statusText}`.trim();
  try {
    const body = (await res.json()) as Record<string, unknown>;
    if (typeof body.detail === "string") detail = body.detail;
    else if (typeof body.message === "string") detail = body.message;
    else if (body.error && typeof (body.error as { message?: unknown }).message === "string")
      detail = (body.error as { message: string }).message;
  } catch {
    /* not JSON */
  }
  return new ApiError(res.status, detail);
}

async function request<T>(path: string, init?: RequestInit): Promise<T> {
  const res = await fetch(path, {
    ...init,
    headers: { Accept: "application/json", ...(init?.headers ?? {}) },
  });
  if (!res.ok) throw await errorFromResponse(res);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

function json(method: string, body: unknown): RequestInit {
  return { method, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
}

export const api = {
  health: (signal?: AbortSignal) => request<Health>("/api/health", { signal }),

  /** Progress of a switch of embedding model (admin only). */
  reembedProgress: (signal?: AbortSignal) => request<ReembedProgress>("/api/admin/reembed", { signal }),

  /** Start re-embedding (admin only); defaults to the configured EMBED_PROVIDER / EMBED_MODEL. */
  startReembed: (target: { provider?: string; model?: string } = {}) =>
    request<ReembedProgress>("/api/admin/reembed", json("POST", target)),

  listDocuments: (signal?: AbortSignal) =>
    request<{ documents: Document[] }>("/api/documents", { signal }).then((r) => r.documents),

  uploadDocuments: (files: File[]) => {
    const form = new FormData();
    for (const f of files) form.append("files", f, f.name);
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
    },
    signal?: AbortSignal,
  ) => {
    const qs = new URLSearchParams({ q: params.q });
    if (params.mode) qs.set("mode", params.mode);
    if (params.rerank != null) qs.set("rerank", String(params.rerank));
    if (params.limit) qs.set("limit", String(params.limit));
    for (const id of params.documentIds ?? []) qs.append("document_ids", id);
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
