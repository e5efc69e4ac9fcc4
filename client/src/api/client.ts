import type {
  EvalRun,
  EvalRunBody,
  EvalRunList,
  EvalRunStarted,
  Document as ApiDocument,
  DocumentList,
  ErrorBody,
  ExtractionQueued,
  Health,
  MetadataFilters,
  MetadataPatch,
  OpenAIError,
  ReembedBody,
  ReembedProgress,
  SearchMode,
  SearchResponse,
  Thread,
  ThreadDetail,
  ThreadList,
  UploadResult,
  UploadResults,
} from "./types";

/**
 * Error from a non-2xx API response: `detail` is the server's message, `code` its error code. For a 5xx the
 * `message` also names the request id, so that a user can report it (the server logs it).
 */
export class ApiError extends Error {
  /** Seconds to wait, from a 429's `Retry-After` header or `extra.retry_after` in the body. */
  public retryAfter: number | null;
  /** The request's id (the body's `request_id`, else the `X-Request-ID` header): the server's log names it. */
  public requestId: string | null;
  /** The body's `extra`: invalid fields, the per-file results of a refused upload, retry_after. */
  public extra: ErrorBody["extra"];

  constructor(
    public status: number,
    public detail: string,
    /** The body's `code` (e.g. "unauthorized", "forbidden", "conflict"), when it has one. */
    public code: string | null = null,
    more: { retryAfter?: number | null; requestId?: string | null; extra?: ErrorBody["extra"] } = {},
  ) {
    super(withRequestId(detail, status, more.requestId ?? null));
    this.name = "ApiError";
    this.retryAfter = more.retryAfter ?? null;
    this.requestId = more.requestId ?? null;
    this.extra = more.extra ?? null;
  }
}

/** A 5xx's detail with its request id appended (unless the detail names it already). */
function withRequestId(detail: string, status: number, requestId: string | null): string {
  return status >= 500 && requestId && !detail.includes(requestId) ? `${detail} (request id ${requestId})` : detail;
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

const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);
const str = (v: unknown) => (typeof v === "string" && v ? v : null);

/**
 * The ApiError of an error response; reports a lost session. Reads the one error body of the /api routes
 * (`{status_code, code, detail, extra?, request_id}`) and the OpenAI-style `{"error": {...}}` of /v1.
 */
