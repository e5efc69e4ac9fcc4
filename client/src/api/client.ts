// The one way the client talks to the /api routes: `request` (errors, a lost session, request ids, Retry-After)
// and over it `get`/`post`/`put`/`patch`/`del`, typed by the server's OpenAPI document (./schema.d.ts,
// `npm run gen:api`): a call names a path of the schema, and its path parameters, query, body and answer are
// that path's types. The resource modules (documents.ts, threads.ts, ...) are written with them; nothing
// outside src/api calls `request` or `fetch` (layout.test.ts).
import type { components, paths } from "./schema";
import type { ErrorBody, OpenAIError } from "./types";

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

export const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);
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

/**
 * Fetch `path` (no HTTP cache) and answer its JSON (undefined for a 204); a non-2xx rejects with its ApiError.
 * The untyped base of the typed calls below: only a module of src/api calls it (an upload's FormData).
 */
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

// ---- typed calls over the schema's paths ----

type Schemas = components["schemas"];

export type Method = "get" | "put" | "post" | "delete" | "patch";

/** The operation of `method` on `path`; never when the path has no such method. */
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

/** The paths of the schema that answer `method`. */
export type PathsWith<M extends Method> = {
  [P in keyof paths]: [Operation<P, M>] extends [never] ? never : P;
}[keyof paths];

type SuccessStatus = 200 | 201 | 202 | 204;
type Responses<O> = O extends { responses: infer R } ? R : never;
type JsonContent<C> = C extends { "application/json": infer T } ? T : never;
type Success<R> = {
  [S in keyof R & SuccessStatus]: R[S] extends { content: infer C } ? JsonContent<C> : void;
}[keyof R & SuccessStatus];

/** What a successful call answers: its 2xx JSON, void for a 204. */
export type JsonResponse<P extends keyof paths, M extends Method> = Success<Responses<Operation<P, M>>>;

type ParametersOf<O> = O extends { parameters: infer X } ? X : never;
type PathParamsOf<O> = ParametersOf<O> extends { path: infer X } ? X : never;
type QueryOf<O> = ParametersOf<O> extends { query?: infer Q } ? NonNullable<Q> : never;
type JsonBodyOf<O> = O extends { requestBody?: infer RB }
  ? [NonNullable<RB>] extends [never]
    ? never
    : NonNullable<RB> extends { content: { "application/json": infer B } }
      ? B
      : never
  : never;

/** The query parameters of `method` on `path`. */
export type Query<P extends keyof paths, M extends Method> = QueryOf<Operation<P, M>>;

/**
 * Request-body fields the server fills in when they are left out. openapi-typescript types a schema as the
 * server's output, where a field with a default is always set, so it marks these required: a request may
 * leave them out. layout.test.ts checks this list against schema.d.ts after every `npm run gen:api`.
 */
export const SERVER_DEFAULTS = {
  ChatBody: ["message", "task"],
  Completion: ["model", "stream"],
  EvalRunBody: ["n", "rerank"],
  NewCollection: ["description"],
  NewUser: ["is_admin"],
  RagBody: ["debug", "stream", "task", "top_k"],
  SearchBody: ["top_k"],
} as const;

type Defaults = typeof SERVER_DEFAULTS;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type DefaultsOf<B> = {
  [N in keyof Defaults]: Same<B, Schemas[N]> extends true ? Defaults[N][number] : never;
}[keyof Defaults];
type WithOptional<B, K> = Omit<B, K & keyof B> & Partial<Pick<B, K & keyof B>>;

/** The JSON body of an operation, as a request may send it: the fields the server defaults are optional. */
type RequestJson<B> = [DefaultsOf<B>] extends [never] ? B : WithOptional<B, DefaultsOf<B>>;

/** The JSON body of `method` on `path`, as a request may send it (never: the call takes no JSON body). */
export type JsonBody<P extends keyof paths, M extends Method> = RequestJson<JsonBodyOf<Operation<P, M>>>;

