import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "../App";
import { chunk, jsonResponse, sse, streamResponse } from "../test/fixtures";
import { mockServer, on, session } from "../test/server";

const COLLECTIONS = [
  { id: "c1", name: "Handbooks", description: null, owner: { id: "u-admin", username: "admin" }, role: "owner", document_count: 1, created_at: "" },
  { id: "c2", name: "Legal", description: null, owner: { id: "u-bob", username: "bob" }, role: "read", document_count: 2, created_at: "" },
];

const SEARCH = {
  chunks: [chunk()],
  documents: [],
  query: "holiday",
  mode: "hybrid",
  reranked: false,
  timing_ms: { total_ms: 3 },
  has_embeddings: true,
  confidence: { label: "high", best_similarity: 0.8, insufficient_confidence: false },
};

function server() {
  return mockServer(
    on("GET", "/api/auth/session", () => jsonResponse(session())),
    on("GET", "/api/collections", () => jsonResponse({ collections: COLLECTIONS })),
    on("GET", "/api/search", () => jsonResponse(SEARCH)),
    on("POST", "/api/chat", () =>
      streamResponse([sse("thread", { thread_id: "t1", message_id: "m1" }), sse("token", { delta: "Yes." }), sse("done", {})]),
    ),
    on("GET", "/api/threads/t1", () => jsonResponse({ id: "t1", title: "T", created_at: "", updated_at: "", messages: [] })),
  );
}

beforeEach(() => window.history.replaceState(null, "", "/"));
afterEach(() => vi.unstubAllGlobals());

describe("collection filter", () => {
  it("search sends collection_ids for the chosen collection and keeps it in the URL", async () => {
    window.history.replaceState(null, "", "/search?q=holiday");
    const srv = server();
    render(<App />);
    const filter = await screen.findByTestId("search-collection");
    expect(srv.find("GET", "/api/search")[0].url).toBe("/api/search?q=holiday");
    expect([...filter.querySelectorAll("option")].map((o) => o.textContent)).toEqual(["All documents", "Handbooks", "Legal"]);
    fireEvent.change(filter, { target: { value: "c2" } });
    await waitFor(() => expect(srv.find("GET", "/api/search")).toHaveLength(2));
    expect(srv.find("GET", "/api/search")[1].url).toBe("/api/search?q=holiday&collection_ids=c2");
    expect(new URLSearchParams(window.location.search).get("collection")).toBe("c2");
  });
});
