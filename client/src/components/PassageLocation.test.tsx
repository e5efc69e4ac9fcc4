import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { SearchResponse } from "../api/types";
import { SourceCard } from "../chat/SourceCard";
import { ResultsByChunk, ResultsByDocument } from "../search/SearchResults";
import { chunk, confidence } from "../test/fixtures";
import { mediaFragmentUrl, safeWebUrl } from "./PassageLocation";

const timed = (url: string | null) =>
  chunk({
    filename: "talk.vtt",
    title: "talk",
    page: null,
    location: { start_s: 751.4, end_s: 778.25, label: "00:12:31–00:12:58" },
    url,
  });

const card = (c: ReturnType<typeof chunk>) =>
  render(
    <ol>
      <SourceCard index={1} chunk={c} reranked={false} expanded={false} flash={false} onToggle={() => {}} />
    </ol>,
  );

const response = (c: ReturnType<typeof chunk>): SearchResponse => ({
  chunks: [c],
  documents: [{ document_id: c.document_id, filename: c.filename, title: c.title, max_score: 0.8, matched_chunks: 1, best_chunk: c }],
  query: "budget",
  mode: "hybrid",
  reranked: false,
  timing_ms: { embed_ms: 1, vector_ms: 1, keyword_ms: 1, fuse_ms: 0, rerank_ms: 0, expand_ms: 0, total_ms: 3 },
  has_embeddings: true,
  confidence: confidence(),
});

/** Links that leave the app (the viewer's "Open in document" link does not). */
const outboundLinks = () => screen.queryAllByRole("link").filter((a) => a.getAttribute("target") === "_blank");

describe("passage locations", () => {
  it("links a timestamp to the source page at that second (W3C media fragment)", () => {
    expect(mediaFragmentUrl(timed("https://example.org/talk#old"))).toBe("https://example.org/talk#t=751");
    expect(mediaFragmentUrl(timed(null))).toBeNull();
    expect(mediaFragmentUrl(chunk({ url: "https://example.org/p", location: { slide: 3, label: "Slide 3" } }))).toBeNull();
  });

  it("never links anything but http(s)", () => {
    expect(safeWebUrl("javascript:alert(1)")).toBeNull();
    expect(safeWebUrl("data:text/html,hi")).toBeNull();
    expect(safeWebUrl("not a url")).toBeNull();
    expect(safeWebUrl("https://example.org/a b")).toBe("https://example.org/a%20b");
    card(timed("javascript:alert(1)"));
    expect(outboundLinks()).toEqual([]); // the card's own "Open in document" stays in the app
    expect(screen.getByTestId("source-location")).toHaveTextContent("00:12:31–00:12:58");
  });

  it("shows the label on a chat source card, with the timestamp and page as outbound links", () => {
    card(timed("https://example.org/talk"));
    const labels = screen.getAllByTestId("source-location");
    expect(labels[0]).toHaveTextContent("00:12:31–00:12:58");
    expect(labels[0].tagName).toBe("SPAN"); // inside the card's toggle button: text, not a nested link
    const moment = screen.getByRole("link", { name: "00:12:31–00:12:58" });
    expect(moment).toHaveAttribute("href", "https://example.org/talk#t=751");
    expect(moment).toHaveAttribute("rel", "noopener noreferrer");
    const page = screen.getByTestId("source-url");
    expect(page).toHaveAttribute("href", "https://example.org/talk");
    expect(page).toHaveAttribute("rel", "noopener noreferrer");
    expect(page).toHaveTextContent("example.org");
  });

  it("shows a slide or sheet label without a link, and nothing for passages without a location", () => {
    card(chunk({ location: { sheet: "Q1", row_start: 2, row_end: 41, label: "Sheet Q1, rows 2–41" } }));
    expect(screen.getByTestId("source-location")).toHaveTextContent("Sheet Q1, rows 2–41");
    expect(outboundLinks()).toEqual([]); // the card's own "Open in document" stays in the app
  });

  it("shows the label in search results by chunk and by document", () => {
    const c = timed("https://example.org/talk");
    const byChunk = render(<ResultsByChunk data={response(c)} />);
    const row = within(byChunk.getByTestId("search-result"));
    expect(row.getByRole("link", { name: "00:12:31–00:12:58" })).toHaveAttribute("href", "https://example.org/talk#t=751");
    expect(row.getByTestId("source-url")).toHaveAttribute("href", "https://example.org/talk");
    byChunk.unmount();
    render(<ResultsByDocument data={response(chunk({ location: { slide: 3, label: "Slide 3" } }))} />);
    expect(screen.getByTestId("source-location")).toHaveTextContent("Slide 3");
    expect(screen.queryByTestId("source-url")).toBeNull();
  });

  it("renders passages saved before locations existed", () => {
    card(chunk());
    expect(screen.queryByTestId("source-location")).toBeNull();
    expect(screen.queryByTestId("source-url")).toBeNull();
  });

  it("marks a passage read by OCR with its confidence, low confidence as a warning", () => {
    const scanned = (c: number) =>
      chunk({ filename: "scan.pdf", page: 2, location: { ocr_confidence: c, label: `OCR ${Math.round(c * 100)}% confidence` } });
    card(scanned(0.93));
    const good = screen.getByTestId("source-location");
    expect(good).toHaveTextContent("OCR 93% confidence");
    expect(good).toHaveAttribute("title", "Text read by OCR from a scan or image, 93% confidence");
    expect(good).not.toHaveClass("ocr-low");
    render(<ResultsByChunk data={response(scanned(0.61))} />);
    const low = screen.getAllByTestId("source-location")[1];
    expect(low).toHaveClass("ocr-low");
    expect(low.getAttribute("title")).toContain("words may be misread");
  });
});
