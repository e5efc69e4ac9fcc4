import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "./App";
import { matchRoute } from "./lib/routes";
import { bootResponse, jsonResponse } from "./test/fixtures";

const threads = [
  { id: "t1", title: "Ports", created_at: "2024-01-01T00:00:00Z", updated_at: "2024-01-01T00:00:00Z" },
  { id: "t2", title: "Other", created_at: "2024-01-01T00:00:00Z", updated_at: "2024-01-01T00:00:00Z" },
];

function mockApi() {
  const fetchMock = vi.fn(async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? "GET";
    const boot = bootResponse(url);
    if (boot) return boot;
    if (url === "/api/health")
      return jsonResponse({
        status: "ok",
        llm: { provider: "ollama", reachable: true, model: "m", model_available: true, message: null, context_length: null },
      });
    if (url === "/api/threads") return jsonResponse({ threads });
    if (url === "/api/documents") return jsonResponse({ documents: [] });
    if (url.startsWith("/api/threads/") && method === "PATCH")
      return jsonResponse({ ...threads[0], ...JSON.parse(init.body as string) });
    if (url.startsWith("/api/threads/") && method === "DELETE") return new Response(null, { status: 204 });
    if (url === "/api/threads/t1")
      return jsonResponse({
        ...threads[0],
        messages: [
          { id: "u", role: "user", content: "Which port?", status: "complete", tool_calls: [], tool_results: [], error: null, created_at: "" },
          { id: "a", role: "assistant", content: "11434", status: "complete", tool_calls: [], tool_results: [], error: null, created_at: "" },
        ],
      });
    throw new Error(`unmocked ${method} ${url}`);
  });
  vi.stubGlobal("fetch", fetchMock);
  return fetchMock;
}

/** Render the app and wait for the session check at boot. */
async function renderApp() {
  render(<App />);
  await screen.findByTestId("app-nav");
}

beforeEach(() => window.history.replaceState(null, "", "/"));
afterEach(() => vi.unstubAllGlobals());

describe("matchRoute", () => {
  it("maps paths to pages", () => {
    expect(matchRoute("/")).toEqual({ page: "chat", threadId: null });
    expect(matchRoute("/chat/abc%20d")).toEqual({ page: "chat", threadId: "abc d" });
    expect(matchRoute("/documents/")).toEqual({ page: "documents", threadId: null });
    expect(matchRoute("/search")).toEqual({ page: "search", threadId: null });
    expect(matchRoute("/nope")).toEqual({ page: "notfound", threadId: null });
  });
});

describe("App", () => {
  it("navigates with the top nav", async () => {
    mockApi();
    await renderApp();
    fireEvent.click(screen.getByTestId("nav-documents"));
    expect(window.location.pathname).toBe("/documents");
    expect(await screen.findByTestId("documents-empty")).toBeInTheDocument();
    expect(screen.getByTestId("nav-documents")).toHaveAttribute("aria-current", "page");
    fireEvent.click(screen.getByTestId("nav-search"));
    expect(screen.getByTestId("search-input")).toBeInTheDocument();
  });

  it("opens a thread from the list and shows its history", async () => {
    mockApi();
    await renderApp();
    const rows = await screen.findAllByTestId("thread-item");
    fireEvent.click(within(rows[0]).getByTestId("thread-select"));
    expect(window.location.pathname).toBe("/chat/t1");
    await waitFor(() => expect(screen.getAllByTestId("message")).toHaveLength(2));
    expect(screen.getByTestId("chat-title")).toHaveTextContent("Ports");
  });

  it("renames a thread inline", async () => {
    const fetchMock = mockApi();
    await renderApp();
    const [row] = await screen.findAllByTestId("thread-item");
    fireEvent.click(within(row).getByTestId("thread-rename"));
    const input = screen.getByTestId("thread-rename-input");
    fireEvent.change(input, { target: { value: "Renamed" } });
    fireEvent.submit(input.closest("form")!);
    await waitFor(() => expect(screen.getAllByTestId("thread-title")[0]).toHaveTextContent("Renamed"));
    const patches = fetchMock.mock.calls.filter(([, i]) => i?.method === "PATCH");
    expect(patches).toHaveLength(1);
    expect(JSON.parse(patches[0][1]!.body as string)).toEqual({ title: "Renamed" });
  });

  it("deletes a thread after confirmation", async () => {
    const fetchMock = mockApi();
    await renderApp();
    const [row] = await screen.findAllByTestId("thread-item");
    fireEvent.click(within(row).getByTestId("thread-delete"));
    fireEvent.click(screen.getByTestId("thread-delete-confirm"));
    await waitFor(() => expect(screen.getAllByTestId("thread-item")).toHaveLength(1));
    expect(fetchMock).toHaveBeenCalledWith("/api/threads/t1", expect.objectContaining({ method: "DELETE" }));
  });
});
