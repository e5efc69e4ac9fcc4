import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { DocumentChunk } from "../api/types";
import { jsonResponse, makeDocument } from "../test/fixtures";
import { apiError, axeViolations, mockServer, on } from "../test/server";
import { DocumentViewer } from "./DocumentViewer";
import { viewerHref } from "./links";

const chunk = (ordinal: number, over: Partial<DocumentChunk> = {}): DocumentChunk => ({
  id: 100 + ordinal,
  ordinal,
  content: `Text of chunk ${ordinal}.`,
  page: null,
  section: `Part ${Math.floor(ordinal / 10)}`,
  location: null,
  ...over,
});

const scrolled = vi.fn();
beforeEach(() => {
  Element.prototype.scrollIntoView = scrolled;
  scrolled.mockClear();
});
afterEach(() => vi.unstubAllGlobals());

describe("DocumentViewer", () => {
  it("opens a text document at the cited chunk, with locations, and loads the text around it", async () => {
    window.history.replaceState(null, "", "/documents/d1?chunk=150");
    const all = Array.from({ length: 120 }, (_, i) =>
      chunk(i, i === 50 ? { location: { sheet: "Q1", row_start: 2, row_end: 9, label: "Sheet Q1, rows 2–9" } } : {}),
    );
    const srv = mockServer(
      on("GET", "/api/documents/d1", () => jsonResponse(makeDocument({ id: "d1", title: "Budget", filename: "budget.xlsx", content_type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" }))),
      on("GET", "/api/documents/d1/chunks", (c) => {
        const qs = new URL(c.url, "http://x").searchParams;
        const limit = Number(qs.get("limit"));
        const offset = qs.get("chunk_id") ? Number(qs.get("chunk_id")) - 100 - limit / 2 : Number(qs.get("offset") ?? 0);
        return jsonResponse({ chunks: all.slice(offset, offset + limit), total: all.length, offset });
      }),
    );
    render(
      <main>
        <DocumentViewer id="d1" />
      </main>,
    );
    const cited = await screen.findByRole("article", { current: true });
    expect(cited).toHaveTextContent("Text of chunk 50.");
    expect(cited).toHaveTextContent("§ Part 5 · Sheet Q1, rows 2–9 · chunk 51");
    await waitFor(() => expect(scrolled).toHaveBeenCalled()); // a passive effect: flushed after the first paint
    expect(screen.getAllByTestId("viewer-chunk")).toHaveLength(40);
    expect(screen.getByTestId("viewer-ask")).toHaveAttribute("href", "/chat?document=d1");
    expect(screen.getByTestId("viewer-summarize")).toHaveAttribute("href", "/chat?document=d1&task=summarize");
    expect(screen.getByTestId("viewer-download")).toHaveAttribute("href", "/api/documents/d1/file");

    fireEvent.click(screen.getByTestId("viewer-earlier"));
    await waitFor(() => expect(screen.getAllByTestId("viewer-chunk")).toHaveLength(70));
    expect(srv.find("GET", "/api/documents/d1/chunks").at(-1)?.url).toBe("/api/documents/d1/chunks?offset=0&limit=30");
    expect(screen.queryByTestId("viewer-earlier")).toBeNull();
    expect(await axeViolations()).toEqual([]);
  });

  it("says a document is not found (another user's, or gone)", async () => {
    window.history.replaceState(null, "", "/documents/nope");
    mockServer(on("GET", "/api/documents/nope", () => apiError(404, "not_found", "document nope not found")));
    render(<DocumentViewer id="nope" />);
    expect(await screen.findByTestId("viewer-error")).toHaveTextContent("Document not found");
  });

  it("builds its links", () => {
    expect(viewerHref("d 1", 7, 2)).toBe("/documents/d%201?chunk=7&page=2");
    expect(viewerHref("d1")).toBe("/documents/d1");
  });
});
