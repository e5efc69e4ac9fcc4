import { act, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "../App";
import { bootResponse, jsonResponse, sse, streamResponse, toolResult } from "../test/fixtures";

const HEALTH = {
  status: "ok",
  database: "ok",
  embedder: "all-MiniLM-L6-v2",
  embeddings: {
    configured: { provider: "sentence-transformers", model: "all-MiniLM-L6-v2" },
    stored: { provider: "sentence-transformers", model: "all-MiniLM-L6-v2", dim: 384 },
    building: null,
    status: "ok",
    message: null,
  },
  llm: { provider: "ollama", reachable: true, model: "llama3.2", model_available: true, message: null, context_length: 8192 },
};

/** A stream that sends `pieces` then hangs until the request is aborted. */
function hangingStream(pieces: string[], signal: AbortSignal): Response {
  const enc = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(ctrl) {
      for (const p of pieces) ctrl.enqueue(enc.encode(p));
      signal.addEventListener("abort", () => ctrl.error(new DOMException("Aborted", "AbortError")));
    },
  });
  return new Response(body, { headers: { "Content-Type": "text/event-stream" } });
}

type Handler = (url: string, init: RequestInit) => Response | Promise<Response>;

function mockApi(chat: Handler[]) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetchMock = vi.fn(async (url: string, init: RequestInit = {}) => {
    calls.push({ url, init });
    const boot = bootResponse(url);
    if (boot) return boot;
    if (url === "/api/health") return jsonResponse(HEALTH);
    if (url === "/api/threads") return jsonResponse({ threads: [] });
    if (url === "/api/chat") {
      const h = chat.shift();
      if (!h) throw new Error("unexpected chat call");
      return h(url, init);
    }
    if (url.startsWith("/api/threads/")) return jsonResponse({ id: "t1", title: "T", created_at: "", updated_at: "", messages: [] });
    throw new Error(`unmocked ${url}`);
  });
  vi.stubGlobal("fetch", fetchMock);
  return calls;
}

/** Render the app and wait for the session check at boot. */
async function renderApp() {
  render(<App />);
  await screen.findByTestId("app-nav");
}

beforeEach(() => window.history.replaceState(null, "", "/"));
afterEach(() => vi.unstubAllGlobals());

const send = (text: string) => {
  fireEvent.change(screen.getByTestId("composer-input"), { target: { value: text } });
  fireEvent.keyDown(screen.getByTestId("composer-input"), { key: "Enter" });
};

describe("ChatPage", () => {
  it("streams an answer with a tool indicator and moves to the thread URL", async () => {
    const calls = mockApi([
      () =>
        streamResponse([
          sse("thread", { thread_id: "t1", message_id: "m1" }),
          sse("tool_call", { id: "call_1", name: "search_documents", arguments: { query: "port" } }),
          sse("tool_result", toolResult({ reranked: true, chunks: toolResult().chunks.map((c) => ({ ...c, score_kind: "rerank" as const, trace: { ...c.trace!, rerank_score: 0.9 } })) })),
          sse("token", { delta: "It is **11434** " }),
          sse("token", { delta: "[1]." }),
          sse("done", { message_id: "m1", finish_reason: "stop", usage: {} }),
        ]),
    ]);
    await renderApp();
    expect(screen.getByTestId("empty-chat")).toBeInTheDocument();
    send("What port?");

    await waitFor(() => expect(screen.getAllByTestId("message")[1]).toHaveAttribute("data-status", "complete"));
    const [user, answer] = screen.getAllByTestId("message");
    expect(user).toHaveTextContent("What port?");
    expect(answer.querySelector("strong")).toHaveTextContent("11434");
    expect(screen.getByTestId("search-mode-badge")).toHaveTextContent("Hybrid + Reranked");
    expect(window.location.pathname).toBe("/chat/t1");
    expect(JSON.parse(calls.find((c) => c.url === "/api/chat")!.init.body as string)).toEqual({ message: "What port?" });

    fireEvent.click(screen.getByTestId("citation"));
    const card = screen.getAllByTestId("source-card")[0];
    expect(card).toHaveAttribute("data-expanded", "true");
    expect(card).toHaveTextContent("Relevance");
    expect(screen.getByTestId("composer-input")).not.toBeDisabled();
  });

  it("Stop aborts the stream and keeps the partial answer as incomplete", async () => {
    let signal: AbortSignal | undefined;
    mockApi([
      (_u, init) => {
        signal = init.signal!;
        return hangingStream([sse("thread", { thread_id: "t2", message_id: "m" }), sse("token", { delta: "Partial" })], init.signal!);
      },
    ]);
    await renderApp();
    send("Long question");
    await waitFor(() => expect(screen.getByText("Partial")).toBeInTheDocument());
    expect(screen.getByTestId("composer-input")).toBeDisabled();
    fireEvent.click(screen.getByTestId("stop-button"));
    expect(signal?.aborted).toBe(true);
    await waitFor(() => expect(screen.getAllByTestId("message")[1]).toHaveAttribute("data-status", "incomplete"));
    expect(screen.getByTestId("message-incomplete")).toBeInTheDocument();
    expect(screen.queryByTestId("stop-button")).toBeNull();
  });

  it("shows an error event inline", async () => {
    mockApi([
      () =>
        streamResponse([
          sse("thread", { thread_id: "t3", message_id: "m" }),
          sse("error", { code: "llm_unreachable", message: "Ollama is not running. Start it with `ollama serve`." }),
        ]),
    ]);
    await renderApp();
    send("hi");
    const box = await screen.findByTestId("error-box");
    expect(box).toHaveTextContent("Ollama is not running");
    expect(screen.queryByTestId("retry-button")).toBeNull();
  });

  it("a dropped connection offers Retry, which resends the message", async () => {
    const calls = mockApi([
      () => streamResponse([sse("thread", { thread_id: "t4", message_id: "m" }), sse("token", { delta: "Half" })]),
      () => streamResponse([sse("thread", { thread_id: "t4", message_id: "m2" }), sse("token", { delta: "Whole" }), sse("done", {})]),
    ]);
    await renderApp();
    send("Again?");
    const box = await screen.findByTestId("error-box");
    expect(box).toHaveTextContent(/connection/i);
    await act(async () => fireEvent.click(screen.getByTestId("retry-button")));
    await waitFor(() => expect(screen.getByText("Whole")).toBeInTheDocument());
    expect(screen.queryByTestId("error-box")).toBeNull();
    expect(screen.getAllByTestId("message")).toHaveLength(2);
    const bodies = calls.filter((c) => c.url === "/api/chat").map((c) => JSON.parse(c.init.body as string));
    expect(bodies[1]).toEqual({ thread_id: "t4", message: "Again?" });
  });

  it("shows a 400 response as an inline error", async () => {
    mockApi([() => jsonResponse({ status_code: 400, detail: "Message too long" }, 400)]);
    await renderApp();
    send("x");
    expect(await screen.findByTestId("error-box")).toHaveTextContent("Message too long");
  });
});
