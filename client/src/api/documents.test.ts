import { afterEach, describe, expect, it, vi } from "vitest";
import { jsonResponse, makeDocument } from "../test/fixtures";
import { documentsApi } from "./documents";

afterEach(() => vi.unstubAllGlobals());

describe("documents API", () => {
  it("asks for one page, leaving out the server's defaults", async () => {
    const fetchMock = vi.fn(async (_url: string) => jsonResponse({ documents: [], total: 0 }));
    vi.stubGlobal("fetch", fetchMock);
    await documentsApi.list({ q: "", status: "", type: "", sort: "created_at", order: "desc", limit: 50, offset: 0 });
    expect(fetchMock.mock.calls[0][0]).toBe("/api/documents");
    await documentsApi.list({ q: "tax 2024", status: "failed", type: "pdf", sort: "title", order: "asc", limit: 50, offset: 100 });
    expect(fetchMock.mock.calls[1][0]).toBe("/api/documents?q=tax+2024&status=failed&type=pdf&sort=title&order=asc&offset=100");
  });

  it("listAll (pickers) fetches every page in turn", async () => {
    const docs = Array.from({ length: 450 }, (_, i) => makeDocument({ id: `d${i}` }));
    const fetchMock = vi.fn(async (url: string) => {
      const qs = new URL(url, "http://x").searchParams;
      const offset = Number(qs.get("offset"));
      expect(qs.get("limit")).toBe("200");
      return jsonResponse({ documents: docs.slice(offset, offset + 200), total: docs.length });
    });
    vi.stubGlobal("fetch", fetchMock);
    const all = await documentsApi.listAll(undefined, "c1");
    expect(all.map((d) => d.id)).toEqual(docs.map((d) => d.id));
    expect(fetchMock).toHaveBeenCalledTimes(3);
    expect(fetchMock.mock.calls[2][0]).toBe("/api/documents?limit=200&offset=400&collection_id=c1");
  });
});
