import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Document } from "../api/types";
import { jsonResponse, makeDocument } from "../test/fixtures";
import { apiError } from "../test/server";
import { DocumentsPage } from "./DocumentsPage";

const failed = { status: "failed", chunks_total: null, chunks_done: 0, page_count: null } as const;
const doc = (over: Partial<Document> = {}): Document =>
  makeDocument({ ...failed, error: "embedding failed: model crashed", ...over });

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("Retry and Cancel on the documents page", () => {
  it("shows Retry on a failed document and Cancel on queued and processing ones, only for the owner", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn().mockResolvedValue(
        jsonResponse({
          documents: [
            doc(),
            doc({ id: "d2", status: "queued", error: null }),
            doc({ id: "d3", status: "processing", error: null, chunks_total: 10, chunks_done: 3 }),
            doc({ id: "d4", status: "ready", error: null }),
            doc({ id: "d5", access: "read" }),
          ],
        }),
      ),
    );
    render(<DocumentsPage />);
    const rows = await screen.findAllByTestId("document-row");
    const has = (row: HTMLElement, id: string) => row.querySelector(`[data-testid=${id}]`) !== null;
    expect(rows.map((r) => has(r, "document-retry"))).toEqual([true, false, false, false, false]);
    expect(rows.map((r) => has(r, "document-stop"))).toEqual([false, true, true, false, false]);
  });

  it("Retry queues the document again and shows the server's answer", async () => {
    const fetchMock = vi.fn(async (url: string, init?: RequestInit) =>
      init?.method === "POST" && url === "/api/documents/d1/retry"
        ? jsonResponse(doc({ status: "queued", error: null }))
        : jsonResponse({ documents: [doc()] }),
    );
    vi.stubGlobal("fetch", fetchMock);
    render(<DocumentsPage />);
    fireEvent.click(await screen.findByTestId("document-retry"));
    await waitFor(() => expect(screen.getByTestId("document-row")).toHaveAttribute("data-status", "queued"));
    expect(fetchMock).toHaveBeenCalledWith("/api/documents/d1/retry", expect.objectContaining({ method: "POST" }));
  });

  it("Cancel stops a processing document; a refusal is shown", async () => {
    let cancelled = false;
    const fetchMock = vi.fn(async (url: string, init?: RequestInit) => {
      if (init?.method === "POST" && url === "/api/documents/d1/cancel") {
        if (cancelled) return apiError(409, "conflict", "document d1 is failed: only a queued or processing one can be cancelled");
        cancelled = true;
        return jsonResponse(doc({ error: "cancelled" }));
      }
      return jsonResponse({ documents: [doc({ status: "processing", error: null, chunks_total: 10, chunks_done: 3 })] });
    });
    vi.stubGlobal("fetch", fetchMock);
    render(<DocumentsPage />);
    fireEvent.click(await screen.findByTestId("document-stop"));
    await waitFor(() => expect(screen.getByTestId("document-row")).toHaveAttribute("data-status", "failed"));
    expect(screen.getByTestId("document-error")).toHaveTextContent("cancelled");
    expect(screen.getByTestId("document-retry")).toBeInTheDocument();
  });
});
