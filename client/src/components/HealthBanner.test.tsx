import { act, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { EmbeddingsStatus, Health } from "../api/types";
import { jsonResponse } from "../test/fixtures";
import { requestHealthCheck } from "../lib/health";
import { HEALTH_POLL_MS, HealthBanner, PROBLEM_POLL_MS, embeddingsNotice, healthProblem } from "./HealthBanner";

const MISMATCH_MSG =
  "The stored vectors were made by all-MiniLM-L6-v2 (sentence-transformers, 384 dims), but EMBED_MODEL is " +
  "nomic-embed-text (ollama). Search keeps using all-MiniLM-L6-v2; run `ragchat reembed` to switch to " +
  "nomic-embed-text without downtime.";
const REEMBED_MSG =
  "Re-embedding with nomic-embed-text (ollama); search uses all-MiniLM-L6-v2 (sentence-transformers, 384 dims) until it finishes.";

const STORED = { provider: "sentence-transformers", model: "all-MiniLM-L6-v2", dim: 384 };
const NOMIC = { provider: "ollama", model: "nomic-embed-text" };

function embeddings(status: EmbeddingsStatus["status"], message: string | null = null): EmbeddingsStatus {
  if (status === "ok") return { configured: STORED, stored: STORED, building: null, status, message };
  return {
    configured: NOMIC,
    stored: STORED,
    building: status === "reembedding" ? { ...NOMIC, dim: 768 } : null,
    status,
    message,
  };
}

const health = (
  reachable: boolean,
  model_available: boolean,
  message: string | null = null,
  over: Partial<Health> & { provider?: string } = {},
): Health => {
  const { provider = "ollama", ...rest } = over;
  return {
    status: "ok",
    database: "ok",
    db: { embedded: true, ok: true, latency_ms: 0.4, restarts: 0, error: null, halfvec_index: true, iterative_scan: true },
    embedder: "all-MiniLM-L6-v2 (sentence-transformers)",
    chat_max_message_chars: 8000,
    embeddings: embeddings("ok"),
    llm: { provider, reachable, model: "llama3.2", model_available, message, context_length: null },
    ...rest,
  };
};

const progress = (done: number, total: number, over: Record<string, unknown> = {}) => ({
  state: "building",
  target: "nomic-embed-text (ollama, 768 dims)",
  done,
  total,
  percent: Math.round((1000 * done) / total) / 10,
  embeddings: embeddings("reembedding", REEMBED_MSG),
  ...over,
});

type Route = (url: string) => Response | Promise<Response>;

/** fetch mock: each URL answers from its queue; the last answer repeats. */
function mockFetch(routes: Record<string, unknown[]>) {
  const fetchMock = vi.fn(async (url: string) => {
    const queue = routes[url];
    if (!queue) throw new Error(`unmocked ${url}`);
    const next = queue.length > 1 ? queue.shift() : queue[0];
    if (next instanceof Response) return next.clone();
    if (typeof next === "function") return (next as Route)(url);
    return jsonResponse(next);
  });
  vi.stubGlobal("fetch", fetchMock);
  return fetchMock;
}

const calls = (fetchMock: ReturnType<typeof mockFetch>, url: string) =>
  fetchMock.mock.calls.filter(([u]) => u === url).length;

afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe("healthProblem", () => {
  it("is null when all is well", () => expect(healthProblem(health(true, true), false)).toBeNull());

  it("flags an unreachable Ollama, preferring the server's message", () => {
    expect(healthProblem(health(false, false), false)).toEqual({
      kind: "ollama",
      text: expect.stringContaining("ollama serve"),
    });
    expect(healthProblem(health(false, false, "Run ollama serve"), false)?.text).toBe("Run ollama serve");
  });

  it("flags a missing Ollama model", () => {
    expect(healthProblem(health(true, false), false)).toEqual({
      kind: "model",
      text: expect.stringContaining("ollama pull llama3.2"),
    });
  });

  it("does not mention Ollama for an OpenAI-compatible server", () => {
    const down = healthProblem(health(false, false, null, { provider: "openai" }), false);
    expect(down?.kind).toBe("llm");
    expect(down?.text).toMatch(/^The model server is not reachable/);
    expect(down?.text).toContain("OPENAI_BASE_URL");
    expect(down?.text.toLowerCase()).not.toContain("ollama");

    const missing = healthProblem(health(true, false, null, { provider: "openai" }), false);
    expect(missing?.kind).toBe("model");
    expect(missing?.text).toContain('"llama3.2"');
    expect(missing?.text.toLowerCase()).not.toContain("ollama");
  });

  it("prefers the server's message for any provider", () => {
    const msg = "The OpenAI-compatible server at http://127.0.0.1:8080/v1 rejected the API key.";
    expect(healthProblem(health(false, false, msg, { provider: "openai" }), false)).toEqual({ kind: "llm", text: msg });
    expect(healthProblem(health(true, false, "no such model", { provider: "openai" }), false)?.text).toBe("no such model");
  });

  it("stays generic for an unknown provider", () => {
    const text = healthProblem(health(false, false, null, { provider: "vllm" }), false)?.text ?? "";
    expect(text).toMatch(/^The model server is not reachable/);
    expect(text).not.toMatch(/ollama|OPENAI/i);
  });

  it("is null without any LLM status", () => {
    expect(healthProblem({ ...health(true, true), llm: undefined } as unknown as Health, false)).toBeNull();
  });

  it("flags an unreachable server", () => expect(healthProblem(null, true)?.kind).toBe("server"));
});

describe("embeddingsNotice", () => {
  it("is null when the stored vectors match, or when unknown", () => {
    expect(embeddingsNotice(health(true, true), false)).toBeNull();
    expect(embeddingsNotice(health(true, true, null, { embeddings: null }), false)).toBeNull();
    expect(embeddingsNotice(null, false)).toBeNull();
  });

  it("shows the server's message for a mismatch or a re-embed", () => {
    expect(embeddingsNotice(health(true, true, null, { embeddings: embeddings("mismatch", MISMATCH_MSG) }), false)).toEqual({
      status: "mismatch",
      text: MISMATCH_MSG,
    });
    expect(
      embeddingsNotice(health(true, true, null, { embeddings: embeddings("reembedding", REEMBED_MSG) }), false),
    ).toEqual({ status: "reembedding", text: REEMBED_MSG });
  });

  it("builds a message when the server sends none", () => {
    const mismatch = embeddingsNotice(health(true, true, null, { embeddings: embeddings("mismatch") }), false);
    expect(mismatch?.text).toContain("all-MiniLM-L6-v2");
    expect(mismatch?.text).toContain("nomic-embed-text");
    expect(mismatch?.text).toContain("`ragchat reembed`");
    const reembed = embeddingsNotice(health(true, true, null, { embeddings: embeddings("reembedding") }), false);
    expect(reembed?.text).toMatch(/^Re-embedding with nomic-embed-text/);
  });

  it("hides while the server is unreachable (the health is stale)", () => {
    expect(embeddingsNotice(health(true, true, null, { embeddings: embeddings("mismatch", MISMATCH_MSG) }), true)).toBeNull();
  });
});

describe("HealthBanner", () => {
  it("polls every 30 s and shows/hides the banner", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const fetchMock = mockFetch({
      "/api/health": [health(true, true), health(false, false, "Ollama is not reachable")],
    });
    render(<HealthBanner />);
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(fetchMock).toHaveBeenCalledTimes(1);
    expect(screen.queryByTestId("health-banner")).toBeNull();
    await act(() => vi.advanceTimersByTimeAsync(29_999));
    expect(fetchMock).toHaveBeenCalledTimes(1);
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(fetchMock).toHaveBeenCalledTimes(2);
    const banner = screen.getByTestId("health-banner");
    expect(banner).toHaveAttribute("role", "alert");
    expect(banner).toHaveAttribute("data-kind", "ollama");
    expect(banner).toHaveTextContent("Chat unavailable: Ollama is not reachable");
  });

  it("looks again every 5 s while chat is unavailable: the banner goes soon after the LLM is back", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const fetchMock = mockFetch({ "/api/health": [health(false, false, "Ollama is not reachable"), health(true, true)] });
    render(<HealthBanner />);
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(screen.getByTestId("health-banner")).toHaveTextContent("Chat unavailable");
    await act(() => vi.advanceTimersByTimeAsync(PROBLEM_POLL_MS));
    expect(fetchMock).toHaveBeenCalledTimes(2);
    expect(screen.queryByTestId("health-banner")).toBeNull();
    // all well again: back to the slow poll
    await act(() => vi.advanceTimersByTimeAsync(PROBLEM_POLL_MS * 2));
    expect(fetchMock).toHaveBeenCalledTimes(2);
    expect(PROBLEM_POLL_MS).toBeLessThan(HEALTH_POLL_MS);
  });

  it("looks again at once when asked (an answer arrived) and when the tab comes back", async () => {
    const fetchMock = mockFetch({
      "/api/health": [health(false, false, "Ollama is not reachable"), health(true, true)],
    });
    render(<HealthBanner />);
    expect(await screen.findByTestId("health-banner")).toBeInTheDocument();
    await act(async () => requestHealthCheck());
    await waitFor(() => expect(screen.queryByTestId("health-banner")).toBeNull());
    expect(fetchMock).toHaveBeenCalledTimes(2);
    await act(async () => window.dispatchEvent(new Event("focus")));
    await waitFor(() => expect(fetchMock).toHaveBeenCalledTimes(3));
  });

  it("names the model server, not Ollama, for an OpenAI-compatible provider", async () => {
    mockFetch({ "/api/health": [health(false, false, null, { provider: "openai" })] });
    render(<HealthBanner />);
    const banner = await screen.findByTestId("health-banner");
    expect(banner).toHaveAttribute("data-kind", "llm");
    expect(banner).toHaveTextContent("Chat unavailable: The model server is not reachable");
    expect(within(banner).getByText("OPENAI_BASE_URL").tagName).toBe("CODE");
  });

  it("shows a mismatch as a non-blocking status notice, beside no error", async () => {
    mockFetch({ "/api/health": [health(true, true, null, { embeddings: embeddings("mismatch", MISMATCH_MSG) })] });
    render(<HealthBanner />);
    const notice = await screen.findByTestId("embeddings-notice");
    expect(notice).toHaveAttribute("data-status", "mismatch");
    const status = within(notice).getByRole("status");
    expect(status).toHaveTextContent("Embedding model changed:");
    expect(status).toHaveTextContent("Search keeps using all-MiniLM-L6-v2; run ragchat reembed to switch");
    expect(within(status).getByText("ragchat reembed").tagName).toBe("CODE");
    expect(screen.queryByRole("alert")).toBeNull();
    expect(screen.queryByTestId("health-banner")).toBeNull();
    expect(screen.queryByTestId("reembed-progress")).toBeNull();
  });

  it("shows both the LLM problem and the embeddings notice", async () => {
    mockFetch({
      "/api/health": [health(false, false, "Start Ollama", { embeddings: embeddings("mismatch", MISMATCH_MSG) })],
    });
    render(<HealthBanner />);
    expect(await screen.findByRole("alert")).toHaveTextContent("Start Ollama");
    expect(screen.getByTestId("embeddings-notice")).toBeInTheDocument();
  });

  it("can be dismissed with the keyboard, and comes back when the notice changes", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    mockFetch({
      "/api/health": [
        health(true, true, null, { embeddings: embeddings("mismatch", MISMATCH_MSG) }),
        health(true, true, null, { embeddings: embeddings("mismatch", MISMATCH_MSG) }),
        health(true, true, null, { embeddings: embeddings("reembedding", REEMBED_MSG) }),
      ],
      "/api/admin/reembed": [new Response(null, { status: 400 })],
    });
    const main = document.createElement("main");
    main.id = "main";
    main.tabIndex = -1;
    document.body.appendChild(main);
    try {
      render(<HealthBanner />);
      await act(() => vi.advanceTimersByTimeAsync(0));
      const button = screen.getByRole("button", { name: "Dismiss notice" });
      expect(button.tagName).toBe("BUTTON");
      button.focus();
      fireEvent.click(button); // Enter/Space on a native button
      expect(screen.queryByTestId("embeddings-notice")).toBeNull();
      expect(document.activeElement).toBe(main);
      // Same notice on the next poll: stays hidden.
      await act(() => vi.advanceTimersByTimeAsync(30_000));
      expect(screen.queryByTestId("embeddings-notice")).toBeNull();
      // A re-embed started: a new notice.
      await act(() => vi.advanceTimersByTimeAsync(30_000));
      expect(screen.getByTestId("embeddings-notice")).toHaveAttribute("data-status", "reembedding");
    } finally {
      main.remove();
    }
  });

  it("polls the re-embed progress while re-embedding, then hides when the switch is done", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const done = { ...progress(0, 0), state: "idle", target: null, percent: 100, embeddings: embeddings("ok") };
    const fetchMock = mockFetch({
      "/api/health": [health(true, true, null, { embeddings: embeddings("reembedding", REEMBED_MSG) }), health(true, true)],
      "/api/admin/reembed": [progress(336, 800), progress(604, 800), done],
    });
    render(<HealthBanner />);
    await act(() => vi.advanceTimersByTimeAsync(0));
    const notice = screen.getByTestId("embeddings-notice");
    expect(notice).toHaveAttribute("data-status", "reembedding");
    expect(within(notice).getByRole("status")).toHaveTextContent(REEMBED_MSG);
    const bar = within(notice).getByRole("progressbar", { name: "Re-embedding progress" });
    expect(bar).toHaveAttribute("aria-valuenow", "42");
    expect(bar).toHaveAttribute("aria-valuetext", "42% (336 of 800 chunks)");
    expect(screen.getByTestId("reembed-percent")).toHaveTextContent("42% · 336 of 800 chunks");
    expect(screen.getByTestId("reembed-percent")).toHaveAttribute("aria-hidden", "true");

    await act(() => vi.advanceTimersByTimeAsync(5_000));
    expect(screen.getByTestId("reembed-progress")).toHaveAttribute("aria-valuenow", "75.5");
    expect(screen.getByTestId("reembed-percent")).toHaveTextContent("75% · 604 of 800 chunks");

    // The switch finished: progress says idle and the embeddings match, so the notice goes and polling stops.
    await act(() => vi.advanceTimersByTimeAsync(5_000));
    expect(screen.queryByTestId("embeddings-notice")).toBeNull();
    const polls = calls(fetchMock, "/api/admin/reembed");
    expect(polls).toBe(3);
    await act(() => vi.advanceTimersByTimeAsync(40_000));
    expect(calls(fetchMock, "/api/health")).toBe(2);
    expect(calls(fetchMock, "/api/admin/reembed")).toBe(3);
    expect(screen.queryByTestId("embeddings-notice")).toBeNull();
  });

  it("keeps the message without progress when the progress endpoint refuses (not an admin)", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const fetchMock = mockFetch({
      "/api/health": [health(true, true, null, { embeddings: embeddings("reembedding", REEMBED_MSG) })],
      "/api/admin/reembed": [jsonResponse({ detail: "only an admin can switch the embedding model" }, 400)],
    });
    render(<HealthBanner />);
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(screen.getByTestId("embeddings-notice")).toHaveTextContent(REEMBED_MSG);
    expect(screen.queryByTestId("reembed-progress")).toBeNull();
    await act(() => vi.advanceTimersByTimeAsync(15_000));
    expect(calls(fetchMock, "/api/admin/reembed")).toBe(1);
    expect(screen.getByTestId("embeddings-notice")).toBeInTheDocument();
  });

  it("does not poll the re-embed progress for a mere mismatch", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const fetchMock = mockFetch({
      "/api/health": [health(true, true, null, { embeddings: embeddings("mismatch", MISMATCH_MSG) })],
    });
    render(<HealthBanner />);
    await act(() => vi.advanceTimersByTimeAsync(10_000));
    expect(screen.getByTestId("embeddings-notice")).toBeInTheDocument();
    expect(calls(fetchMock, "/api/admin/reembed")).toBe(0);
  });
});

describe("healthProblem with the database down", () => {
  it("names the database, not the server, when /api/health answers 503 status down", () => {
    const down = {
      status: "down",
      database: "unavailable",
      db: { ok: false, latency_ms: null, embedded: true, restarts: 1, error: "connection refused" },
      embedder: "all-MiniLM-L6-v2 (sentence-transformers)",
      embeddings: null,
      llm: { provider: "ollama", reachable: true, model: "llama3.2", model_available: true, message: null },
    } as Health;
    const problem = healthProblem(down, false);
    expect(problem?.kind).toBe("database");
    expect(problem?.text).toContain("connection refused");
    expect(problem?.text).toContain("wait a few seconds");
  });
});
