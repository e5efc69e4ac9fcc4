import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { DocumentChunk } from "../api/types";
import { jsonResponse, makeDocument } from "../test/fixtures";
import { apiError, axeViolations, mockServer, on } from "../test/server";
import { DocumentViewer } from "./DocumentViewer";
import { ScanView, type OcrPage } from "./ScanView";

const LINES = ["Lighthouse keeper rota for August", "Night watch: Marguerite and Tobias", "Day watch: Ingrid", "Signed, the harbour master"];

const ocrPage = (over: Partial<OcrPage> = {}): OcrPage => ({
  document_id: "d1",
  page: 1,
  width: 800,
  height: 400,
  lines: LINES.map((text, i) => ({ text, x0: 40, y0: 40 + i * 80, x1: 40 + text.length * 18, y1: 80 + i * 80, confidence: 0.97 })),
  scanned_pages: [1, 2],
  ...over,
});

const chunk: DocumentChunk = {
  id: 7,
  ordinal: 0,
  content: "Night watch: Marguerite and Tobias\nDay watch: Ingrid",
  page: 1,
  section: null,
  location: { ocr_confidence: 0.97, label: "OCR 97% confidence" },
};

beforeEach(() => {
  Element.prototype.scrollIntoView = vi.fn();
});
afterEach(() => vi.unstubAllGlobals());

