import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { confidence, toolResult } from "../test/fixtures";
import { ToolIndicator } from "./ToolIndicator";

const indicator = (result: ReturnType<typeof toolResult>) =>
  render(
    <ToolIndicator
      step={{ id: "s1", query: "port", status: "done", result }}
      firstIndex={1}
      open={false}
      onToggle={() => {}}
      isCardOpen={() => false}
      onToggleCard={() => {}}
      flash={null}
      cardRef={() => {}}
    />,
  );

describe("ToolIndicator", () => {
  it("shows a failed rerank's warning", () => {
    const warning = "Rerank failed: the language model scored none of the 6 passages, so the results are in search order.";
    indicator(toolResult({ rerank: { requested: true, status: "failed", scored: 0, skipped: 0, candidates: 6, warning } }));
    expect(screen.getByTestId("tool-rerank-warning")).toHaveTextContent("Rerank failed");
    expect(screen.getByTestId("tool-rerank-note")).toHaveTextContent(warning);
    expect(screen.getByTestId("search-mode-badge")).not.toHaveTextContent("Reranked");
  });

  it("says nothing about rerank when it worked, or for messages stored before the status existed", () => {
    indicator(toolResult({ reranked: true, rerank: { requested: true, status: "ok", scored: 6, skipped: 0, candidates: 6 } }));
    expect(screen.queryByTestId("tool-rerank-note")).toBeNull();
    indicator(toolResult({ rerank: undefined }));
    expect(screen.queryByTestId("tool-rerank-warning")).toBeNull();
  });

  it("shows the confidence text when nothing matched well", () => {
    indicator(toolResult({ confidence: confidence("insufficient", 0.1) }));
    expect(screen.getByText("Insufficient confidence (10%)")).toHaveClass("chip-warn");
  });
});

describe("ToolIndicator for the document tools", () => {
  const show = (step: Parameters<typeof ToolIndicator>[0]["step"]) =>
    render(
      <ToolIndicator
        step={step}
        firstIndex={1}
        open={false}
        onToggle={() => {}}
        isCardOpen={() => false}
        onToggleCard={() => {}}
        flash={null}
        cardRef={() => {}}
      />,
    );

  it("shows a summary's progress while it runs, then the parts", () => {
    const progress = { stage: "map", done: 3, total: 12, message: "pages 5–9" };
    const { unmount } = show({ id: "s", query: "", status: "running", result: null, name: "summarize_documents", progress });
    expect(screen.getByTestId("tool-running")).toHaveTextContent("Summarising part 3 of 12 (pages 5–9)…");
    unmount();
    const result = toolResult({ summary: { parts: 12, llm_calls: 14, notes: [] } });
    show({ id: "s", query: "", status: "done", result, name: "summarize_documents" });
    expect(screen.getByTestId("tool-summary")).toHaveTextContent("Summarised 12 parts");
    // what happened, not a search mode: the whole document was read
    expect(screen.getByTestId("whole-document-badge")).toHaveTextContent("Whole document");
    expect(screen.queryByTestId("search-mode-badge")).toBeNull();
  });

  it("says how many documents matched, and when the scan stopped early", () => {
    const documents = { total_documents: 41, total_passages: 90, complete: false, note: "Stopped", matches: [3, 2], more: true };
    show({ id: "s", query: "penalty", status: "done", result: toolResult({ documents }), name: "find_documents" });
    expect(screen.getByTestId("tool-summary")).toHaveTextContent("41 documents contain 'penalty' (stopped early)");
  });
});
