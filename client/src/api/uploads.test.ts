import { afterEach, describe, expect, it, vi } from "vitest";
import { apiError } from "../test/server";
import { ApiError } from "./client";
import type { Document, UploadResult } from "./types";
import { UPLOAD_CONCURRENCY, uploadFiles } from "./uploads";

afterEach(() => vi.unstubAllGlobals());

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

describe("uploadFiles", () => {
  const files = (...names: string[]) => names.map((n) => new File([n], n));

  it("sends one file a request, at most UPLOAD_CONCURRENCY at a time, and merges the results in order", async () => {
    const srv = uploadServer((name) => json201([queued(name)]));
    const got: number[] = [];
    const results = await uploadFiles(files("a.md", "b.md", "c.md", "d.md", "e.md"), "c1", (_r, i) => got.push(i));
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
    const results = await uploadFiles(files("a.md", "big.pdf", "tool.exe", "b.md"));
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
    const results = await uploadFiles(files("huge.pdf", "oops.md", "gone.md", "ok.md"));
    expect(results.map((r) => [r.filename, r.status, r.error])).toEqual([
      ["huge.pdf", "rejected", "request body over the limit"],
      ["oops.md", "rejected", "internal server error (request id r5)"],
      ["gone.md", "rejected", "the upload did not reach the server"],
      ["ok.md", "queued", null],
    ]);
  });

  it("a lost session or an unwritable collection stops the batch", async () => {
    const srv = uploadServer(() => apiError(403, "forbidden", "you may only read this collection"));
    const err = await uploadFiles(files("a.md", "b.md", "c.md", "d.md"), "c9").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(403);
    expect(srv.seen.length).toBeLessThanOrEqual(UPLOAD_CONCURRENCY);
  });
});