type ParamsInit<O> = ([PathParamsOf<O>] extends [never] ? { path?: never } : { path: PathParamsOf<O> }) &
  ([QueryOf<O>] extends [never] ? { query?: never } : { query?: QueryOf<O> });
/** `params` is required when the path has parameters. */
type ParamsArg<O> = [PathParamsOf<O>] extends [never] ? { params?: ParamsInit<O> } : { params: ParamsInit<O> };
type BodyArg<B> = [B] extends [never] ? { body?: never } : { body: B };

/** A call's options: `params.path` (each value URL-encoded), `params.query`, the JSON `body`, `signal`. */
export type CallInit<P extends keyof paths, M extends Method> = { signal?: AbortSignal } & ParamsArg<Operation<P, M>> &
  BodyArg<JsonBody<P, M>>;

/** The options argument: optional when nothing in it is required. */
type InitArg<P extends keyof paths, M extends Method> =
  Record<string, never> extends CallInit<P, M> ? [init?: CallInit<P, M>] : [init: CallInit<P, M>];

type QueryValue = string | number | boolean | null | undefined;
type LooseInit = {
  signal?: AbortSignal;
  params?: { path?: Record<string, string | number>; query?: Record<string, QueryValue | QueryValue[]> };
  body?: unknown;
};

/**
 * `?a=1&b=x+y` of `query` in its keys' order (empty: ""); an array is its key repeated, undefined and null are
 * left out.
 */
export function queryString(query: Record<string, QueryValue | readonly QueryValue[]> | undefined): string {
  const qs = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item !== undefined && item !== null) qs.append(key, String(item));
    }
  }
  const text = qs.toString();
  return text ? `?${text}` : "";
}

/** `path` with each `{name}` replaced by its URL-encoded value. */
export function fillPath(path: string, values: Record<string, string | number> = {}): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined || value === null) throw new Error(`${path}: no value for {${name}}`);
    return encodeURIComponent(String(value));
  });
}

const urlOf = (path: string, init: LooseInit = {}) => fillPath(path, init.params?.path) + queryString(init.params?.query);

function call(method: Method, path: string, init: LooseInit = {}): Promise<unknown> {
  const url = urlOf(path, init);
  const req: RequestInit = {};
  if (method !== "get") req.method = method.toUpperCase();
  if (init.body !== undefined) {
    req.headers = { "Content-Type": "application/json" };
    req.body = JSON.stringify(init.body);
  }
  if (init.signal) req.signal = init.signal;
  return request(url, req);
}

/** GET `path`: its 200 JSON. */
export const get = <P extends PathsWith<"get">>(path: P, ...[init]: InitArg<P, "get">) =>
  call("get", path, init as LooseInit) as Promise<JsonResponse<P, "get">>;

/** POST `path` (with its JSON `body`, when the path takes one). */
export const post = <P extends PathsWith<"post">>(path: P, ...[init]: InitArg<P, "post">) =>
  call("post", path, init as LooseInit) as Promise<JsonResponse<P, "post">>;

export const put = <P extends PathsWith<"put">>(path: P, ...[init]: InitArg<P, "put">) =>
  call("put", path, init as LooseInit) as Promise<JsonResponse<P, "put">>;

export const patch = <P extends PathsWith<"patch">>(path: P, ...[init]: InitArg<P, "patch">) =>
  call("patch", path, init as LooseInit) as Promise<JsonResponse<P, "patch">>;

/** DELETE `path` (`delete` is a keyword). */
export const del = <P extends PathsWith<"delete">>(path: P, ...[init]: InitArg<P, "delete">) =>
  call("delete", path, init as LooseInit) as Promise<JsonResponse<P, "delete">>;

/** The URL of a GET the browser makes itself (a download link, a file it opens): `path` with its parameters. */
export const getUrl = <P extends PathsWith<"get">>(path: P, ...[init]: InitArg<P, "get">) =>
  urlOf(path, init as LooseInit);
