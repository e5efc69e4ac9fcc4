import { afterEach, describe, expect, it, vi } from "vitest";
import { jsonResponse, sse, streamResponse, toolResult } from "../test/fixtures";
import { ConnectionLostError, streamChat } from "./chat";
import type { ChatEvent } from "./chatEvents";
import { ApiError } from "./client";

afterEach(() => vi.unstubAllGlobals());

describe("streamChat", () => {
  it("posts the request and delivers typed events split across chunks", async () => {
    const text =
      sse("thread", { thread_id: "t1", message_id: "m1" }) +
      ": ping\n\n" +
      sse("tool_call", { id: "call_1", name: "search_documents", arguments: { query: "ollama" } }) +
      sse("tool_result", toolResult()) +
      sse("token", { delta: "Hi " }) +
      sse("token", { delta: "there [1]" }) +
      sse("done", { message_id: "m1", finish_reason: "stop", usage: {} });
    const pieces = [];
    for (let i = 0; i < text.length; i += 17) pieces.push(text.slice(i, i + 17));
    const fetchMock = vi.fn().mockResolvedValue(streamResponse(pieces));
    vi.stubGlobal("fetch", fetchMock);

    const events: ChatEvent[] = [];
    await streamChat({ message: "hello", thread_id: "t1" }, (e) => events.push(e));

    expect(events.map((e) => e.type)).toEqual(["thread", "tool_call", "tool_result", "token", "token", "done"]);
    const [url, init] = fetchMock.mock.calls[0];
    expect(url).toBe("/api/chat");
    expect(init.method).toBe("POST");
    expect(JSON.parse(init.body)).toEqual({ message: "hello", thread_id: "t1" });
  });

  it("resolves on an error event", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn().mockResolvedValue(streamResponse([sse("error", { code: "llm_unreachable", message: "Start Ollama" })])),
    );
    const events: ChatEvent[] = [];
    await streamChat({ message: "x" }, (e) => events.push(e));
    expect(events).toEqual([{ type: "error", code: "llm_unreachable", message: "Start Ollama" }]);
  });

  it("rejects with ConnectionLostError when the stream ends without done/error", async () => {
    vi.stubGlobal("fetch", vi.fn().mockResolvedValue(streamResponse([sse("token", { delta: "par" })])));
    const events: ChatEvent[] = [];
    await expect(streamChat({ message: "x" }, (e) => events.push(e))).rejects.toBeInstanceOf(ConnectionLostError);
    expect(events).toHaveLength(1);
  });

  it("rejects with ConnectionLostError when the body errors mid-stream", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn().mockResolvedValue(streamResponse([sse("token", { delta: "a" })], { endWithError: true })),
    );
    await expect(streamChat({ message: "x" }, () => {})).rejects.toBeInstanceOf(ConnectionLostError);
  });

  it("rejects with ConnectionLostError when fetch itself fails", async () => {
    vi.stubGlobal("fetch", vi.fn().mockRejectedValue(new TypeError("Failed to fetch")));
    await expect(streamChat({ message: "x" }, () => {})).rejects.toBeInstanceOf(ConnectionLostError);
  });

  it("rejects with ApiError carrying the server's detail for JSON errors", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn().mockResolvedValue(jsonResponse({ status_code: 404, detail: "Thread not found" }, 404)),
    );
    const err = await streamChat({ message: "x", thread_id: "nope" }, () => {}).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(404);
    expect(err.message).toBe("Thread not found");
  });

  it("rejects with an AbortError when aborted", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn((_url: string, init: RequestInit) =>
        Promise.reject(init.signal?.aborted ? new DOMException("Aborted", "AbortError") : new Error("?")),
      ),
    );
    const c = new AbortController();
    c.abort();
    const err = await streamChat({ message: "x" }, () => {}, c.signal).catch((e) => e);
    expect(err.name).toBe("AbortError");
  });
});
