import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
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

/** Chat streams in order; `routes` answer other URLs first (exact path, or a prefix ending in "*"). */
function mockApi(chat: Handler[], routes: Record<string, Handler> = {}) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetchMock = vi.fn(async (url: string, init: RequestInit = {}) => {
    calls.push({ url, init });
    const method = init.method ?? "GET";
    for (const [key, h] of Object.entries(routes)) {
      const [m, path] = key.includes(" ") ? key.split(" ") : ["GET", key];
      if (m === method && (path.endsWith("*") ? url.startsWith(path.slice(0, -1)) : url === path)) return h(url, init);
    }
    const boot = bootResponse(url);
    if (boot) return boot;
    if (url === "/api/health") return jsonResponse(HEALTH);
    if (url === "/api/threads") return jsonResponse({ threads: [] });
    if (url === "/api/models") return jsonResponse({ models: [{ name: "llama3.2" }, { name: "qwen3" }], default: "llama3.2", provider: "ollama" });
    if (url.startsWith("/api/documents")) return jsonResponse({ documents: [] });
    if (url.startsWith("/api/suggestions")) return jsonResponse({ questions: [] });
    if (url === "/api/chat") {
      const h = chat.shift();
      if (!h) throw new Error("unexpected chat call");
      return h(url, init);
    }
    // A thread the test did not describe: the page keeps what it shows.
    if (url.startsWith("/api/threads/") && method === "GET") return jsonResponse({ status_code: 404, detail: "not found" }, 404);
    if (/^\/api\/threads\/[^/]+\/stop$/.test(url)) return jsonResponse({ stopped: true });
    throw new Error(`unmocked ${method} ${url}`);
  });
  vi.stubGlobal("fetch", fetchMock);
  return calls;
}

/** Render the app and wait for the session check at boot. */
function openOptions() {
  fireEvent.click(screen.getByTestId("options-button"));
  expect(screen.getByTestId("options-button")).toHaveAttribute("aria-expanded", "true");
}

async function renderApp() {
  render(<App />);
  await screen.findByTestId("app-nav");
}