export async function errorFromResponse(res: Response): Promise<ApiError> {
  let detail = `${res.status} ${res.statusText}`.trim();
  let code: string | null = null;
  let extra: ErrorBody["extra"] = null;
  let retryAfter = positive(res.headers.get("Retry-After"));
  let requestId = str(res.headers.get("X-Request-ID"));
  try {
    const body = (await res.json()) as unknown;
    if (isRecord(body)) {
      const b = body as Partial<ErrorBody> & Partial<OpenAIError> & { message?: unknown };
      const openai = isRecord(b.error) ? b.error : null;
      detail = str(b.detail) ?? str(b.message) ?? str(openai?.message) ?? detail;
      code = str(b.code) ?? str(openai?.code);
      requestId = str(b.request_id) ?? str(openai?.request_id) ?? requestId;
      if (isRecord(b.extra) || Array.isArray(b.extra)) extra = b.extra;
      if (isRecord(extra)) retryAfter ??= positive(extra.retry_after);
    }
  } catch {
    /* not JSON */
  }
  const err = new ApiError(res.status, detail, code, { retryAfter, requestId, extra });
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

/**
 * The server's message as a sentence ("Wrong username or password."); a 429 says when to try again, a 5xx
 * names the request id (to report it).
 */
export function errorMessage(e: unknown): string {
  const raw = e instanceof Error ? e.message : String(e);
  let text = raw.charAt(0).toUpperCase() + raw.slice(1);
  if (text && !/[.!?]$/.test(text)) text += ".";
  if (e instanceof ApiError && e.status === 429 && e.retryAfter != null)
    text += ` Try again in ${Math.ceil(e.retryAfter)} s.`;
  return text;
}

/** Uploads in flight at once: each file is its own request (a request's body is limited to MAX_UPLOAD_MB). */
export const UPLOAD_CONCURRENCY = 2;

/** Statuses about the file itself: that file is rejected, the others still go. */
const FILE_REFUSALS = new Set([400, 413, 415]);

/** The per-file results of a refused upload (`extra.results` of its 400/413/415). */
function refusedResults(e: ApiError): UploadResult[] | null {
  const results = isRecord(e.extra) ? e.extra.results : null;
  return Array.isArray(results) && results.length ? (results as UploadResult[]) : null;
}

const rejected = (filename: string, error: string): UploadResult => ({
  filename,
  status: "rejected",
  document: null,
  error,
});

/** Upload one file; a refusal of the file (or a failure of its request) is its `rejected` result. */
async function uploadOne(
  file: File,
  collectionId: string | null,
  fields?: Record<string, string>,
): Promise<UploadResult[]> {
  const form = new FormData();
  form.append("files", file, file.name);
  if (collectionId) form.append("collection_id", collectionId);
  for (const [name, value] of Object.entries(fields ?? {})) form.append(name, value);
  try {
    return (await request<UploadResults>("/api/documents", { method: "POST", body: form })).results;
  } catch (e) {
    if (e instanceof ApiError) {
      // 401 (signed out), 403 and 404 (the collection) would fail every file the same way: stop the batch.
      if (e.status === 401 || e.status === 403 || e.status === 404) throw e;
      return (FILE_REFUSALS.has(e.status) && refusedResults(e)) || [rejected(file.name, e.message)];
    }
    // A network failure (the server may also drop a connection whose body is over its limit).
    return [rejected(file.name, "the upload did not reach the server")];
  }
}

/**
 * Upload `files`, one request per file (at most UPLOAD_CONCURRENCY at a time), so a batch may exceed the
 * server's per-request limit. Resolves with every file's results, in the order of `files`; `onFile` hears
 * each file's as it arrives. Rejects (after the requests under way) only when the session is lost or the
 * collection may not be written to (401/403/404), which no file of the batch would get past.
 */
export async function uploadFiles(
  files: File[],
  collectionId?: string | null,
  onFile?: (results: UploadResult[], index: number) => void,
  fields?: Record<string, string>,
): Promise<UploadResult[]> {
  const out: UploadResult[][] = files.map(() => []);
  const failures: unknown[] = [];
  let next = 0;
  const worker = async () => {
    while (!failures.length && next < files.length) {
      const i = next++;
      try {
        out[i] = await uploadOne(files[i], collectionId ?? null, fields);
        onFile?.(out[i], i);
      } catch (error) {
        failures.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(UPLOAD_CONCURRENCY, files.length) }, worker));
  if (failures.length) throw failures[0];
  return out.flat();
}

export const api = {
  /** The server's health; a 503 (the database does not answer) carries the same body, `status: "down"`. */
  health: async (signal?: AbortSignal): Promise<Health> => {
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

  /** Progress of a switch of embedding model (admin only). */
  reembedProgress: (signal?: AbortSignal) => request<ReembedProgress>("/api/admin/reembed", { signal }),

  /** Start re-embedding (admin only); defaults to the configured EMBED_PROVIDER / EMBED_MODEL. */
  startReembed: (target: ReembedBody = {}) =>
    request<ReembedProgress>("/api/admin/reembed", json("POST", target)),

  /** Every document I may read (of one collection), newest first: the API's pages of 200, fetched in turn
   * (the documents page asks for one page at a time instead: documents/documentsApi.ts). */
  listDocuments: async (signal?: AbortSignal, collectionId?: string) => {
    const all: ApiDocument[] = [];
    for (let offset = 0; ; offset += 200) {
      const qs = new URLSearchParams({ limit: "200", offset: String(offset) });
      if (collectionId) qs.set("collection_id", collectionId);
      const page = await request<DocumentList>(`/api/documents?${qs}`, { signal });
      all.push(...page.documents);
      if (page.documents.length < 200 || all.length >= (page.total ?? 0) || offset >= 10_000) return all;
    }
  },

  /** One request per file (see uploadFiles); `collectionId`: the uploads also go into that collection. */
  uploadDocuments: uploadFiles,

  /** Fetch a web page (or a file at a URL) on the server and queue it like an upload. */
  ingestUrl: async (url: string, collectionId: string | null) =>
    (await request<UploadResults>("/api/documents/url", json("POST", { url, collection_id: collectionId }))).results,

  /** Edit a document's metadata (JSON merge patch: null removes a key); the updated document. */
  updateMetadata: (id: string, metadata: MetadataPatch["metadata"]) =>
    request<ApiDocument>(`/api/documents/${encodeURIComponent(id)}`, json("PATCH", { metadata })),

  /** Run the LLM metadata extraction again for one document. */
  extractMetadata: (id: string) =>
    request<ExtractionQueued>(`/api/documents/${encodeURIComponent(id)}/extract-metadata`, { method: "POST" }),

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
      /** Metadata filters: one of a key's values (OR), every key (AND). */
      filters?: MetadataFilters;
    },
    signal?: AbortSignal,
  ) => {
    const qs = new URLSearchParams({ q: params.q });
    if (params.mode) qs.set("mode", params.mode);
    if (params.rerank != null) qs.set("rerank", String(params.rerank));
    if (params.limit) qs.set("limit", String(params.limit));
    for (const id of params.documentIds ?? []) qs.append("document_ids", id);
    for (const id of params.collectionIds ?? []) qs.append("collection_ids", id);
    for (const [key, values] of Object.entries(params.filters ?? {})) {
      for (const value of values) qs.append("filter", `${key}=${value}`);
    }
    return request<SearchResponse>(`/api/search?${qs.toString()}`, { signal });
  },

  listThreads: () => request<ThreadList>("/api/threads").then((r) => r.threads),

  getThread: (id: string, signal?: AbortSignal) =>
    request<ThreadDetail>(`/api/threads/${encodeURIComponent(id)}`, { signal }),

  renameThread: (id: string, title: string) =>
    request<Thread>(`/api/threads/${encodeURIComponent(id)}`, json("PATCH", { title })),

  deleteThread: (id: string) =>
    request<void>(`/api/threads/${encodeURIComponent(id)}`, { method: "DELETE" }),

  startEvalRun: (body: EvalRunBody) => request<EvalRunStarted>("/api/eval/runs", json("POST", body)),

  listEvalRuns: () => request<EvalRunList>("/api/eval/runs").then((r) => r.runs),

  getEvalRun: (id: number, signal?: AbortSignal) => request<EvalRun>(`/api/eval/runs/${id}`, { signal }),
};
