import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { makeDocument } from "../test/fixtures";
import { BatchProgress, summarize } from "./BatchProgress";
import { stageText } from "./DocumentRow";

const batch = (over = {}) => ({ files: 4, sent: 4, ids: ["a", "b", "c"], skipped: 1, started: 0, ...over });

describe("one overall bar for an upload of many files", () => {
  it("counts sent files, ready and failed documents, and a processing one by its chunks", () => {
    const docs = [
      makeDocument({ id: "a" }),
      makeDocument({ id: "b", status: "failed", error: "bad file" }),
      makeDocument({ id: "c", status: "processing", chunks_total: 10, chunks_done: 5 }),
    ];
    const s = summarize(batch(), docs, 10_000);
    expect(s).toMatchObject({ ready: 1, failed: 1, active: 1 });
    // 3 of 4 units finished (skipped duplicate included) plus half of one: 0.1 + 0.9 × 3.5 / 4
    expect(s.fraction).toBeCloseTo(0.1 + 0.9 * (3.5 / 4));
    // the rate so far applied to what is left: 10 s for 0.8875 → about 1.3 s more
    expect(s.etaS).toBeCloseTo((10 * (1 - s.fraction)) / s.fraction);
  });

  it("while files are still being sent the bar covers only the share sent", () => {
    const s = summarize(batch({ sent: 1, ids: ["a"], skipped: 0 }), [makeDocument({ id: "a", status: "queued" })], 5000);
    expect(s.fraction).toBeCloseTo(0.25 * 0.1);
    expect(s.active).toBe(1);
  });

  it("renders one progressbar with words a screen reader announces", () => {
    const docs = [makeDocument({ id: "a" }), makeDocument({ id: "b" }), makeDocument({ id: "c", status: "queued" })];
    render(<BatchProgress batch={batch({ skipped: 1 })} docs={docs} />);
    expect(screen.getAllByRole("progressbar")).toHaveLength(1);
    expect(screen.getByTestId("batch-progress-text")).toHaveTextContent("4 files uploaded · 2 of 3 ready · 1 in progress");
    expect(screen.getByTestId("batch-progress-text")).toHaveAttribute("aria-live", "polite");
  });

  it("a document not seen yet (past the page shown) is in progress, not done", () => {
    const docs = [makeDocument({ id: "a" })];
    const s = summarize(batch({ skipped: 0, ids: ["a", "b", "c"], files: 3, sent: 3 }), docs, 1000);
    expect(s).toMatchObject({ ready: 1, failed: 0, active: 2 });
    expect(s.fraction).toBeLessThan(1);
    render(<BatchProgress batch={batch({ skipped: 0, ids: ["a", "b", "c"], files: 3, sent: 3 })} docs={docs} />);
    expect(screen.getByTestId("batch-progress")).toHaveAttribute("data-done", "false");
    expect(screen.getByTestId("batch-progress-text")).toHaveTextContent("1 of 3 ready · 2 in progress");
  });

  it("an upload of files already uploaded says so, not \"Done: 0 of 0 ready\"", () => {
    render(<BatchProgress batch={batch({ files: 2, sent: 2, ids: [], skipped: 2, duplicates: 2 })} docs={[]} />);
    const text = screen.getByTestId("batch-progress-text");
    expect(text).toHaveTextContent("Already uploaded: all 2 files are in your documents, nothing new to process.");
    expect(text).not.toHaveTextContent("0 of 0");
    expect(screen.getByTestId("batch-progress")).toHaveAttribute("data-done", "true");
  });

  it("a mix of a duplicate and a rejected file: nothing new, and why", () => {
    render(<BatchProgress batch={batch({ files: 2, sent: 2, ids: [], skipped: 2, duplicates: 1 })} docs={[]} />);
    expect(screen.getByTestId("batch-progress-text")).toHaveTextContent("Nothing new to process: 1 already uploaded · 1 rejected");
  });

  it("counts duplicates beside new documents", () => {
    render(<BatchProgress batch={batch({ files: 3, sent: 3, ids: ["a", "b"], skipped: 1, duplicates: 1 })} docs={[makeDocument({ id: "a" }), makeDocument({ id: "b" })]} />);
    expect(screen.getByTestId("batch-progress-text")).toHaveTextContent("Done: 2 of 2 ready · 1 already uploaded");
  });

  it("says Done when every document is finished", () => {
    render(<BatchProgress batch={batch({ skipped: 0, ids: ["a"], files: 1, sent: 1 })} docs={[makeDocument({ id: "a" })]} />);
    expect(screen.getByTestId("batch-progress")).toHaveAttribute("data-done", "true");
    expect(screen.getByTestId("batch-progress-text")).toHaveTextContent("Done: 1 of 1 ready");
  });
});

describe("a document's stage in words", () => {
  it("embedding with the time left, reading, waiting to retry with the reason", () => {
    expect(stageText(makeDocument({ status: "processing", chunks_total: 700, chunks_done: 120, eta_s: 31 }))).toBe(
      "Embedding 120 of 700 chunks · about 31 s left",
    );
    expect(stageText(makeDocument({ status: "processing", chunks_total: null, chunks_done: 0, attempts: 2 }))).toBe(
      "Reading the file (attempt 2)…",
    );
    expect(stageText(makeDocument({ status: "processing", chunks_total: null, chunks_done: 0, progress_note: "OCR page 3 of 12" }))).toBe(
      "OCR page 3 of 12…",
    );
    const retryAt = new Date(Date.parse("2026-01-01T00:00:10Z")).toISOString();
    expect(
      stageText(
        makeDocument({ status: "queued", stage: "waiting", retry_at: retryAt, error: "embedding failed: connection refused" }),
        Date.parse("2026-01-01T00:00:06Z"),
      ),
    ).toBe("Waiting to retry in 4 s — last error: embedding failed: connection refused");
    expect(stageText(makeDocument({ status: "queued", attempts: 0 }))).toBe("Queued");
    expect(stageText(makeDocument({ status: "ready" }))).toBeNull();
  });
});