beforeEach(() => {
  window.history.replaceState(null, "", "/");
  window.sessionStorage.clear();
});
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

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
    expect(screen.getByTestId("cite-popover")).toHaveAttribute("data-n", "1");
    expect(screen.getByTestId("composer-input")).not.toBeDisabled();
    expect(screen.getByTestId("chat-live")).toHaveTextContent("The answer is complete.");
  });

  it("Stop asks the server to stop, then closes the stream; the answer stays, incomplete", async () => {
    let signal: AbortSignal | undefined;
    const calls = mockApi([
      (_u, init) => {
        signal = init.signal!;
        return hangingStream([sse("thread", { thread_id: "t2", message_id: "m" }), sse("token", { delta: "Partial" })], init.signal!);
      },
    ]);
    await renderApp();
    send("Long question");
    await waitFor(() => expect(screen.getByText("Partial")).toBeInTheDocument());
    expect(screen.getByTestId("composer-input")).toBeEnabled(); // the next draft can be typed
    await act(async () => fireEvent.click(screen.getByTestId("stop-button")));
    expect(calls.some((c) => c.url === "/api/threads/t2/stop" && c.init.method === "POST")).toBe(true);
    await waitFor(() => expect(signal?.aborted).toBe(true));
    await waitFor(() => expect(screen.getAllByTestId("message")[1]).toHaveAttribute("data-status", "incomplete"));
    expect(screen.getByTestId("message-incomplete")).toBeInTheDocument();
    expect(screen.queryByTestId("stop-button")).toBeNull();
  });

  it("Escape stops the answer", async () => {
    const calls = mockApi([(_u, init) => hangingStream([sse("thread", { thread_id: "t5", message_id: "m" }), sse("token", { delta: "Going" })], init.signal!)]);
    await renderApp();
    send("Question");
    await screen.findByText("Going");
    await act(async () => fireEvent.keyDown(window, { key: "Escape" }));
    expect(calls.some((c) => c.url === "/api/threads/t5/stop")).toBe(true);
    await waitFor(() => expect(screen.getAllByTestId("message")[1]).toHaveAttribute("data-status", "incomplete"));
  });

  it("leaving the page closes the stream without stopping the answer; Chat comes back to the thread and attaches", async () => {
    let signal: AbortSignal | undefined;
    const thread = {
      id: "t6",
      title: "Ports",
      created_at: "",
      updated_at: "",
      running_message_id: "m6",
      messages: [
        { id: "q6", role: "user", content: "What port?", status: "complete", created_at: "" },
        { id: "m6", role: "assistant", content: "It is", status: "streaming", created_at: "" },
      ],
    };
    const calls = mockApi(
      [
        (_u, init) => {
          signal = init.signal!;
          return hangingStream([sse("thread", { thread_id: "t6", message_id: "m6" }), sse("token", { delta: "It is" })], init.signal!);
        },
      ],
      {
        "/api/threads/t6": () => jsonResponse(thread),
        "/api/threads/t6/stream*": () => {
          // once replayed, the stored thread has the whole answer
          thread.running_message_id = null as unknown as string;
          thread.messages[1] = { ...thread.messages[1], content: "It is 11434.", status: "complete" };
          return streamResponse([
            "id: m6:1\n" + sse("thread", { thread_id: "t6", message_id: "m6" }),
            "id: m6:2\n" + sse("token", { delta: "It is 11434." }),
            "id: m6:3\n" + sse("done", { message_id: "m6" }),
          ]);
        },
      },
    );
    await renderApp();
    send("What port?");
    await screen.findByText("It is");
    await act(async () => fireEvent.click(screen.getByRole("link", { name: "Documents" })));
    expect(signal?.aborted).toBe(true);
    expect(calls.some((c) => c.url.endsWith("/stop"))).toBe(false);
    await act(async () => fireEvent.click(screen.getByRole("link", { name: "Chat" })));
    await waitFor(() => expect(window.location.pathname).toBe("/chat/t6"));
    await waitFor(() => expect(screen.getAllByTestId("message")[1]).toHaveTextContent("It is 11434."));
    expect(screen.getAllByTestId("message")).toHaveLength(2); // replayed, not appended
    const attach = calls.find((c) => c.url.startsWith("/api/threads/t6/stream"))!;
    expect(attach.url).toBe("/api/threads/t6/stream?after=m6%3A0");
    expect((attach.init.headers as Record<string, string>)["Last-Event-ID"]).toBe("m6:0");
  });

  it("a question while an answer runs gets the busy message and stays in the box", async () => {
    mockApi([() => jsonResponse({ status_code: 409, code: "conflict", detail: "an answer is being generated" }, 409)]);
    await renderApp();
    send("Second question");
    expect(await screen.findByTestId("composer-notice")).toHaveTextContent("An answer is being generated");
    expect(screen.getByTestId("composer-input")).toHaveValue("Second question");
    expect(screen.queryAllByTestId("message")).toHaveLength(0);
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

  it("a dropped connection re-attaches from the last event; when that fails too, Retry re-reads the thread", async () => {
    const stored = {
      id: "t4",
      title: "T",
      created_at: "",
      updated_at: "",
      messages: [
        { id: "q", role: "user", content: "Again?", status: "complete", created_at: "" },
        { id: "m", role: "assistant", content: "Half and Whole", status: "complete", created_at: "" },
      ],
    };
    let attaches = 0;
    let reads = 0;
    const calls = mockApi([() => streamResponse(["id: m:1\n" + sse("thread", { thread_id: "t4", message_id: "m" }), "id: m:2\n" + sse("token", { delta: "Half" })])], {
      "/api/threads/t4/stream*": () => {
        attaches++;
        return streamResponse([], { endWithError: true });
      },
      "/api/threads/t4": () => {
        reads++;
        if (reads === 1) throw new TypeError("network error"); // the server is still unreachable
        return jsonResponse(stored);
      },
    });
    await renderApp();
    send("Again?");
    const box = await screen.findByTestId("error-box");
    expect(box).toHaveTextContent(/connection/i);
    expect(attaches).toBe(1);
    expect(calls.find((c) => c.url.startsWith("/api/threads/t4/stream"))!.url).toContain("after=m%3A2");
    await act(async () => fireEvent.click(screen.getByTestId("retry-button")));
    await waitFor(() => expect(screen.getByText("Half and Whole")).toBeInTheDocument());
    expect(screen.queryByTestId("error-box")).toBeNull();
    expect(calls.filter((c) => c.url === "/api/chat")).toHaveLength(1); // not asked twice
  });

  it("a 400 is shown above the box and the text is kept; the limit it names drives the counter", async () => {
    const detail = "message is too long (12 characters; the limit is 10, shorten it)";
    mockApi([() => jsonResponse({ status_code: 400, code: "bad_request", detail }, 400)]);
    await renderApp();
    send("x".repeat(12));
    expect(await screen.findByTestId("composer-notice")).toHaveTextContent("the limit is 10");
    expect(screen.getByTestId("composer-input")).toHaveValue("x".repeat(12));
    expect(screen.getByTestId("char-count")).toHaveTextContent("12 / 10 — 2 too many");
    expect(screen.getByTestId("send-button")).toBeDisabled();
  });
});

