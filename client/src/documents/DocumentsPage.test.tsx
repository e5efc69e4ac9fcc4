import { act, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Document } from "../api/types";
import { CollectionsProvider } from "../collections/CollectionsContext";
import { jsonResponse, makeDocument } from "../test/fixtures";
import { apiError, mockServer, on } from "../test/server";
import { DocumentsPage } from "./DocumentsPage";

const doc = (over: Partial<Document> = {}): Document => makeDocument(over);

afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe("DocumentsPage", () => {
  it("shows the empty state", async () => {
    vi.stubGlobal("fetch", vi.fn().mockResolvedValue(jsonResponse({ documents: [] })));
    render(<DocumentsPage />);
    expect(await screen.findByTestId("documents-empty")).toHaveTextContent(
      "Upload PDF, DOCX, Markdown, HTML or text files",
    );
  });

  it("lists documents with status, pages, chunks, progress and failure reason", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn().mockResolvedValue(
        jsonResponse({
          documents: [
            doc(),
            doc({ id: "d2", status: "processing", chunks_total: 10, chunks_done: 4 }),
            doc({ id: "d3", status: "failed", error: "Could not parse PDF", chunks_total: null, chunks_done: 0, page_count: null }),
          ],
        }),
      ),
    );
    render(<DocumentsPage />);
    const rows = await screen.findAllByTestId("document-row");
    expect(rows.map((r) => r.dataset.status)).toEqual(["ready", "processing", "failed"]);
    expect(rows[0]).toHaveTextContent("4 pages");
    expect(rows[0]).toHaveTextContent("12 chunks");
    expect(rows[1].querySelector("[role=progressbar]")).toHaveAttribute("aria-valuenow", "40");
    expect(rows[2]).toHaveTextContent("Could not parse PDF");
  });

  it("polls every second while a document is processing, then stops", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const fetchMock = vi
      .fn()
      .mockResolvedValueOnce(jsonResponse({ documents: [doc({ status: "queued", chunks_total: null, chunks_done: 0 })] }))
      .mockResolvedValueOnce(jsonResponse({ documents: [doc({ status: "processing", chunks_total: 4, chunks_done: 2 })] }))
      .mockResolvedValue(jsonResponse({ documents: [doc()] }));
    vi.stubGlobal("fetch", fetchMock);
    const tick = (ms: number) => act(() => vi.advanceTimersByTimeAsync(ms));
    render(<DocumentsPage />);
    await tick(0);
    expect(screen.getByTestId("document-row")).toHaveAttribute("data-status", "queued");
    await tick(999);
    expect(fetchMock).toHaveBeenCalledTimes(1);
    await tick(1);
    expect(screen.getByTestId("document-row")).toHaveAttribute("data-status", "processing");
    await tick(1000);
    expect(screen.getByTestId("document-row")).toHaveAttribute("data-status", "ready");
    const n = fetchMock.mock.calls.length;
    await tick(5000);
    expect(fetchMock.mock.calls.length).toBe(n);
  });

  it("adds a web page by URL; a refused URL stays in the box with the reason", async () => {
    const srv = mockServer(
      on("POST", "/api/documents/url", (c) => {
        const { url } = JSON.parse(String(c.init.body)) as { url: string };
        if (url.includes("10.0.0.5")) {
          return jsonResponse(
            { status_code: 400, code: "url_refused", detail: "refusing to fetch http://10.0.0.5/: 10.0.0.5 is a private address", request_id: "r9" },
            400,
          );
        }
        const page = doc({ id: "w1", filename: "article.md", title: "An article", status: "queued", metadata: { source_url: url } });
        return jsonResponse({ results: [{ filename: "article.md", status: "queued", document: page, error: null }] }, 201);
      }),
    );
    render(<DocumentsPage />);
    await screen.findByTestId("documents-empty");
    const input = screen.getByTestId("url-input");
    expect(screen.getByTestId("url-submit")).toBeDisabled(); // nothing typed yet
    fireEvent.change(input, { target: { value: "http://10.0.0.5/" } });
    fireEvent.click(screen.getByTestId("url-submit"));
    expect(await screen.findByTestId("upload-error")).toHaveTextContent("10.0.0.5 is a private address");
    expect(input).toHaveValue("http://10.0.0.5/");
    fireEvent.change(input, { target: { value: "https://example.org/article" } });
    fireEvent.click(screen.getByTestId("url-submit"));
    await waitFor(() => expect(screen.getByTestId("document-title")).toHaveTextContent("An article"));
    expect(input).toHaveValue("");
    expect(screen.queryByTestId("upload-error")).toBeNull();
    expect(JSON.parse(String(srv.find("POST", "/api/documents/url")[1].init.body))).toEqual({
      url: "https://example.org/article",
      collection_id: null,
    });
  });

  it("uploads each file in its own multipart request and reports duplicates", async () => {
    const srv = mockServer(
      on("POST", "/api/documents", (c) => {
        const name = ((c.init.body as FormData).get("files") as File).name;
        return name === "a.md"
          ? jsonResponse({ results: [{ filename: "a.md", status: "queued", document: doc({ id: "n1", filename: "a.md", status: "queued" }), error: null }] }, 201)
          : jsonResponse({ results: [{ filename: "b.txt", status: "duplicate", document: doc({ id: "d0", filename: "b.txt" }), error: null }] }, 201);
      }),
    );
    render(<DocumentsPage />);
    await screen.findByTestId("documents-empty");
    const files = [new File(["# A"], "a.md", { type: "text/markdown" }), new File(["b"], "b.txt", { type: "text/plain" })];
    fireEvent.change(screen.getByTestId("upload-input"), { target: { files } });
    await waitFor(() => expect(screen.getByTestId("upload-result")).toHaveTextContent("already uploaded"));
    const forms = srv.find("POST", "/api/documents").map((c) => c.init.body as FormData);
    expect(forms.map((f) => f.getAll("files").map((x) => (x as File).name))).toEqual([["a.md"], ["b.txt"]]);
    await waitFor(() => expect(screen.queryByTestId("upload-progress")).toBeNull());
  });

  it("shows each refused file's reason next to it, and adds the accepted ones", async () => {
    const rejected = (filename: string, error: string) => ({ filename, status: "rejected", document: null, error });
    mockServer(
      on("POST", "/api/documents", (c) => {
        const name = ((c.init.body as FormData).get("files") as File).name;
        if (name === "big.pdf") {
          const results = [rejected("big.pdf", "big.pdf is 80 MB, over the limit of 50 MB")];
          return jsonResponse({ status_code: 413, code: "payload_too_large", detail: results[0].error, extra: { results }, request_id: "r1" }, 413);
        }
        if (name === "tool.exe") {
          const results = [rejected("tool.exe", "unsupported file type .exe")];
          return jsonResponse({ status_code: 415, code: "unsupported_media_type", detail: results[0].error, extra: { results }, request_id: "r2" }, 415);
        }
        if (name === "old.md")
          return jsonResponse({ results: [{ filename: name, status: "requeued", document: doc({ id: "o1", filename: name, status: "queued" }), error: null }] }, 201);
        return jsonResponse({ results: [{ filename: name, status: "queued", document: doc({ id: "n1", filename: name, status: "queued" }), error: null }] }, 201);
      }),
    );
    render(<DocumentsPage />);
    await screen.findByTestId("documents-empty");
    fireEvent.drop(screen.getByTestId("upload-dropzone"), {
      dataTransfer: { files: [new File(["x"], "big.pdf"), new File(["# A"], "a.md"), new File(["MZ"], "tool.exe"), new File(["o"], "old.md")], types: ["Files"] },
    });
    await waitFor(() => expect(screen.getAllByTestId("upload-result")).toHaveLength(3));
    const rows = screen.getAllByTestId("upload-result");
    expect(rows.map((r) => r.dataset.status)).toEqual(["rejected", "rejected", "requeued"]);
    expect(rows[0]).toHaveTextContent("big.pdf: big.pdf is 80 MB, over the limit of 50 MB");
    expect(rows[1]).toHaveTextContent("tool.exe: unsupported file type .exe");
    expect(rows[2]).toHaveTextContent("old.md: failed before — processing it again.");
    expect(screen.queryByTestId("upload-error")).toBeNull();
  });

  it("shows the detail of a 413 without per-file results next to the file", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(async (_u: string, init?: RequestInit) =>
        init?.method === "POST"
          ? jsonResponse({ status_code: 413, code: "payload_too_large", detail: "File too large (max 50 MB)", request_id: "r" }, 413)
          : jsonResponse({ documents: [] }),
      ),
    );
    render(<DocumentsPage />);
    await screen.findByTestId("documents-empty");
    fireEvent.drop(screen.getByTestId("upload-dropzone"), {
      dataTransfer: { files: [new File(["x"], "big.pdf")], types: ["Files"] },
    });
    const row = await screen.findByTestId("upload-result");
    expect(row).toHaveAttribute("data-status", "rejected");
    expect(row).toHaveTextContent("big.pdf: File too large (max 50 MB)");
  });

  it("a refused collection stops the upload with one notice", async () => {
    mockServer(on("POST", "/api/documents", () => apiError(403, "forbidden", "you may only read this collection")));
    render(<DocumentsPage />);
    await screen.findByTestId("documents-empty");
    fireEvent.change(screen.getByTestId("upload-input"), { target: { files: [new File(["a"], "a.md"), new File(["b"], "b.md")] } });
    expect(await screen.findByTestId("upload-error")).toHaveTextContent("Upload failed: You may only read this collection.");
  });

  it("deletes after confirmation", async () => {
    let deleted = false;
    const fetchMock = vi.fn(async (_u: string, init?: RequestInit) => {
      if (init?.method !== "DELETE") return jsonResponse({ documents: deleted ? [] : [doc()], total: deleted ? 0 : 1 });
      deleted = true;
      return new Response(null, { status: 204 });
    });
    vi.stubGlobal("fetch", fetchMock);
    render(<DocumentsPage />);
    fireEvent.click(await screen.findByTestId("document-delete"));
    fireEvent.click(screen.getByTestId("document-delete-confirm"));
    await waitFor(() => expect(screen.queryByTestId("document-row")).toBeNull());
    expect(fetchMock).toHaveBeenCalledWith("/api/documents/d1", expect.objectContaining({ method: "DELETE" }));
  });

  it("shows shared documents' owner, access and collections, and no Delete for them", async () => {
    mockServer(
      on("GET", "/api/collections", () =>
        jsonResponse({
          collections: [
            { id: "c1", name: "Handbooks", description: null, owner: { id: "u2", username: "bob" }, role: "read", document_count: 1, created_at: "" },
          ],
        }),
      ),
      on("GET", "/api/documents", () =>
        jsonResponse({
          documents: [
            doc(),
            doc({ id: "d2", owner: { id: "u2", username: "bob" }, access: "read", collection_ids: ["c1"] }),
            doc({ id: "d3", owner: { id: "u3", username: "carol" }, access: "write", collection_ids: [] }),
          ],
        }),
      ),
    );
    render(
      <CollectionsProvider>
        <DocumentsPage />
      </CollectionsProvider>,
    );
    await waitFor(() => expect(screen.getAllByTestId("document-row")[1]).toHaveTextContent("Handbooks"));
    const [mine, read, write] = screen.getAllByTestId("document-row");
    expect(mine.querySelector("[data-testid=doc-owner]")).toBeNull();
    expect(mine.querySelector("[data-testid=doc-access]")).toBeNull();
    expect(mine.querySelector("[data-testid=document-delete]")).not.toBeNull();
    expect(read.querySelector("[data-testid=doc-owner]")).toHaveTextContent("bob");
    expect(read.querySelector("[data-testid=doc-access]")).toHaveTextContent("Shared · read");
    expect(read.querySelector("[data-testid=doc-collections]")).toHaveTextContent("Collection: Handbooks");
    expect(read.querySelector("[data-testid=document-delete]")).toBeNull();
    expect(write.querySelector("[data-testid=doc-access]")).toHaveTextContent("Shared · write");
    expect(write.querySelector("[data-testid=document-delete]")).toBeNull();
    // A read-only collection is no upload target: no select at all.
    expect(screen.queryByTestId("upload-collection")).toBeNull();
  });

  it("uploads into a chosen collection (the collection_id form field of each request)", async () => {
    const srv = mockServer(
      on("GET", "/api/collections", () =>
        jsonResponse({
          collections: [
            { id: "c1", name: "Mine", description: null, owner: { id: "u1", username: "alice" }, role: "owner", document_count: 0, created_at: "" },
            { id: "c2", name: "Theirs", description: null, owner: { id: "u2", username: "bob" }, role: "read", document_count: 0, created_at: "" },
          ],
        }),
      ),
      on("POST", "/api/documents", () => jsonResponse({ results: [{ filename: "a.md", status: "queued", document: doc({ id: "n1" }), error: null }] }, 201)),
    );
    render(
      <CollectionsProvider>
        <DocumentsPage />
      </CollectionsProvider>,
    );
    const target = await screen.findByTestId("upload-collection");
    expect([...target.querySelectorAll("option")].map((o) => o.textContent)).toEqual(["None (only in my documents)", "Mine"]);
    fireEvent.change(target, { target: { value: "c1" } });
    fireEvent.change(screen.getByTestId("upload-input"), { target: { files: [new File(["# A"], "a.md")] } });
    await waitFor(() => expect(srv.find("POST", "/api/documents")).toHaveLength(1));
    const form = srv.find("POST", "/api/documents")[0].init.body as FormData;
    expect(form.get("collection_id")).toBe("c1");
  });
});
