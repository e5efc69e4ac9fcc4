import { fireEvent, render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { bareToolResult, chunk, serverMessage, toolResult } from "../test/fixtures";
import { MessageItem } from "./MessageItem";
import { fromServerMessage, type ChatMessage } from "./state";

const base: ChatMessage = {
  key: "a1",
  id: null,
  role: "assistant",
  content: "",
  status: "streaming",
  searches: [],
  error: null,
  connectionLost: false,
  prompt: "q",
};

const renderMsg = (m: ChatMessage, onRetry = vi.fn()) =>
  render(
    <ol>
      <MessageItem message={m} onRetry={onRetry} canRetry />
    </ol>,
  );

describe("tool-call indicator", () => {
  it("shows a spinner while searching", () => {
    renderMsg({ ...base, searches: [{ id: "c", query: "ollama port", status: "running", result: null }] });
    const tool = screen.getByTestId("tool-indicator");
    expect(tool).toHaveAttribute("data-status", "running");
    expect(tool).toHaveTextContent("Searching documents for 'ollama port'");
    expect(within(tool).getByRole("status")).toBeInTheDocument();
  });

  it("shows the count and the mode badge when done", () => {
    renderMsg({
      ...base,
      searches: [{ id: "c", query: "q", status: "done", result: toolResult({ search_mode: "keyword", reranked: true }) }],
    });
    expect(screen.getByTestId("tool-summary")).toHaveTextContent("Found 2 relevant chunks");
    expect(screen.getByTestId("search-mode-badge")).toHaveTextContent("Keyword + Reranked");
  });

  it("history without search_mode shows no badge and still renders", () => {
    const m = fromServerMessage(
      serverMessage({
        content: "Old answer [1]",
        tool_calls: [{ id: "c", name: "search_documents", arguments: { query: "q" } }],
        tool_results: [bareToolResult("c", [chunk()])],
      }),
    );
    renderMsg(m);
    expect(screen.getByTestId("tool-summary")).toHaveTextContent("Found 1 relevant chunk");
    expect(screen.queryByTestId("search-mode-badge")).toBeNull();
    expect(screen.getByTestId("message-content")).toHaveTextContent("Old answer");
  });

  it("expands source cards and the 'Why this chunk' trace", () => {
    renderMsg({ ...base, status: "complete", searches: [{ id: "c", query: "q", status: "done", result: toolResult() }] });
    expect(screen.queryByTestId("source-card")).toBeNull();
    fireEvent.click(screen.getByTestId("sources-toggle"));
    const cards = screen.getAllByTestId("source-card");
    expect(cards).toHaveLength(2);
    expect(cards[0]).toHaveTextContent("User Guide");
    expect(cards[0]).toHaveTextContent("p. 3");
    expect(within(cards[0]).getByTestId("score-label")).toHaveTextContent("Hybrid score");
    fireEvent.click(within(cards[0]).getByTestId("source-card-toggle"));
    fireEvent.click(within(cards[0]).getByTestId("why-toggle"));
    const trace = within(cards[0]).getByTestId("chunk-trace");
    expect(trace).toHaveTextContent("Vector rank#1");
    expect(trace).toHaveTextContent("Keyword rank#2");
    expect(trace).toHaveTextContent("Hybrid score0.820");
  });
});

describe("citations in an answer", () => {
  it("clicking [2] opens the sources and expands card 2", () => {
    const scroll = vi.spyOn(Element.prototype, "scrollIntoView");
    renderMsg({
      ...base,
      status: "complete",
      content: "The port is 11434 [2].",
      searches: [{ id: "c", query: "q", status: "done", result: toolResult() }],
    });
    fireEvent.click(screen.getByTestId("citation"));
    const card = screen.getAllByTestId("source-card").find((c) => c.dataset.index === "2")!;
    expect(card).toHaveAttribute("data-expanded", "true");
    expect(card).toHaveClass("flash");
    expect(scroll).toHaveBeenCalled();
    expect(document.activeElement).toBe(card);
  });

  it("numbers citations across several searches", () => {
    renderMsg({
      ...base,
      status: "complete",
      content: "See [3].",
      searches: [
        { id: "a", query: "1", status: "done", result: toolResult({ id: "a" }) },
        { id: "b", query: "2", status: "done", result: toolResult({ id: "b", chunks: [chunk({ id: 26, title: "Third" })] }) },
      ],
    });
    fireEvent.click(screen.getByTestId("citation"));
    const card = screen.getAllByTestId("source-card").find((c) => c.dataset.index === "3")!;
    expect(card).toHaveTextContent("Third");
  });
});

describe("errors", () => {
  it("shows a stream error inline, without Retry", () => {
    renderMsg({ ...base, status: "error", error: { code: "llm_unreachable", message: "Start it with `ollama serve`" } });
    const box = screen.getByTestId("error-box");
    expect(box).toHaveTextContent("Start it with ollama serve");
    expect(box.querySelector("code")).toHaveTextContent("ollama serve");
    expect(screen.queryByTestId("retry-button")).toBeNull();
  });

  it("offers Retry after a dropped connection", () => {
    const onRetry = vi.fn();
    renderMsg(
      { ...base, status: "incomplete", connectionLost: true, error: { code: "connection_lost", message: "Connection lost" } },
      onRetry,
    );
    fireEvent.click(screen.getByTestId("retry-button"));
    expect(onRetry).toHaveBeenCalledWith("a1");
  });
});
