import { afterEach, describe, expect, it, vi } from "vitest";
import { apiError } from "../test/server";
import type { Document, UploadResult } from "./types";
import { api, ApiError, errorMessage, onUnauthorized, UPLOAD_CONCURRENCY } from "./client";

afterEach(() => vi.unstubAllGlobals());

const failWith = (res: Response) => vi.stubGlobal("fetch", vi.fn().mockResolvedValue(res));

describe("API errors", () => {
  it("keep the body's code and detail, and a 429's Retry-After", async () => {
    failWith(apiError(429, "rate_limited", "too many searches", { "Retry-After": "17" }));
    const err = (await api.search({ q: "x" }).catch((e: unknown) => e)) as ApiError;
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
    const err = (await api.listThreads().catch((e: unknown) => e)) as ApiError;
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
    const err = (await api.listThreads().catch((e: unknown) => e)) as ApiError;
    expect(err).toMatchObject({ status: 503, code: "database_unavailable", requestId: "abc123" });
    expect(err.detail).toBe("the database is not answering");
    expect(err.message).toBe("the database is not answering (request id abc123)");
    expect(errorMessage(err)).toBe("The database is not answering (request id abc123).");

    failWith(new Response("<html>Bad gateway</html>", { status: 502, statusText: "Bad Gateway", headers: { "X-Request-ID": "h1" } }));
    const proxied = (await api.listThreads().catch((e: unknown) => e)) as ApiError;
    expect(proxied).toMatchObject({ status: 502, requestId: "h1", code: null });
    expect(errorMessage(proxied)).toBe("502 Bad Gateway (request id h1).");
  });

  it("a 500 whose detail names the request id already does not repeat it; a 4xx does not add it", async () => {
    failWith(apiError(500, "internal_error", "internal server error (logged on the server as r9)", { "X-Request-ID": "r9" }));
    const err = (await api.listThreads().catch((e: unknown) => e)) as ApiError;
    expect(errorMessage(err)).toBe("Internal server error (logged on the server as r9).");
    failWith(apiError(404, "not_found", "thread not found", { "X-Request-ID": "r10" }));
    const missing = (await api.listThreads().catch((e: unknown) => e)) as ApiError;
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
    const err = (await api.listThreads().catch((e: unknown) => e)) as ApiError;
    expect(err).toMatchObject({ status: 400, detail: "invalid API key", code: "invalid_api_key", requestId: "v1" });
  });

  it("a 401 unauthorized from any call is reported to the listeners; invalid_credentials is not", async () => {
    const seen: string[] = [];
    const off = onUnauthorized((e) => seen.push(`${e.code}`));
    failWith(apiError(401, "unauthorized", "your session has ended"));
    await api.listDocuments().catch(() => undefined);
    failWith(apiError(401, "invalid_credentials", "wrong username or password"));
    await api.listDocuments().catch(() => undefined);
    failWith(apiError(403, "forbidden", "only an admin may do this"));
    await api.listDocuments().catch(() => undefined);
    off();
    failWith(apiError(401, "unauthorized", "again"));
    await api.listDocuments().catch(() => undefined);
    expect(seen).toEqual(["unauthorized"]);
  });

  it("errorMessage makes the server's message a sentence", () => {
    expect(errorMessage(new ApiError(409, "the username 'bob' is taken", "conflict"))).toBe("The username 'bob' is taken.");
    expect(errorMessage(new Error("Done!"))).toBe("Done!");
  });
});

const queued = (filename: string): UploadResult => ({
  filename,
  status: "queued",
  document: { id: `doc-${filename}` } as Document,
  error: null,
});
const refused = (filename: string, error: string): UploadResult => ({ filename, status: "rejected", document: null, error });

