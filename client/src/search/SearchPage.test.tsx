import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { SearchResponse } from "../api/types";
import { chunk, confidence, jsonResponse } from "../test/fixtures";
import { parseSearchParams, SearchPage } from "./SearchPage";

const response = (over: Partial<SearchResponse> = {}): SearchResponse => ({
  chunks: [chunk({ content: "Ollama listens on port 11434." }), chunk({ id: 2, document_id: "d2", title: "Other", content: "Ports." })],
  documents: [
    { document_id: "d1", filename: "guide.pdf", title: "User Guide", max_score: 0.82, matched_chunks: 1, best_chunk: chunk() },
    { document_id: "d2", filename: "o.md", title: "Other", max_score: 0.5, matched_chunks: 1, best_chunk: chunk({ id: 2 }) },
  ],
  query: "ollama port",
  mode: "hybrid",
  reranked: false,
  timing_ms: { embed_ms: 3, vector_ms: 2, keyword_ms: 1, fuse_ms: 0.1, rerank_ms: 0, expand_ms: 0, total_ms: 6.4 },
  has_embeddings: true,
  confidence: confidence(),
  ...over,
});

beforeEach(() => window.history.replaceState(null, "", "/search"));
afterEach(() => vi.unstubAllGlobals());

describe("parseSearchParams", () => {
  it("leaves absent/invalid mode and rerank to the server default", () => {
    expect(parseSearchParams(new URLSearchParams(""))).toEqual({ q: "", mode: null, rerank: null });
    expect(parseSearchParams(new URLSearchParams("q=x&mode=vector&rerank=true"))).toEqual({ q: "x", mode: "vector", rerank: true });
    expect(parseSearchParams(new URLSearchParams("rerank=false")).rerank).toBe(false);
    expect(parseSearchParams(new URLSearchParams("mode=nope")).mode).toBeNull();
  });
});

describe("SearchPage", () => {
  it("debounces typing into the URL, searches, and shows results by document", async () => {
    const fetchMock = vi.fn(async (_url: string) => jsonResponse(response()));
    vi.stubGlobal("fetch", fetchMock);
    render(<SearchPage />);
    fireEvent.change(screen.getByTestId("search-input"), { target: { value: "ollama port" } });
    expect(fetchMock).not.toHaveBeenCalled();
    await waitFor(() => expect(window.location.search).toBe("?q=ollama+port"));
    await waitFor(() => expect(screen.getAllByTestId("search-result")).toHaveLength(2));
    expect(fetchMock.mock.calls[0][0]).toBe("/api/search?q=ollama+port");
    expect(screen.getByTestId("search-mode-hybrid")).toHaveAttribute("aria-checked", "true");
    expect(screen.getByTestId("rerank-toggle")).not.toBeChecked();
    expect(screen.getByTestId("search-timing")).toHaveTextContent("2 results in 6 ms");
    expect(screen.getAllByTestId("search-result")[0]).toHaveAttribute("data-kind", "document");

    fireEvent.click(screen.getByTestId("search-tab-chunks"));
    const rows = screen.getAllByTestId("search-result");
    expect(rows[0]).toHaveAttribute("data-kind", "chunk");
    expect([...rows[0].querySelectorAll("mark")].map((m) => m.textContent)).toEqual(["Ollama", "port"]);
  });

  it("keeps mode and rerank in the URL and refetches", async () => {
    window.history.replaceState(null, "", "/search?q=port");
    const fetchMock = vi.fn(async (url: string) => {
      const p = new URL(url, "http://x").searchParams;
      return jsonResponse(response({ mode: (p.get("mode") as "keyword") ?? "hybrid", reranked: p.get("rerank") === "true" }));
    });
    vi.stubGlobal("fetch", fetchMock);
    render(<SearchPage />);
    await screen.findAllByTestId("search-result");
    fireEvent.click(screen.getByTestId("search-mode-keyword"));
    fireEvent.click(screen.getByTestId("rerank-toggle"));
    expect(new URLSearchParams(window.location.search).get("mode")).toBe("keyword");
    expect(new URLSearchParams(window.location.search).get("rerank")).toBe("true");
    await waitFor(() =>
      expect(fetchMock.mock.calls.at(-1)![0]).toBe("/api/search?q=port&mode=keyword&rerank=true"),
    );
    expect(screen.getByTestId("search-mode-keyword")).toHaveAttribute("aria-checked", "true");
    // the refetch's answer renders after the request went out: wait for it, not for the request
    await waitFor(() => expect(screen.getByTestId("search-mode-badge")).toHaveTextContent("Keyword + Reranked"));
  });

  it("says when there are no documents yet", async () => {
    window.history.replaceState(null, "", "/search?q=x");
    vi.stubGlobal("fetch", vi.fn(async (_url: string) => jsonResponse(response({ chunks: [], documents: [], has_embeddings: false }))));
    render(<SearchPage />);
    expect(await screen.findByTestId("search-empty")).toHaveAttribute("data-reason", "no-documents");
  });

  it("says when nothing matched", async () => {
    window.history.replaceState(null, "", "/search?q=zebra");
    vi.stubGlobal("fetch", vi.fn(async (_url: string) => jsonResponse(response({ chunks: [], documents: [], query: "zebra" }))));
    render(<SearchPage />);
    const empty = await screen.findByTestId("search-empty");
    expect(empty).toHaveAttribute("data-reason", "no-results");
    expect(empty).toHaveTextContent("No results for ‘zebra’");
  });

  it("shows a 400 detail", async () => {
    window.history.replaceState(null, "", "/search?q=x");
    vi.stubGlobal("fetch", vi.fn(async () => jsonResponse({ status_code: 400, detail: "bad mode" }, 400)));
    render(<SearchPage />);
    expect(await screen.findByTestId("search-error")).toHaveTextContent("bad mode");
  });
});
