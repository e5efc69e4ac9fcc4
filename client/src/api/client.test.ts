import { afterEach, describe, expect, expectTypeOf, it, vi } from "vitest";
import { apiError } from "../test/server";
import {
  ApiError,
  del,
  errorMessage,
  fillPath,
  get,
  onUnauthorized,
  patch,
  post,
  queryString,
  type JsonBody,
} from "./client";
import { documentsApi } from "./documents";
import type { components } from "./schema";
import { searchApi } from "./search";
import { threadsApi } from "./threads";

afterEach(() => vi.unstubAllGlobals());

const failWith = (res: Response) => vi.stubGlobal("fetch", vi.fn().mockResolvedValue(res));

describe("API errors", () => {
  it("keep the body's code and detail, and a 429's Retry-After", async () => {
    failWith(apiError(429, "rate_limited", "too many searches", { "Retry-After": "17" }));
    const err = (await searchApi.search({ q: "x" }).catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 429, code: "rate_limited", detail: "too many searches", retryAfter: 17 });
    expect(errorMessage(err)).toBe("Too many searches. Try again in 17 s.");
  });

  it("read extra.retry_after from the body when there is no header", async () => {
    failWith(
      new Response(
        JSON.stringify({ status_code: 429, code: "rate_limited", detail: "slow down", extra: { retry_after: 3 }, request_id: "r1" }),
        { status: 429 },
      ),
    );
    const err = (await threadsApi.list().catch((e: unknown) => e)) as ApiError;
    expect(err).toMatchObject({ retryAfter: 3, requestId: "r1", extra: { retry_after: 3 } });
    expect(errorMessage(err)).toBe("Slow down. Try again in 3 s.");
  });

  it("a 5xx names its request id (from the body, else the X-Request-ID header)", async () => {
    failWith(
      new Response(
        JSON.stringify({ status_code: 503, code: "database_unavailable", detail: "the database is not answering", request_id: "abc123" }),
        { status: 503, headers: { "X-Request-ID": "abc123" } },
      ),
    );
    const err = (await threadsApi.list().catch((e: unknown) => e)) as ApiError;
    expect(err).toMatchObject({ status: 503, code: "database_unavailable", requestId: "abc123" });
    expect(err.detail).toBe("the database is not answering");
    expect(err.message).toBe("the database is not answering (request id abc123)");
    expect(errorMessage(err)).toBe("The database is not answering (request id abc123).");

    failWith(new Response("<html>Bad gateway</html>", { status: 502, statusText: "Bad Gateway", headers: { "X-Request-ID": "h1" } }));
    const proxied = (await threadsApi.list().catch((e: unknown) => e)) as ApiError;
    expect(proxied).toMatchObject({ status: 502, requestId: "h1", code: null });
    expect(errorMessage(proxied)).toBe("502 Bad Gateway (request id h1).");
  });

  it("a 500 whose detail names the request id already does not repeat it; a 4xx does not add it", async () => {
    failWith(apiError(500, "internal_error", "internal server error (logged on the server as r9)", { "X-Request-ID": "r9" }));
    const err = (await threadsApi.list().catch((e: unknown) => e)) as ApiError;
    expect(errorMessage(err)).toBe("Internal server error (logged on the server as r9).");
    failWith(apiError(404, "not_found", "thread not found", { "X-Request-ID": "r10" }));
    const missing = (await threadsApi.list().catch((e: unknown) => e)) as ApiError;
    expect(missing.requestId).toBe("r10");
    expect(errorMessage(missing)).toBe("Thread not found.");
  });

  it("reads the OpenAI-style error of the /v1 routes", async () => {
    failWith(
      new Response(
        JSON.stringify({ error: { message: "invalid API key", type: "authentication_error", code: "invalid_api_key", request_id: "v1" } }),
        { status: 400 },
      ),
    );
    const err = (await threadsApi.list().catch((e: unknown) => e)) as ApiError;
    expect(err).toMatchObject({ status: 400, detail: "invalid API key", code: "invalid_api_key", requestId: "v1" });
  });

  it("a 401 unauthorized from any call is reported to the listeners; invalid_credentials is not", async () => {
    const seen: string[] = [];
    const off = onUnauthorized((e) => seen.push(`${e.code}`));
    failWith(apiError(401, "unauthorized", "your session has ended"));
    await documentsApi.listAll().catch(() => undefined);
    failWith(apiError(401, "invalid_credentials", "wrong username or password"));
    await documentsApi.listAll().catch(() => undefined);
    failWith(apiError(403, "forbidden", "only an admin may do this"));
    await documentsApi.listAll().catch(() => undefined);
    off();
    failWith(apiError(401, "unauthorized", "again"));
    await documentsApi.listAll().catch(() => undefined);
    expect(seen).toEqual(["unauthorized"]);
  });

  it("errorMessage makes the server's message a sentence", () => {
    expect(errorMessage(new ApiError(409, "the username 'bob' is taken", "conflict"))).toBe("The username 'bob' is taken.");
    expect(errorMessage(new Error("Done!"))).toBe("Done!");
  });
});

