import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { jsonResponse, makeDocument } from "../test/fixtures";
import { apiError } from "../test/server";
import { DOCUMENTS_CHANGED, RechunkAction } from "./RechunkAction";
import { UploadZone } from "./UploadZone";

afterEach(() => {
  vi.unstubAllGlobals();
});

const ready = makeDocument({
  status: "ready",
  chunking: { requested: "auto", strategy: "sentence", tokens: 200, overlap: 40, reason: "prose (few headings)" },
});

describe("Re-chunk… on a document row", () => {
  it("is offered on ready or failed documents I may write, never to a reader or while processing", () => {
    const { rerender } = render(<RechunkAction doc={ready} />);
    expect(screen.getByTestId("document-rechunk").title).toBe("Chunked by sentence (prose (few headings))");
    rerender(<RechunkAction doc={{ ...ready, access: "read" }} />);
    expect(screen.queryByTestId("document-rechunk")).toBeNull();
    rerender(<RechunkAction doc={{ ...ready, status: "processing" }} />);
    expect(screen.queryByTestId("document-rechunk")).toBeNull();
    rerender(<RechunkAction doc={{ ...ready, access: "write", status: "failed" }} />);
    expect(screen.getByTestId("document-rechunk")).toBeTruthy();
  });

  it("sends the strategy and size, then tells the list to refresh", async () => {
    const fetchMock = vi.fn(async () => jsonResponse({ ...ready, status: "queued" }));
    vi.stubGlobal("fetch", fetchMock);
    const changed = vi.fn();
    window.addEventListener(DOCUMENTS_CHANGED, changed);
    render(<RechunkAction doc={ready} />);
    fireEvent.click(screen.getByTestId("document-rechunk"));
    fireEvent.change(screen.getByTestId("rechunk-strategy"), { target: { value: "semantic" } });
    fireEvent.change(screen.getByTestId("rechunk-tokens"), { target: { value: "5000" } });
    expect((screen.getByTestId("rechunk-apply") as HTMLButtonElement).disabled).toBe(true);
    fireEvent.change(screen.getByTestId("rechunk-tokens"), { target: { value: "128" } });
    fireEvent.click(screen.getByTestId("rechunk-apply"));
    await waitFor(() => expect(changed).toHaveBeenCalled());
    window.removeEventListener(DOCUMENTS_CHANGED, changed);
    const [url, init] = fetchMock.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("/api/documents/d1/rechunk");
    expect(init.method).toBe("POST");
    expect(JSON.parse(String(init.body))).toEqual({ strategy: "semantic", chunk_tokens: 128 });
    expect(screen.queryByTestId("rechunk-form")).toBeNull();
  });

  it("shows the server's refusal (409 while it is being processed)", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => apiError(409, "conflict", "document d1 is processing: re-chunk it once it is done")),
    );
    render(<RechunkAction doc={ready} />);
    fireEvent.click(screen.getByTestId("document-rechunk"));
    fireEvent.click(screen.getByTestId("rechunk-apply"));
    expect((await screen.findByTestId("rechunk-error")).textContent).toContain("re-chunk it once it is done");
    expect(screen.getByTestId("rechunk-form")).toBeTruthy();
  });
});

describe("the upload area's chunking choice", () => {
  it("sends chunk_strategy with every file only when one is chosen", () => {
    const onFiles = vi.fn();
    render(<UploadZone busy={false} onFiles={onFiles} />);
    const file = new File(["Milk 1.65"], "receipt.txt", { type: "text/plain" });
    fireEvent.change(screen.getByTestId("upload-input"), { target: { files: [file] } });
    expect(onFiles).toHaveBeenLastCalledWith([file], undefined);
    fireEvent.change(screen.getByTestId("upload-chunking"), { target: { value: "line" } });
    fireEvent.change(screen.getByTestId("upload-input"), { target: { files: [file] } });
    expect(onFiles).toHaveBeenLastCalledWith([file], { chunk_strategy: "line" });
  });
});
