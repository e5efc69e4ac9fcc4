import { act, fireEvent, render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { bareToolResult, chunk, confidence, serverMessage, toolResult } from "../test/fixtures";
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
  it("clicking [2] shows passage 2 in place: no scroll, no source list; it links to the viewer", () => {
    const scroll = vi.spyOn(Element.prototype, "scrollIntoView");
    renderMsg({
      ...base,
      id: "m1",
      status: "complete",
      content: "The port is 11434 [2].",
      searches: [{ id: "c", query: "q", status: "done", result: toolResult() }],
    });
    const cite = screen.getByTestId("citation");
    fireEvent.click(cite);
    const pop = screen.getByTestId("cite-popover");
    const second = toolResult().chunks[1];
    expect(pop).toHaveAttribute("data-n", "2");
    expect(screen.getByTestId("cite-popover-passage")).toHaveTextContent(second.content);
    const href = screen.getByTestId("cite-popover-open").getAttribute("href")!;
    expect(href).toContain(`/documents/${second.document_id}?chunk=${second.id}`);
    expect(screen.queryByTestId("source-card")).toBeNull();
    expect(scroll).not.toHaveBeenCalled();
    expect(document.activeElement).toBe(screen.getByTestId("cite-popover-open")); // keyboard users reach the link
    // Escape closes it and gives focus back to [2]
    fireEvent.keyDown(pop, { key: "Escape" });
    expect(screen.queryByTestId("cite-popover")).toBeNull();
    expect(document.activeElement).toBe(cite);
  });

  it("hovering [n] previews it; leaving closes it after a moment; Show in sources opens the card", () => {
    vi.useFakeTimers();
    try {
      renderMsg({
        ...base,
        status: "complete",
        content: "The port is 11434 [1].",
        searches: [{ id: "c", query: "q", status: "done", result: toolResult() }],
      });
      const cite = screen.getByTestId("citation");
      fireEvent.mouseOver(cite);
      expect(screen.getByTestId("cite-popover")).toHaveAttribute("data-n", "1");
      fireEvent.mouseOut(cite);
      act(() => vi.advanceTimersByTime(400));
      expect(screen.queryByTestId("cite-popover")).toBeNull();
      fireEvent.mouseOver(cite);
      fireEvent.click(screen.getByRole("button", { name: "Show in sources" }));
      const card = screen.getAllByTestId("source-card").find((c) => c.dataset.index === "1")!;
      expect(card).toHaveAttribute("data-expanded", "true");
    } finally {
      vi.useRealTimers();
    }
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
    expect(screen.getByTestId("cite-popover")).toHaveAccessibleName("Source 3: Third");
  });
});