/** A fetch that answers `res` and records every call's URL and init. */
function recording(res: () => Response = () => new Response(JSON.stringify({ ok: 1 }), { status: 200 })) {
  const calls: { url: string; init: RequestInit }[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      return res();
    }),
  );
  return calls;
}

describe("typed calls", () => {
  it("URL-encode path parameters and build the query in its keys' order, leaving out undefined and null", async () => {
    const calls = recording();
    await get("/api/documents/{document_id}/chunks", {
      params: { path: { document_id: "a/b c?" }, query: { offset: undefined, limit: 5, chunk_id: null } },
    });
    await get("/api/search", {
      params: { query: { q: "tax 2024 & more", rerank: false, document_ids: ["d1", "d 2"], filter: [] } },
    });
    await get("/api/threads");
    expect(calls.map((c) => c.url)).toEqual([
      "/api/documents/a%2Fb%20c%3F/chunks?limit=5",
      "/api/search?q=tax+2024+%26+more&rerank=false&document_ids=d1&document_ids=d+2",
      "/api/threads",
    ]);
    // a GET is fetch's default method; no body, no cache
    expect(calls[2].init.method).toBeUndefined();
    expect(calls[2].init.body).toBeUndefined();
    expect(calls[2].init.cache).toBe("no-store");
    expect(calls[2].init.headers).toEqual({ Accept: "application/json" });
  });

  it("send a JSON body with its Content-Type, and none when the call has no body", async () => {
    const calls = recording();
    await patch("/api/threads/{thread_id}", { params: { path: { thread_id: "t1" } }, body: { title: "Taxes" } });
    await post("/api/threads/{thread_id}/stop", { params: { path: { thread_id: "t1" } } });
    expect(calls[0]).toMatchObject({
      url: "/api/threads/t1",
      init: { method: "PATCH", body: '{"title":"Taxes"}', headers: { "Content-Type": "application/json", Accept: "application/json" } },
    });
    expect(calls[1].url).toBe("/api/threads/t1/stop");
    expect(calls[1].init).toMatchObject({ method: "POST", headers: { Accept: "application/json" } });
    expect(calls[1].init.body).toBeUndefined();
  });

  it("answer undefined for a 204 and pass the signal on", async () => {
    const calls = recording(() => new Response(null, { status: 204 }));
    const ctl = new AbortController();
    await expect(del("/api/threads/{thread_id}", { params: { path: { thread_id: "t 1" } }, signal: ctl.signal })).resolves.toBeUndefined();
    expect(calls[0].url).toBe("/api/threads/t%201");
    expect(calls[0].init).toMatchObject({ method: "DELETE", signal: ctl.signal });
  });

  it("refuse a path whose parameter has no value (before any request)", async () => {
    const calls = recording();
    expect(() => fillPath("/api/threads/{thread_id}", {})).toThrow("no value for {thread_id}");
    expect(queryString({})).toBe("");
    expect(queryString({ a: "", b: 0, c: [null, "x"] })).toBe("?a=&b=0&c=x");
    expect(calls).toEqual([]);
  });
});

/** Compile-time checks (`npm run typecheck`): never called. */
export function typeChecks() {
  type Schemas = components["schemas"];
  expectTypeOf(get("/api/threads")).resolves.toEqualTypeOf<Schemas["ThreadList"]>();
  expectTypeOf(get("/api/documents/{document_id}", { params: { path: { document_id: "d" } } })).resolves.toEqualTypeOf<
    Schemas["Document"]
  >();
  expectTypeOf(post("/api/collections", { body: { name: "n" } })).resolves.toEqualTypeOf<Schemas["Collection"]>();
  expectTypeOf(del("/api/threads/{thread_id}", { params: { path: { thread_id: "t" } } })).resolves.toEqualTypeOf<void>();
  // the server's defaults may be left out; the other fields stay required
  expectTypeOf<JsonBody<"/api/chat", "post">>().toMatchTypeOf<{ message?: string; task?: Schemas["ChatBody"]["task"] }>();
  // @ts-expect-error: not a path of the schema
  void get("/api/nope");
  // @ts-expect-error: POST /api/threads does not exist
  void post("/api/threads");
  // @ts-expect-error: the path parameter is required
  void get("/api/documents/{document_id}");
  // @ts-expect-error: a misspelt path parameter
  void get("/api/documents/{document_id}", { params: { path: { id: "d" } } });
  // @ts-expect-error: a query parameter the path does not take
  void get("/api/threads", { params: { query: { limit: 5 } } });
  // @ts-expect-error: a query value of the wrong type
  void get("/api/documents", { params: { query: { status: "done" } } });
  // @ts-expect-error: the body is required
  void patch("/api/threads/{thread_id}", { params: { path: { thread_id: "t" } } });
  // @ts-expect-error: a body field the schema does not have
  void post("/api/collections", { body: { name: "n", colour: "red" } });
  // @ts-expect-error: a required body field left out
  void post("/api/documents/url", { body: { collection_id: null } });
}
