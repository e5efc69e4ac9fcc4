import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { jsonResponse, makeDocument } from "../test/fixtures";
import { MetadataEditor, metadataField } from "./MetadataEditor";

afterEach(() => vi.unstubAllGlobals());

describe("metadataField", () => {
  it("turns the upload's text into the metadata form field", () => {
    expect(metadataField("")).toBeUndefined();
    expect(metadataField("subject=Polity, subject=History")).toEqual({ metadata: '{"subject":["Polity","History"]}' });
    expect(metadataField("oops")).toMatch(/not key=value/);
  });
});

describe("MetadataEditor", () => {
  it("saves a merge patch: changed keys, lists from commas, null for removed keys; server keys read-only", async () => {
    const doc = makeDocument({ metadata: { subject: ["Polity"], draft: "yes", source_path: "/a.txt" } });
    const fetchMock = vi.fn(async (_url: string, _init?: RequestInit) => jsonResponse({ ...doc, metadata: {} }));
    vi.stubGlobal("fetch", fetchMock);
    const onSaved = vi.fn();
    render(<MetadataEditor doc={doc} onSaved={onSaved} />);
    expect(screen.getByText("source_path: /a.txt")).toBeInTheDocument();
    const values = screen.getAllByTestId("meta-value");
    fireEvent.change(values[0], { target: { value: "Polity, History" } });
    fireEvent.click(screen.getByLabelText("Remove draft"));
    fireEvent.click(screen.getByTestId("metadata-save"));
    await waitFor(() => expect(onSaved).toHaveBeenCalled());
    const [url, init] = fetchMock.mock.calls[0];
    expect(url).toBe(`/api/documents/${doc.id}`);
    expect(init?.method).toBe("PATCH");
    expect(JSON.parse(String(init?.body))).toEqual({ metadata: { subject: ["Polity", "History"], draft: null } });
  });

  it("shows why the extraction failed, and a reader cannot edit", () => {
    const doc = makeDocument({ access: "read", metadata_status: "failed", metadata_error: "timed out", metadata: { k: "v" } });
    render(<MetadataEditor doc={doc} />);
    expect(screen.getByTestId("metadata-status")).toHaveTextContent("Metadata extraction failed: timed out");
    expect(screen.queryByTestId("metadata-save")).toBeNull();
    expect(screen.getByTestId("meta-value")).toBeDisabled();
  });
});