describe("ChatPage: retrieval controls, actions and tabs", () => {
  const detail = (over: Record<string, unknown> = {}) => ({
    id: "t7",
    title: "Apples",
    created_at: "",
    updated_at: "",
    running_message_id: null,
    settings: { document_ids: ["d9"], search_mode: "keyword", rerank: null, model: "qwen3" },
    messages: [
      { id: "q1", role: "user", content: "Apples?", status: "complete", created_at: "", siblings: ["q1"] },
      { id: "a1", role: "assistant", content: "Four.", status: "complete", created_at: "", siblings: ["a0", "a1"] },
    ],
    ...over,
  });

  it("/chat?document=<id> preselects that document; the choices go with the question and are saved on the new thread", async () => {
    window.history.replaceState(null, "", "/chat?document=d9");
    const calls = mockApi([() => streamResponse([sse("thread", { thread_id: "t8", message_id: "m" }), sse("done", {})])], {
      "/api/documents/d9": () => jsonResponse({ id: "d9", title: "Recipes", filename: "recipes.md" }),
      "PATCH /api/threads/t8": () => jsonResponse({ id: "t8", title: "x", created_at: "", updated_at: "" }),
    });
    await renderApp();
    // the options are one button by the message box; their state shows as a chip when not the defaults
    expect(screen.queryByTestId("chat-controls")).toBeNull();
    expect(screen.getByTestId("options-summary")).toHaveTextContent("1 document");
    openOptions();
    expect(await screen.findByTestId("scope-chip")).toHaveTextContent("Recipes");
    fireEvent.change(screen.getByTestId("chat-mode"), { target: { value: "vector" } });
    await waitFor(() => expect(screen.getByTestId("chat-model")).toHaveTextContent("Default (llama3.2)"));
    fireEvent.change(screen.getByTestId("chat-model"), { target: { value: "qwen3" } });
    send("How many apples?");
    await waitFor(() => expect(calls.some((c) => c.url === "/api/threads/t8" && c.init.method === "PATCH")).toBe(true));
    const body = JSON.parse(calls.find((c) => c.url === "/api/chat")!.init.body as string);
    expect(body).toEqual({ message: "How many apples?", document_ids: ["d9"], search_mode: "vector", model: "qwen3" });
    const patch = JSON.parse(calls.find((c) => c.init.method === "PATCH")!.init.body as string);
    expect(patch.settings).toMatchObject({ document_ids: ["d9"], search_mode: "vector", model: "qwen3" });
  });

  it("a question whose scope names a deleted document: the 404 takes it out of the scope and keeps the question", async () => {
    window.history.replaceState(null, "", "/chat/t7");
    const gone = () =>
      jsonResponse(
        { status_code: 404, code: "not_found", detail: "document d9 not found", extra: { kind: "document", ids: ["d9"] } },
        404,
      );
    const calls = mockApi([gone], {
      "/api/threads": () => jsonResponse({ threads: [detail()] }),
      "/api/threads/t7": () => jsonResponse(detail()),
      "/api/documents/d9": () => jsonResponse({ status_code: 404, code: "not_found", detail: "document d9 not found" }, 404),
      "PATCH /api/threads/t7": () => jsonResponse(detail({ settings: { search_mode: "keyword", model: "qwen3" } })),
    });
    await renderApp();
    expect(await screen.findByText("Four.")).toBeInTheDocument();
    send("And pears?");
    expect(await screen.findByTestId("composer-notice")).toHaveTextContent("taken out of the scope");
    expect(screen.getByTestId("composer-input")).toHaveValue("And pears?");
    await waitFor(() => expect(calls.some((c) => c.init.method === "PATCH")).toBe(true));
    const patch = JSON.parse(calls.find((c) => c.init.method === "PATCH")!.init.body as string);
    expect(patch.settings.document_ids).toBeNull();
    expect(patch.settings.search_mode).toBe("keyword");
  });

  it("a thread's saved settings come back; changing one saves it; regenerate and branches use the thread", async () => {
    window.history.replaceState(null, "", "/chat/t7");
    let regenerated = false;
    const again = { id: "a2", role: "assistant", content: "Again.", status: "complete", created_at: "", siblings: ["a0", "a1", "a2"] };
    const chat = () => {
      regenerated = true;
      return streamResponse([sse("thread", { thread_id: "t7", message_id: "a2" }), sse("token", { delta: "Again." }), sse("done", {})]);
    };
    const calls = mockApi([chat], {
      "/api/threads": () => jsonResponse({ threads: [detail()] }),
      "/api/threads/t7": () => jsonResponse(regenerated ? detail({ messages: [detail().messages[0], again] }) : detail()),
      "/api/documents/d9": () => jsonResponse({ id: "d9", title: "Recipes", filename: "recipes.md" }),
      "PATCH /api/threads/t7": () => jsonResponse(detail()),
      "POST /api/threads/t7/branch": () =>
        jsonResponse(detail({ messages: [detail().messages[0], { ...detail().messages[1], id: "a0", content: "Earlier." }] })),
    });
    await renderApp();
    expect(await screen.findByText("Four.")).toBeInTheDocument();
    await waitFor(() => expect(screen.getByTestId("options-summary")).toHaveTextContent("1 document · Keyword · qwen3"));
    openOptions();
    await waitFor(() => expect(screen.getByTestId("chat-mode")).toHaveValue("keyword"));
    expect(document.title).toContain("Apples");
    fireEvent.click(screen.getByTestId("chat-rerank"));
    await waitFor(() => expect(calls.some((c) => c.init.method === "PATCH")).toBe(true));
    expect(JSON.parse(calls.find((c) => c.init.method === "PATCH")!.init.body as string).settings.rerank).toBe(true);
    fireEvent.click(screen.getByTestId("sibling-prev"));
    expect(await screen.findByText("Earlier.")).toBeInTheDocument();
    expect(JSON.parse(calls.find((c) => c.url.endsWith("/branch"))!.init.body as string)).toEqual({ message_id: "a0" });
    await act(async () => fireEvent.click(screen.getByTestId("regenerate")));
    expect(await screen.findByText("Again.")).toBeInTheDocument();
    await waitFor(() => expect(screen.getByTestId("sibling-position")).toHaveTextContent("3/3")); // re-read after the answer
    const body = JSON.parse(calls.find((c) => c.url === "/api/chat")!.init.body as string);
    expect(body).toMatchObject({ thread_id: "t7", regenerate_id: "a0", search_mode: "keyword", rerank: true, model: "qwen3" });
  });

  it("collections are chosen in the picker: collection_ids go with the question only while one is chosen", async () => {
    const collection = { id: "c1", name: "Handbooks", description: null, owner: { id: "u", username: "a" }, role: "owner", document_count: 1, created_at: "" };
    const answer = (id: string) => () => streamResponse([sse("thread", { thread_id: "t9", message_id: id }), sse("token", { delta: `Yes ${id}.` }), sse("done", {})]);
    const calls = mockApi([answer("m1"), answer("m2")], {
      "/api/collections": () => jsonResponse({ collections: [collection] }),
      "PATCH /api/threads/t9": () => jsonResponse({ id: "t9", title: "x", created_at: "", updated_at: "" }),
    });
    await renderApp();
    openOptions();
    fireEvent.click(screen.getByTestId("scope-button"));
    fireEvent.click(await screen.findByRole("checkbox", { name: /Handbooks/ }));
    expect(screen.getByTestId("scope-chip")).toHaveTextContent("Handbooks");
    send("Holidays?");
    await screen.findByText("Yes m1.");
    const bodies = () => calls.filter((c) => c.url === "/api/chat").map((c) => JSON.parse(c.init.body as string));
    expect(bodies()[0]).toEqual({ message: "Holidays?", collection_ids: ["c1"] });
    fireEvent.click(screen.getByRole("button", { name: "Remove Handbooks" }));
    send("And now?");
    await screen.findByText("Yes m2.");
    expect(bodies()[1]).toEqual({ thread_id: "t9", message: "And now?" });
  });

  it("rerank is disabled, with the reason, while the LLM is down", async () => {
    mockApi([], { "/api/health": () => jsonResponse({ ...HEALTH, status: "degraded", llm: { ...HEALTH.llm, reachable: false } }) });
    await renderApp();
    openOptions();
    await waitFor(() => expect(screen.getByTestId("chat-rerank")).toBeDisabled());
    expect(screen.getByTestId("chat-rerank")).toHaveAccessibleDescription(/Rerank needs the language model/);
  });

  it("another tab's news refetches the list; its answer in this thread is attached", async () => {
    window.history.replaceState(null, "", "/chat/t7");
    let lists = 0;
    let running = false;
    const calls = mockApi([], {
      "/api/threads": () => {
        lists++;
        return jsonResponse({ threads: [detail()] });
      },
      "/api/threads/t7": () => {
        if (!running) return jsonResponse(detail());
        const more = [
          { id: "q3", role: "user", content: "More?", status: "complete", created_at: "" },
          { id: "a3", role: "assistant", content: "From the other tab.", status: "streaming", created_at: "" },
        ];
        return jsonResponse(detail({ running_message_id: "a3", messages: [...detail().messages, ...more] }));
      },
      "/api/documents/d9": () => jsonResponse({ id: "d9", title: "Recipes", filename: "recipes.md" }),
      "/api/threads/t7/stream*": () => new Response(new ReadableStream(), { headers: { "Content-Type": "text/event-stream" } }),
    });
    await renderApp();
    await screen.findByText("Four.");
    const before = lists;
    const tab = new BroadcastChannel("ragchat");
    tab.postMessage({ type: "threads", tab: "other" });
    await waitFor(() => expect(lists).toBeGreaterThan(before));
    running = true;
    tab.postMessage({ type: "answer-started", thread_id: "t7", tab: "other" });
    await waitFor(() => expect(calls.some((c) => c.url.startsWith("/api/threads/t7/stream?after=a3%3A0"))).toBe(true));
    await waitFor(() => expect(screen.getAllByTestId("message")).toHaveLength(4));
    expect(screen.getAllByTestId("message")[3]).toHaveAttribute("data-status", "streaming");
    expect(screen.getByTestId("stop-button")).toBeInTheDocument(); // this tab can stop it too
    tab.close();
  });
});
