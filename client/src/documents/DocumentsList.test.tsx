import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Document } from "../api/types";
import { jsonResponse, makeDocument } from "../test/fixtures";
import { mockServer, on } from "../test/server";
import { DocumentRow } from "./DocumentRow";
import { DocumentsPage, reasonFor } from "./DocumentsPage";
import { CollectionsProvider } from "../collections/CollectionsContext";

const many = (n: number, over: Partial<Document> = {}) =>
  Array.from({ length: n }, (_, i) => makeDocument({ id: `d${i}`, title: `Doc ${i}`, filename: `doc${i}.txt`, ...over }));

beforeEach(() => window.history.replaceState(null, "", "/documents"));
afterEach(() => vi.unstubAllGlobals());

describe("documents page at scale", () => {
  it("searches, filters and pages on the server, keeping it all in the address", async () => {
    const srv = mockServer(
      on("GET", "/api/documents", (c) => {
        const qs = new URL(c.url, "http://x").searchParams;
        const offset = Number(qs.get("offset") ?? 0);
        return jsonResponse({ documents: many(qs.get("q") ? 3 : 50).slice(0, 50), total: qs.get("q") ? 3 : 120, offset });
      }),
    );
    render(<DocumentsPage />);
    expect(await screen.findAllByTestId("document-row")).toHaveLength(50);
    expect(screen.getByTestId("documents-count")).toHaveTextContent("120 documents");
    expect(screen.getByTestId("documents-range")).toHaveTextContent("1–50 of 120 · page 1 of 3");

    fireEvent.click(screen.getByTestId("documents-next"));
    await waitFor(() => expect(srv.find("GET", "/api/documents").at(-1)?.url).toBe("/api/documents?offset=50"));
    expect(window.location.search).toBe("?page=2");

    fireEvent.change(screen.getByTestId("documents-status-filter"), { target: { value: "failed" } });
    await waitFor(() => expect(srv.find("GET", "/api/documents").at(-1)?.url).toBe("/api/documents?status=failed"));
    expect(window.location.search).toBe("?status=failed"); // a new filter starts at page 1

    fireEvent.change(screen.getByTestId("documents-search"), { target: { value: "tax" } });
    await waitFor(() => expect(srv.find("GET", "/api/documents").at(-1)?.url).toBe("/api/documents?q=tax&status=failed"));
    await waitFor(() => expect(screen.getAllByTestId("document-row")).toHaveLength(3));
    expect(screen.queryByTestId("documents-pager")).toBeNull();
  }, 20_000);

  it("says when nothing matches, instead of the first-visit empty state", async () => {
    window.history.replaceState(null, "", "/documents?q=zzz");
    mockServer(on("GET", "/api/documents", () => jsonResponse({ documents: [], total: 0 })));
    render(<DocumentsPage />);
    expect(await screen.findByTestId("documents-none")).toHaveTextContent("No documents match “zzz”.");
    expect(screen.queryByTestId("documents-empty")).toBeNull();
  });

  it("deletes and retries the selected documents in one request each", async () => {
    const docs = [...many(2), makeDocument({ id: "f1", status: "failed", error: "boom", title: "Broken" })];
    const srv = mockServer(
      on("GET", "/api/documents", () => jsonResponse({ documents: docs, total: 3 })),
      on("POST", "/api/documents/bulk", (c) => {
        const { action, ids } = c.body as { action: string; ids: string[] };
        const results = ids.map((id) => ({ id, ok: action === "retry" || id !== "d1", error: id === "d1" ? "forbidden: only the document's owner can delete it" : null }));
        return jsonResponse({ results, matched: ids.length, done: results.filter((r) => r.ok).length });
      }),
    );
    render(<DocumentsPage />);
    await screen.findAllByTestId("document-row");
    fireEvent.click(screen.getByTestId("documents-select-all"));
    expect(screen.getByTestId("documents-selected")).toHaveTextContent("3 selected");
    fireEvent.click(screen.getByTestId("bulk-retry"));
    await waitFor(() => expect(srv.find("POST", "/api/documents/bulk")).toHaveLength(1));
    expect(srv.find("POST", "/api/documents/bulk")[0].body).toEqual({ action: "retry", ids: ["f1"] }); // only the failed one
    expect(await screen.findByTestId("bulk-result")).toHaveTextContent("Queued again 1 document.");

    const rows = screen.getAllByTestId("document-row");
    fireEvent.click(within(rows[0]).getByTestId("document-select"));
    fireEvent.click(within(rows[1]).getByTestId("document-select"));
    fireEvent.click(screen.getByTestId("bulk-delete"));
    fireEvent.click(screen.getByTestId("bulk-delete-confirm"));
    await waitFor(() => expect(srv.find("POST", "/api/documents/bulk")).toHaveLength(2));
    expect(srv.find("POST", "/api/documents/bulk")[1].body).toEqual({ action: "delete", ids: ["d0", "d1"] });
    expect(await screen.findByTestId("bulk-result")).toHaveTextContent(
      "Deleted 1 document. 1 not: forbidden: only the document's owner can delete it.",
    );
  });

  it("selects all N matching across pages and sends the filter, not the ids", async () => {
    window.history.replaceState(null, "", "/documents?q=note&status=failed");
    const srv = mockServer(
      on("GET", "/api/documents", () => jsonResponse({ documents: many(50, { status: "failed" }), total: 60 })),
      on("GET", "/api/collections", () => jsonResponse({ collections: [{ id: "c1", name: "Team", role: "owner", document_count: 0 }] })),
      on("POST", "/api/documents/bulk", (c) => {
        const body = c.body as { action: string };
        if (body.action === "delete") return jsonResponse({ results: [{ id: "x", ok: false, error: "forbidden: only the document's owner can delete it" }], matched: 60, done: 59 });
        return jsonResponse({ results: [], matched: 60, done: 60 });
      }),
    );
    render(
      <CollectionsProvider>
        <DocumentsPage />
      </CollectionsProvider>,
    );
    await screen.findAllByTestId("document-row");
    expect(screen.queryByTestId("documents-select-matching")).toBeNull(); // nothing selected yet
    fireEvent.click(screen.getByTestId("documents-select-all"));
    expect(screen.getByTestId("documents-selected")).toHaveTextContent("50 selected");
    fireEvent.click(screen.getByTestId("documents-select-matching"));
    expect(screen.getByTestId("documents-selected")).toHaveTextContent("All 60 matching selected");
    expect(screen.queryByTestId("bulk-rechunk")).toBeNull(); // per document: not across 60

    // Into a collection: one request with the filter.
    fireEvent.change(await screen.findByTestId("bulk-collection"), { target: { value: "c1" } });
    fireEvent.click(screen.getByTestId("bulk-collection-add"));
    await waitFor(() => expect(srv.find("POST", "/api/documents/bulk")).toHaveLength(1));
    expect(srv.find("POST", "/api/documents/bulk")[0].body).toEqual({
      action: "add_to_collection",
      filter: { q: "note", status: "failed" },
      collection_id: "c1",
    });
    expect(await screen.findByTestId("bulk-result")).toHaveTextContent("Added to Team: 60 documents.");
    expect(screen.queryByTestId("documents-selected")).toBeNull(); // done: nothing selected

    // Delete: the count in the confirmation, and the filter sent.
    fireEvent.click(screen.getByTestId("documents-select-all"));
    fireEvent.click(screen.getByTestId("documents-select-matching"));
    fireEvent.click(screen.getByTestId("bulk-delete"));
    expect(screen.getByTestId("bulk-delete-confirm")).toHaveTextContent("Delete all 60 matching documents");
    fireEvent.click(screen.getByTestId("bulk-delete-confirm"));
    await waitFor(() => expect(srv.find("POST", "/api/documents/bulk")).toHaveLength(2));
    expect(srv.find("POST", "/api/documents/bulk")[1].body).toEqual({ action: "delete", filter: { q: "note", status: "failed" } });
    expect(await screen.findByTestId("bulk-result")).toHaveTextContent(
      "Deleted 59 documents. 1 not: forbidden: only the document's owner can delete it.",
    );

    // Unticking one row of the page is no longer "all matching".
    fireEvent.click(screen.getByTestId("documents-select-all"));
    fireEvent.click(screen.getByTestId("documents-select-matching"));
    fireEvent.click(within(screen.getAllByTestId("document-row")[0]).getByTestId("document-select"));
    expect(screen.getByTestId("documents-selected")).toHaveTextContent("49 selected");
    expect(screen.queryByTestId("documents-select-matching")).toBeNull();
  }, 60_000);

  it("offers Compare for two to four selected documents, as a whole-document comparison in chat", async () => {
    mockServer(on("GET", "/api/documents", () => jsonResponse({ documents: many(5), total: 5 })));
    render(<DocumentsPage />);
    const rows = await screen.findAllByTestId("document-row");
    fireEvent.click(within(rows[0]).getByTestId("document-select"));
    expect(screen.queryByTestId("bulk-compare")).toBeNull(); // one document: Summarise is on its row
    fireEvent.click(within(rows[1]).getByTestId("document-select"));
    expect(screen.getByTestId("bulk-compare")).toHaveTextContent("Compare 2");
    expect(screen.getByTestId("bulk-compare").getAttribute("href")).toBe("/chat?documents=d0,d1&task=compare");
    fireEvent.click(screen.getByTestId("documents-select-all"));
    expect(screen.queryByTestId("bulk-compare")).toBeNull(); // five: more than the server compares
  });

  it("polls only the visible page while one of its documents is ingesting", async () => {
    const srv = mockServer(
      on("GET", "/api/documents", () => jsonResponse({ documents: [makeDocument({ status: "processing", chunks_total: 4, chunks_done: 1 })], total: 80 })),
    );
    window.history.replaceState(null, "", "/documents?page=2");
    render(<DocumentsPage />);
    await waitFor(() => expect(srv.find("GET", "/api/documents").length).toBeGreaterThanOrEqual(3), { timeout: 5000 });
    expect(new Set(srv.find("GET", "/api/documents").map((c) => c.url))).toEqual(new Set(["/api/documents?offset=50"]));
  }, 10_000);
});

describe("messages", () => {
  it("a rejection's reason does not repeat the file name", () => {
    expect(reasonFor({ filename: "notes.csv", error: "notes.csv: file is empty" })).toBe("file is empty");
    expect(reasonFor({ filename: "a.exe", error: "unsupported file type '.exe'" })).toBe("unsupported file type '.exe'");
  });

  it("a failure's command shows as code, without backticks", () => {
    const doc = makeDocument({ status: "failed", error: "no text; run OCR first, e.g. `ocrmypdf in.pdf out.pdf`, and upload it" });
    render(<ul><DocumentRow doc={doc} onDelete={async () => {}} /></ul>);
    const error = screen.getByTestId("document-error");
    expect(error.querySelector("code")).toHaveTextContent("ocrmypdf in.pdf out.pdf");
    expect(error.textContent).not.toContain("`");
  });
});
