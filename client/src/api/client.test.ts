import { afterEach, describe, expect, it, vi } from "vitest";
import { apiError } from "../test/server";
import { ApiError, errorMessage, onUnauthorized } from "./client";
import { documentsApi } from "./documents";
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
