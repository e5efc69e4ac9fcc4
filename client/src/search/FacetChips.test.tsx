import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { SearchResponse } from "../api/types";
import { parseMetaText } from "../documents/MetadataEditor";
import { chunk, confidence, jsonResponse } from "../test/fixtures";
import { FacetChips, toggleFilter } from "./FacetChips";
import { SearchPage } from "./SearchPage";

const FACETS = {
  subject: [
    { value: "Polity", count: 2 },
    { value: "History", count: 1 },
  ],
  year: [{ value: "2024", count: 3 }],
};

const response = (over: Partial<SearchResponse> = {}): SearchResponse => ({
  chunks: [chunk({ content: "Parliament makes laws." })],
  documents: [],
  query: "laws",
  mode: "hybrid",
  reranked: false,
  timing_ms: { embed_ms: 1, vector_ms: 1, keyword_ms: 1, fuse_ms: 0, rerank_ms: 0, expand_ms: 0, total_ms: 3 },
  has_embeddings: true,
  confidence: confidence(),
  facets: FACETS,
  ...over,
});

beforeEach(() => window.history.replaceState(null, "", "/search"));
afterEach(() => vi.unstubAllGlobals());

describe("toggleFilter", () => {
  it("adds and removes values of a key (OR) and drops an empty key", () => {
    expect(toggleFilter({}, "subject", "Polity")).toEqual({ subject: ["Polity"] });
    expect(toggleFilter({ subject: ["Polity"] }, "subject", "History")).toEqual({ subject: ["Polity", "History"] });
    expect(toggleFilter({ subject: ["Polity"], year: ["2024"] }, "subject", "Polity")).toEqual({ year: ["2024"] });
  });
});

describe("parseMetaText", () => {
  it("reads key=value pairs; a repeated key is a list", () => {
    expect(parseMetaText("subject=Polity, subject=History; year=2024")).toEqual({ subject: ["Polity", "History"], year: "2024" });
    expect(parseMetaText("  ")).toEqual({});
    expect(parseMetaText("subject")).toMatch(/not key=value/);
  });
});

describe("FacetChips", () => {
  it("shows counts, marks active values and toggles them", () => {
    const onChange = vi.fn();
    render(<FacetChips facets={FACETS} filters={{ subject: ["Polity"] }} onChange={onChange} />);
    // folded by default (the first result stays in view); the active filter shows outside the fold
    expect(screen.getByTestId("facet-details")).not.toHaveAttribute("open");
    expect(screen.getByTestId("facets-toggle")).toHaveTextContent("Filter by metadata (2 properties)");
    const chips = screen.getAllByTestId("facet-chip");
    expect(chips.map((c) => c.textContent)).toEqual(["Polity 2", "History 1", "2024 3"]);
    expect(chips[0]).toHaveAttribute("aria-pressed", "true");
    expect(chips[1]).toHaveAttribute("aria-pressed", "false");
    fireEvent.click(chips[1]);
    expect(onChange).toHaveBeenLastCalledWith({ subject: ["Polity", "History"] });
    fireEvent.click(screen.getByTestId("facet-active"));
    expect(onChange).toHaveBeenLastCalledWith({});
  });

  it("keeps an active filter removable when no result has it", () => {
    const onChange = vi.fn();
    render(<FacetChips facets={{}} filters={{ subject: ["Gone"] }} onChange={onChange} />);
    expect(screen.getByTestId("facet-active")).toHaveTextContent("subject: Gone");
    fireEvent.click(screen.getByLabelText("Remove filter subject: Gone"));
    expect(onChange).toHaveBeenCalledWith({});
  });

  it("renders nothing without facets or filters", () => {
    const { container } = render(<FacetChips facets={{}} filters={{}} onChange={() => {}} />);
    expect(container).toBeEmptyDOMElement();
  });
});

describe("SearchPage facets", () => {
  it("a chip click filters the search, and removing the chip searches without it", async () => {
    window.history.replaceState(null, "", "/search?q=laws");
    const fetchMock = vi.fn(async (_url: string) => jsonResponse(response()));
    vi.stubGlobal("fetch", fetchMock);
    render(<SearchPage />);
    const chips = await screen.findAllByTestId("facet-chip");
    fireEvent.click(chips[0]);
    await waitFor(() => expect(fetchMock.mock.calls.at(-1)![0]).toBe("/api/search?q=laws&filter=subject%3DPolity"));
    fireEvent.click((await screen.findAllByTestId("facet-chip"))[1]);
    await waitFor(() =>
      expect(fetchMock.mock.calls.at(-1)![0]).toBe("/api/search?q=laws&filter=subject%3DPolity&filter=subject%3DHistory"),
    );
    expect(screen.getAllByTestId("facet-active").map((c) => c.dataset.value)).toEqual(["Polity", "History"]);
    fireEvent.click(screen.getByTestId("facet-clear"));
    await waitFor(() => expect(fetchMock.mock.calls.at(-1)![0]).toBe("/api/search?q=laws"));
    expect(screen.queryByTestId("facet-active")).toBeNull();
  });
});
