import { act, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Health, SearchResponse } from "../api/types";
import { HealthBanner } from "../components/HealthBanner";
import { publishHealth, rerankUnavailable } from "../lib/health";
import { chunk, confidence, jsonResponse } from "../test/fixtures";
import { SearchControls } from "./SearchControls";
import { SearchPage } from "./SearchPage";

const health = (reachable: boolean): Health =>
  ({
    status: "ok",
    database: "ok",
    llm: { provider: "ollama", reachable, model: "llama3.2", model_available: reachable, message: null },
  }) as unknown as Health;

const response = (over: Partial<SearchResponse> = {}): SearchResponse => ({
  chunks: [chunk()],
  documents: [{ document_id: "d1", filename: "guide.pdf", title: "User Guide", max_score: 0.8, matched_chunks: 1, best_chunk: chunk() }],
  query: "port",
  mode: "hybrid",
  reranked: false,
  timing_ms: { embed_ms: 1, vector_ms: 1, keyword_ms: 1, fuse_ms: 0, rerank_ms: 0, expand_ms: 0, total_ms: 3 },
  has_embeddings: true,
  confidence: confidence(),
  ...over,
});

const controls = (over: Partial<Parameters<typeof SearchControls>[0]> = {}) => {
  const onRerank = vi.fn();
  render(
    <SearchControls text="" onText={() => {}} mode="hybrid" onMode={() => {}} rerank onRerank={onRerank} {...over} />,
  );
  return onRerank;
};

afterEach(() => {
  act(() => publishHealth(null));
  vi.unstubAllGlobals();
  window.history.replaceState(null, "", "/search");
});

describe("the rerank switch", () => {
  it("works while the LLM is reachable", () => {
    const onRerank = controls();
    const toggle = screen.getByTestId("rerank-toggle");
    expect(toggle).toBeEnabled();
    expect(toggle).toBeChecked();
    fireEvent.click(toggle);
    expect(onRerank).toHaveBeenCalledWith(false);
    expect(screen.queryByTestId("rerank-unavailable")).toBeNull();
  });

  it("is off and disabled, saying why, while the LLM is unreachable", () => {
    const reason = rerankUnavailable(health(false))!;
    expect(reason).toMatch(/Ollama is not reachable/);
    const onRerank = controls({ rerankUnavailable: reason });
    const toggle = screen.getByTestId("rerank-toggle");
    expect(toggle).toBeDisabled();
    expect(toggle).not.toBeChecked();
    expect(toggle).toHaveAccessibleDescription(reason);
    expect(toggle.closest("label")).toHaveAttribute("title", reason);
    fireEvent.click(toggle);
    expect(onRerank).not.toHaveBeenCalled();
  });

  it("reads the health the banner already polls, and searches without rerank while the LLM is down", async () => {
    window.history.replaceState(null, "", "/search?q=port&rerank=true");
    const fetchMock = vi.fn(async (url: string) =>
      url.startsWith("/api/health") ? jsonResponse(health(false)) : jsonResponse(response()),
    );
    vi.stubGlobal("fetch", fetchMock);
    render(
      <>
        <HealthBanner />
        <SearchPage />
      </>,
    );
    await waitFor(() => expect(screen.getByTestId("rerank-toggle")).toBeDisabled());
    expect(screen.getByTestId("rerank-unavailable")).toHaveTextContent("Rerank needs the language model");
    await waitFor(() => expect(fetchMock.mock.calls.at(-1)![0]).toBe("/api/search?q=port&rerank=false"));
    expect(fetchMock.mock.calls.filter(([u]) => String(u).startsWith("/api/health"))).toHaveLength(1);

    act(() => publishHealth(health(true))); // the next poll: back up
    expect(screen.getByTestId("rerank-toggle")).toBeEnabled();
    await waitFor(() => expect(fetchMock.mock.calls.at(-1)![0]).toBe("/api/search?q=port&rerank=true"));
  });
});

describe("the search page's warnings", () => {
  it("shows a failed or partial rerank's warning and the confidence text", async () => {
    window.history.replaceState(null, "", "/search?q=port");
    const warning = "Rerank was partial: the language model scored 2 of 6 passages; the 4 it did not score follow.";
    const rerank = { requested: true, status: "partial" as const, scored: 2, skipped: 0, candidates: 6, warning };
    vi.stubGlobal("fetch", vi.fn(async () => jsonResponse(response({ rerank, reranked: true }))));
    render(<SearchPage />);
    expect(await screen.findByTestId("rerank-warning")).toHaveTextContent(warning);
    expect(screen.getByTestId("rerank-warning")).toHaveAttribute("data-status", "partial");
    expect(screen.getByTestId("confidence-chip")).toHaveTextContent("High confidence (80%)");
    expect(screen.queryByTestId("confidence-message")).toBeNull();
  });

  it("says when nothing matches well", async () => {
    window.history.replaceState(null, "", "/search?q=port");
    vi.stubGlobal("fetch", vi.fn(async () => jsonResponse(response({ confidence: confidence("insufficient", 0.12) }))));
    render(<SearchPage />);
    expect(await screen.findByTestId("confidence-chip")).toHaveTextContent("Insufficient confidence (12%)");
    expect(screen.getByTestId("confidence-chip")).toHaveClass("chip-warn");
    expect(screen.getByTestId("confidence-message")).toHaveTextContent("No passage matches this question well");
    expect(screen.queryByTestId("rerank-warning")).toBeNull();
  });
});