describe("ScanView", () => {
  it("shows the page image with the passage's lines boxed over it and the OCR text beside it", async () => {
    const srv = mockServer(on("GET", "/api/documents/d1/pages/1/ocr", () => jsonResponse(ocrPage())));
    const onPage = vi.fn();
    render(
      <main>
        <h1>Rota</h1>
        <ScanView documentId="d1" page={1} pages={2} passage={chunk.content} title="Rota" onPage={onPage} fallback={<p>fallback</p>} />
      </main>,
    );
    const image = await screen.findByTestId("scan-image");
    expect(image).toHaveAttribute("src", "/api/documents/d1/pages/1/image");
    expect(image).toHaveAttribute("alt", "Page 1 of Rota, as scanned. Its text, read by OCR, follows.");
    fireEvent.load(image);
    // the two lines of the passage, boxed in percent of the image (so they scale with it)
    const boxes = screen.getAllByTestId("scan-box");
    expect(boxes.map((b) => b.dataset.line)).toEqual(["1", "2"]);
    expect(boxes[0].style.left).toBe("5%");
    expect(boxes[0].style.top).toBe("30%");
    expect(boxes[0].style.height).toBe("10%");
    expect(boxes[0].style.width).toBe(`${(100 * LINES[1].length * 18) / 800}%`);
    await waitFor(() => expect(Element.prototype.scrollIntoView).toHaveBeenCalled());
    // the text: every line, the passage's marked and reachable by keyboard; focusing one outlines its box
    const lines = screen.getAllByTestId("scan-line");
    expect(lines.map((l) => l.textContent)).toEqual([LINES[0], `${LINES[1]} (cited)`, `${LINES[2]} (cited)`, LINES[3]]);
    expect(lines[0]).not.toHaveAttribute("tabindex");
    expect(lines[2]).toHaveAttribute("tabindex", "0");
    fireEvent.focus(lines[2]);
    expect(boxes[1]).toHaveClass("active");
    fireEvent.blur(lines[2]);
    expect(boxes[1]).not.toHaveClass("active");
    expect(screen.getByTestId("scan-hits")).toHaveTextContent("The cited passage is highlighted: 2 lines.");
    expect(screen.getByTestId("scan-page-label")).toHaveTextContent("Page 1 of 2");
    expect(screen.getByTestId("scan-prev")).toBeDisabled();
    fireEvent.click(screen.getByTestId("scan-next"));
    expect(onPage).toHaveBeenCalledWith(2);
    expect(screen.queryByText("fallback")).toBeNull();
    expect(srv.find("GET", "/api/documents/d1/pages/1/ocr")).toHaveLength(1);
    expect(await axeViolations()).toEqual([]);
  });

  it("says when the passage is not on the page, and boxes nothing", async () => {
    mockServer(on("GET", "/api/documents/d1/pages/1/ocr", () => jsonResponse(ocrPage())));
    render(<ScanView documentId="d1" page={1} pages={1} passage="Tidal loads on the fender system" title="Rota" onPage={vi.fn()} fallback={null} />);
    expect(await screen.findByTestId("scan-hits")).toHaveTextContent("The cited passage is not on this page.");
    expect(screen.queryAllByTestId("scan-box")).toHaveLength(0);
  });

  it("shows today's view for a page without OCR lines (a document read before they were kept), or a page past the last", async () => {
    mockServer(
      on("GET", "/api/documents/d1/pages/1/ocr", () => jsonResponse(ocrPage({ width: null, height: null, lines: [], scanned_pages: [] }))),
      on("GET", "/api/documents/d1/pages/9/ocr", () => apiError(404, "not_found", "the document has 1 page, not 9")),
    );
    const { rerender } = render(<ScanView documentId="d1" page={1} pages={1} passage={null} title="Rota" onPage={vi.fn()} fallback={<p>today's view</p>} />);
    expect(await screen.findByText("today's view")).toBeInTheDocument();
    expect(screen.queryByTestId("scan-image")).toBeNull();
    rerender(<ScanView documentId="d1" page={9} pages={1} passage={null} title="Rota" onPage={vi.fn()} fallback={<p>today's view</p>} />);
    expect(await screen.findByText("today's view")).toBeInTheDocument();
  });

  it("says what went wrong and tries again", async () => {
    let fail = true;
    mockServer(
      on("GET", "/api/documents/d1/pages/1/ocr", () => (fail ? apiError(503, "database_unavailable", "the database is away") : jsonResponse(ocrPage()))),
    );
    render(<ScanView documentId="d1" page={1} pages={1} passage={null} title="Rota" onPage={vi.fn()} fallback={null} />);
    expect(await screen.findByTestId("scan-error")).toHaveTextContent(/database is away/i);
    fail = false;
    fireEvent.click(screen.getByRole("button", { name: "Try again" }));
    expect(await screen.findByTestId("scan-image")).toBeInTheDocument();
  });
});

describe("DocumentViewer of a scan", () => {
  const image = makeDocument({ id: "d1", title: "Rota", filename: "rota.png", content_type: "image/png", page_count: 1 });

  it("opens an image at the cited passage in the scan view", async () => {
    window.history.replaceState(null, "", "/documents/d1?chunk=7");
    mockServer(
      on("GET", "/api/documents/d1", () => jsonResponse(image)),
      on("GET", "/api/documents/d1/chunks", () => jsonResponse({ chunks: [chunk], total: 1, offset: 0 })),
      on("GET", "/api/documents/d1/pages/1/ocr", () => jsonResponse(ocrPage({ scanned_pages: [1] }))),
    );
    render(
      <main>
        <DocumentViewer id="d1" />
      </main>,
    );
    expect(await screen.findByTestId("scan-view")).toHaveAttribute("data-page", "1");
    expect(screen.getAllByTestId("scan-box")).toHaveLength(2);
    expect(screen.queryByTestId("viewer-chunk")).toBeNull();
    expect(await axeViolations()).toEqual([]);
  });

  it("shows an image read before OCR lines were kept as its text, as before", async () => {
    window.history.replaceState(null, "", "/documents/d1?chunk=7");
    mockServer(
      on("GET", "/api/documents/d1", () => jsonResponse(image)),
      on("GET", "/api/documents/d1/chunks", () => jsonResponse({ chunks: [chunk], total: 1, offset: 0 })),
      on("GET", "/api/documents/d1/pages/1/ocr", () => jsonResponse(ocrPage({ width: null, height: null, lines: [], scanned_pages: [] }))),
    );
    render(
      <main>
        <DocumentViewer id="d1" />
      </main>,
    );
    const cited = await screen.findByRole("article", { current: true });
    expect(cited).toHaveTextContent("Night watch: Marguerite and Tobias");
    expect(screen.queryByTestId("scan-view")).toBeNull();
  });
});