/** A fake POST /api/documents: each request's one file answered by `answer(name)`; records concurrency. */
function uploadServer(answer: (name: string, form: FormData) => Response | Promise<Response>) {
  const seen: { names: string[]; collection: FormDataEntryValue | null }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  vi.stubGlobal(
    "fetch",
    vi.fn(async (_url: string, init: RequestInit) => {
      const form = init.body as FormData;
      const names = form.getAll("files").map((f) => (f as File).name);
      seen.push({ names, collection: form.get("collection_id") });
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return answer(names[0], form);
    }),
  );
  return { seen, maxInFlight: () => maxInFlight };
}

const json201 = (results: UploadResult[]) =>
  new Response(JSON.stringify({ results }), { status: 201, headers: { "Content-Type": "application/json" } });
const refusal = (status: number, code: string, results: UploadResult[]) =>
  new Response(
    JSON.stringify({ status_code: status, code, detail: results[0].error, extra: { results }, request_id: "r" }),
    { status, headers: { "Content-Type": "application/json" } },
  );

describe("uploadDocuments", () => {
  const files = (...names: string[]) => names.map((n) => new File([n], n));

  it("sends one file a request, at most UPLOAD_CONCURRENCY at a time, and merges the results in order", async () => {
    const srv = uploadServer((name) => json201([queued(name)]));
    const got: number[] = [];
    const results = await api.uploadDocuments(files("a.md", "b.md", "c.md", "d.md", "e.md"), "c1", (_r, i) => got.push(i));
    expect(srv.seen.map((s) => s.names)).toEqual([["a.md"], ["b.md"], ["c.md"], ["d.md"], ["e.md"]]);
    expect(srv.seen.every((s) => s.collection === "c1")).toBe(true);
    expect(srv.maxInFlight()).toBe(UPLOAD_CONCURRENCY);
    expect(results.map((r) => r.filename)).toEqual(["a.md", "b.md", "c.md", "d.md", "e.md"]);
    expect(got.sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it("a refused file is that file's result (extra.results of its 413/415/400); the others still go", async () => {
    uploadServer((name) =>
      name === "big.pdf"
        ? refusal(413, "payload_too_large", [refused(name, "big.pdf is 80 MB, over MAX_UPLOAD_MB (50)")])
        : name === "tool.exe"
          ? refusal(415, "unsupported_media_type", [refused(name, "unsupported file type .exe")])
          : json201([queued(name)]),
    );
    const results = await api.uploadDocuments(files("a.md", "big.pdf", "tool.exe", "b.md"));
    expect(results.map((r) => [r.filename, r.status, r.error])).toEqual([
      ["a.md", "queued", null],
      ["big.pdf", "rejected", "big.pdf is 80 MB, over MAX_UPLOAD_MB (50)"],
      ["tool.exe", "rejected", "unsupported file type .exe"],
      ["b.md", "queued", null],
    ]);
  });

  it("an error without per-file results (the body limit, a 5xx, the network) rejects only that file", async () => {
    uploadServer((name) => {
      if (name === "huge.pdf") return apiError(413, "payload_too_large", "request body over the limit");
      if (name === "oops.md") return apiError(500, "internal_error", "internal server error", { "X-Request-ID": "r5" });
      if (name === "gone.md") throw new TypeError("Failed to fetch");
      return json201([queued(name)]);
    });
    const results = await api.uploadDocuments(files("huge.pdf", "oops.md", "gone.md", "ok.md"));
    expect(results.map((r) => [r.filename, r.status, r.error])).toEqual([
      ["huge.pdf", "rejected", "request body over the limit"],
      ["oops.md", "rejected", "internal server error (request id r5)"],
      ["gone.md", "rejected", "the upload did not reach the server"],
      ["ok.md", "queued", null],
    ]);
  });

  it("a lost session or an unwritable collection stops the batch", async () => {
    const srv = uploadServer(() => apiError(403, "forbidden", "you may only read this collection"));
    const err = await api.uploadDocuments(files("a.md", "b.md", "c.md", "d.md"), "c9").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(403);
    expect(srv.seen.length).toBeLessThanOrEqual(UPLOAD_CONCURRENCY);
  });
});
