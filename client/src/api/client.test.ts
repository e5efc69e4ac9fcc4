import { afterEach, describe, expect, it, vi } from "vitest";
import { apiError } from "../test/server";
import { api, ApiError, errorMessage, onUnauthorized } from "./client";

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

  it("read retry_after from the body when there is no header", async () => {
    failWith(
      new Response(JSON.stringify({ status_code: 429, code: "rate_limited", detail: "slow down", retry_after: 3 }), {
        status: 429,
      }),
    );
    const err = (await api.listThreads().catch((e: unknown) => e)) as ApiError;
    expect(err.retryAfter).toBe(3);
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