describe("source cards", () => {
  it("each card links to the viewer at its chunk and page", () => {
    renderMsg({ ...base, status: "complete", content: "x", searches: [{ id: "c", query: "q", status: "done", result: toolResult() }] });
    fireEvent.click(screen.getByTestId("sources-toggle"));
    const links = screen.getAllByTestId("source-open").map((a) => a.getAttribute("href"));
    const [first, second] = toolResult().chunks;
    expect(links).toEqual([
      `/documents/${first.document_id}?chunk=${first.id}${first.page != null ? `&page=${first.page}` : ""}`,
      `/documents/${second.document_id}?chunk=${second.id}&page=4`,
    ]);
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

describe("message actions", () => {
  const done: ChatMessage = { ...base, id: "m2", status: "complete", content: "The answer.", siblings: ["m1", "m2", "m3"] };

  it("copy, regenerate, branches and feedback on an answer", async () => {
    const writeText = vi.fn(() => Promise.resolve());
    Object.assign(navigator, { clipboard: { writeText } });
    const h = { onRegenerate: vi.fn(), onBranch: vi.fn(), onRate: vi.fn(() => Promise.resolve()), onContinue: vi.fn() };
    render(
      <ol>
        <MessageItem message={done} canRetry={false} {...h} />
      </ol>,
    );
    fireEvent.click(screen.getByTestId("copy-message"));
    expect(writeText).toHaveBeenCalledWith("The answer.");
    expect(await screen.findByText("Copied")).toBeInTheDocument();
    fireEvent.click(screen.getByTestId("regenerate"));
    expect(h.onRegenerate).toHaveBeenCalledWith("m2");
    expect(screen.queryByTestId("continue")).toBeNull(); // complete answers are not continued
    expect(screen.getByTestId("sibling-position")).toHaveTextContent("2/3");
    fireEvent.click(screen.getByTestId("sibling-prev"));
    expect(h.onBranch).toHaveBeenCalledWith("m1");
    fireEvent.click(screen.getByTestId("sibling-next"));
    expect(h.onBranch).toHaveBeenLastCalledWith("m3");
    await act(async () => fireEvent.click(screen.getByTestId("thumbs-down")));
    expect(h.onRate).toHaveBeenCalledWith("m2", "down", null);
    fireEvent.change(screen.getByTestId("feedback-note"), { target: { value: "wrong year" } });
    await act(async () => fireEvent.click(screen.getByTestId("feedback-save")));
    expect(h.onRate).toHaveBeenLastCalledWith("m2", null, "wrong year"); // the rating comes from the message
  });

  it("a stopped answer offers Continue and Regenerate; none while another answer runs", () => {
    const h = { onRegenerate: vi.fn(), onContinue: vi.fn() };
    const stopped = { ...done, status: "incomplete" as const, siblings: undefined };
    const { rerender } = render(
      <ol>
        <MessageItem message={stopped} canRetry={false} {...h} />
      </ol>,
    );
    fireEvent.click(screen.getByTestId("continue"));
    expect(h.onContinue).toHaveBeenCalledWith("m2");
    rerender(
      <ol>
        <MessageItem message={stopped} canRetry={false} running {...h} />
      </ol>,
    );
    expect(screen.getByTestId("continue")).toBeDisabled();
    expect(screen.getByTestId("regenerate")).toBeDisabled();
  });

  it("edit a question: Send makes the edited question; Escape cancels", async () => {
    const onEdit = vi.fn(() => Promise.resolve(true));
    const q: ChatMessage = { ...base, id: "q1", role: "user", status: "complete", content: "Old question" };
    render(
      <ol>
        <MessageItem message={q} canRetry={false} onEdit={onEdit} />
      </ol>,
    );
    fireEvent.click(screen.getByTestId("edit-message"));
    const input = screen.getByTestId("edit-input");
    expect(input).toHaveFocus();
    fireEvent.change(input, { target: { value: "New question" } });
    await act(async () => fireEvent.click(screen.getByTestId("edit-send")));
    expect(onEdit).toHaveBeenCalledWith("q1", "New question");
    expect(screen.queryByTestId("edit-input")).toBeNull();
    fireEvent.click(screen.getByTestId("edit-message"));
    fireEvent.keyDown(screen.getByTestId("edit-input"), { key: "Escape" });
    expect(screen.getByTestId("message-content")).toHaveTextContent("Old question");
  });
});

describe("not in your documents", () => {
  const weak = { id: "c", query: "tariffs", status: "done" as const, result: toolResult({ confidence: confidence("insufficient", 0.12) }) };
  const good = { id: "d", query: "lava", status: "done" as const, result: toolResult({ confidence: confidence("high", 0.8) }) };

  it("says it plainly when every search fell below the floor, and offers to widen a scoped chat", () => {
    const onWiden = vi.fn();
    render(
      <ol>
        <MessageItem message={{ ...base, id: "m1", status: "complete", content: "No.", searches: [weak] }} onRetry={vi.fn()} canRetry scoped onWiden={onWiden} />
      </ol>,
    );
    expect(screen.getByTestId("not-covered")).toHaveTextContent("Not in your documents.");
    expect(screen.getByTestId("tool-summary")).toHaveTextContent("Found 2 chunks, none a close match");
    expect(screen.getByTestId("confidence-chip")).toHaveAttribute("data-label", "insufficient");
    fireEvent.click(screen.getByTestId("widen-scope"));
    expect(onWiden).toHaveBeenCalledWith("m1");
  });

  it("shows a chip on every search, and no note when one search matched", () => {
    renderMsg({ ...base, id: "m2", status: "complete", content: "Lava [2].", searches: [weak, good] });
    expect(screen.queryByTestId("not-covered")).toBeNull();
    expect(screen.getAllByTestId("confidence-chip").map((c) => c.getAttribute("data-label"))).toEqual(["insufficient", "high"]);
  });

  it("offers no widening when the chat already searches everything", () => {
    renderMsg({ ...base, id: "m3", status: "complete", content: "No.", searches: [weak] });
    expect(screen.getByTestId("not-covered")).toBeInTheDocument();
    expect(screen.queryByTestId("widen-scope")).toBeNull();
  });
});
