import { fireEvent, render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { toChatEvent } from "../api/chatEvents";
import type { CitationCheck, CitationReport } from "../api/types";
import { confidence, serverMessage, toolResult } from "../test/fixtures";
import { markCitations, verdictText } from "./Citations";
import { MessageItem } from "./MessageItem";
import { applyEvent, fromServerMessage, type ChatMessage } from "./state";

const RIGHT = "Port 11434 is where Ollama runs [1].";
const WRONG = "The model needs 8 GB of memory [1].";
const INVENTED = "It is free [7].";
const ANSWER = `${RIGHT} ${WRONG} ${INVENTED}`;

function check(sentence: string, n: number, verdict: CitationCheck["verdict"], at = ANSWER.indexOf(sentence)): CitationCheck {
  return { sentence, start: at, end: at + sentence.length, n, verdict, lexical: 0, similarity: null };
}

const REPORT: CitationReport = {
  message_id: "m1",
  citations: [check(RIGHT, 1, "supported"), check(WRONG, 1, "unsupported"), check(INVENTED, 7, "missing")],
  unsupported: 1,
  weak: 0,
  missing: 1,
  no_source: 0,
  sentences: 3,
  supported_sentences: 1,
  summary: "1 of 3 sentences supported by the cited passages",
  judged: false,
  all_supported: false,
  not_covered: false,
  searched: true,
  off_question: false,
  repaired: 0,
  warnings: 2,
};

const answer = (over: Partial<ChatMessage> = {}): ChatMessage => ({
  key: "a1",
  id: "m1",
  role: "assistant",
  content: ANSWER,
  status: "complete",
  searches: [{ id: "call_1", query: "q", status: "done", result: toolResult() }],
  error: null,
  connectionLost: false,
  citations: REPORT,
  ...over,
});

const renderMsg = (m: ChatMessage) =>
  render(
    <ol>
      <MessageItem message={m} canRetry={false} />
    </ol>,
  );

describe("verified citations", () => {
  it("underlines the unsupported claim, with a tooltip and a note screen readers hear", () => {
    renderMsg(answer());
    const claim = screen.getByTestId("claim-unsupported");
    expect(claim).toHaveTextContent(/^The model needs 8 GB of memory$/);
    expect(claim).toHaveAttribute("title", "Passage 1 does not seem to support this");
    const noteId = claim.getAttribute("aria-describedby")!;
    const note = document.getElementById(noteId)!;
    expect(note).toHaveAttribute("data-testid", "claim-flag");
    expect(note).toHaveTextContent("Passage 1 does not seem to support this"); // words, not colour alone
    // the citation button (focusable) carries the same description
    const buttons = screen.getAllByTestId("citation");
    expect(buttons).toHaveLength(2);
    expect(buttons[0]).not.toHaveAttribute("aria-describedby");
    expect(buttons[1]).toHaveAttribute("aria-describedby", noteId);
    // the supported claim is left alone
    expect(screen.getByTestId("message-content")).toHaveTextContent("Port 11434 is where Ollama runs");
    expect(screen.getAllByTestId(/^claim-(unsupported|weak)$/)).toHaveLength(1);
  });

  it("strikes a citation to a passage that does not exist and says so", () => {
    renderMsg(answer());
    const missing = screen.getByTestId("citation-missing");
    expect(missing.querySelector("s")).toHaveTextContent("[7]");
    expect(missing).toHaveTextContent("no passage 7");
    expect(missing.getAttribute("title")).toMatch(/^No passage 7/);
    expect(screen.getByTestId("citation-summary")).toHaveTextContent(
      "1 of 3 sentences supported by the cited passages: 1 not supported by the cited passage, 1 citing a passage that does not exist.",
    );
  });

  it("keeps citation clicks working on a marked answer", () => {
    renderMsg(answer());
    fireEvent.click(screen.getAllByTestId("citation")[1]);
    expect(screen.getByTestId("cite-popover")).toHaveAttribute("data-n", "1");
  });

  it("marks weak claims differently and leaves a clean answer unmarked", () => {
    const weak = { ...REPORT, citations: [REPORT.citations[0], { ...REPORT.citations[1], verdict: "weak" as const }] };
    const { unmount } = renderMsg(answer({ content: `${RIGHT} ${WRONG}`, citations: { ...weak, unsupported: 0, weak: 1, missing: 0 } }));
    expect(screen.getByTestId("claim-weak")).toHaveAttribute("title", "Passage 1 only partly supports this");
    expect(screen.getByTestId("citation-summary")).toHaveTextContent("1 only partly supported");
    unmount();
    const clean = { ...REPORT, citations: [REPORT.citations[0]], unsupported: 0, missing: 0, summary: "" };
    renderMsg(answer({ content: RIGHT, citations: clean }));
    expect(screen.queryByTestId("claim-flag")).toBeNull();
    expect(screen.queryByTestId("citation-summary")).toBeNull(); // a report of an older release: no summary
  });

  it("survives a reload: the stored message's citations give the same marks", () => {
    const m = fromServerMessage(
      serverMessage({
        content: ANSWER,
        tool_calls: [{ id: "call_1", name: "search_documents", arguments: { query: "q" } }],
        tool_results: [toolResult()],
        citations: REPORT,
      }),
    );
    renderMsg(m);
    expect(screen.getByTestId("claim-unsupported")).toBeInTheDocument();
    expect(screen.getByTestId("citation-missing")).toBeInTheDocument();
  });

  it("applies the citations event from the stream", () => {
    const ev = toChatEvent("citations", JSON.stringify(REPORT));
    expect(ev?.type).toBe("citations");
    const next = applyEvent(answer({ citations: null }), ev!);
    expect(next.citations?.unsupported).toBe(1);
    expect(toChatEvent("citations", '{"citations": "nope"}')).toMatchObject({ citations: [] });
  });

  it("code-point offsets: emoji before the claims do not shift the marks", () => {
    const content = "😀😀😀😀 Sky [1]. Sea [1]."; // each emoji: 2 UTF-16 units, 1 code point (the server's unit)
    const at = (s: string, start: number) => ({ ...check(s, 1, "supported", start), end: start + s.length });
    const report = { ...REPORT, citations: [at("Sky [1].", 5), { ...at("Sea [1].", 14), verdict: "unsupported" as const }] };
    renderMsg(answer({ content, citations: report }));
    expect(screen.getByTestId("claim-unsupported")).toHaveTextContent(/^Sea$/);
    expect(screen.getAllByTestId("claim-flag")).toHaveLength(1);
  });

  it("does not mark anything when the rendered markers do not line up with the report", () => {
    const html = "<p>Text <code>[1]</code></p>";
    expect(markCitations(html, "Text [1] [2]", REPORT, "x")).toBe(html);
  });

  it("model text cannot inject markup through the marks", () => {
    const content = 'The <img src=x onerror="alert(1)"> claim [1].';
    const report = { ...REPORT, citations: [check("The <img src=x onerror=\"alert(1)\"> claim.", 1, "unsupported", 0)] };
    report.citations[0].end = content.length;
    renderMsg(answer({ content, citations: report }));
    const claim = screen.getByTestId("claim-unsupported");
    expect(within(claim).queryByRole("img")).toBeNull();
    expect(document.querySelector("img")).toBeNull();
    expect(verdictText({ n: 3, verdict: "missing" })).toMatch(/^No passage 3/);
  });

  it("renders the plain answer while streaming", () => {
    renderMsg(answer({ status: "streaming" }));
    expect(screen.queryByTestId("claim-unsupported")).toBeNull();
    expect(screen.getByTestId("message-content")).toHaveTextContent("It is free [7]");
  });
});

describe("sentences without a source", () => {
  it("marks an uncited sentence that states a fact and says so in the summary", () => {
    const uncited = "The harbour budget was cut by 40 percent.";
    const content = `${RIGHT} ${uncited}`;
    const report: CitationReport = {
      ...REPORT,
      citations: [
        check(RIGHT, 1, "supported", 0),
        { ...check(uncited, 0, "no_source", content.indexOf(uncited)), n: 0 },
      ],
      unsupported: 0,
      missing: 0,
      no_source: 1,
      sentences: 2,
      supported_sentences: 1,
      summary: "1 of 2 sentences supported by the cited passages",
    };
    const html = markCitations(`<p>${content.replace("[1]", '<button class="cite" data-cite="1">1</button>')}</p>`, content, report, "t");
    const box = document.createElement("div");
    box.innerHTML = html;
    const marked = box.querySelector('[data-testid="claim-no_source"]');
    expect(marked?.textContent).toBe(uncited);
    expect(box.querySelector('[role="note"]')?.textContent).toContain("No source");
    render(<MessageItem message={answer({ content, citations: report })} canRetry={false} />);
    expect(screen.getByTestId("citation-summary").textContent).toBe(
      "⚠ 1 of 2 sentences supported by the cited passages: 1 stating facts with no source.",
    );
  });

  it("shows the summary with a check mark when every sentence is supported", () => {
    const report: CitationReport = {
      ...REPORT,
      citations: [check(RIGHT, 1, "supported", 0)],
      unsupported: 0,
      missing: 0,
      sentences: 1,
      supported_sentences: 1,
      summary: "1 of 1 sentences supported by the cited passages",
    };
    render(<MessageItem message={answer({ content: RIGHT, citations: report })} canRetry={false} />);
    expect(screen.getByTestId("citation-summary").textContent).toBe("✓ 1 of 1 sentences supported by the cited passages.");
  });

  it("draws a clean check in the success colour, not the warning's", () => {
    const report: CitationReport = {
      ...REPORT,
      citations: [check(RIGHT, 1, "supported", 0)],
      unsupported: 0,
      missing: 0,
      sentences: 1,
      supported_sentences: 1,
      all_supported: true,
      warnings: 0,
      summary: "1 of 1 sentences supported by the cited passages",
    };
    render(<MessageItem message={answer({ content: RIGHT, citations: report })} canRetry={false} />);
    expect(screen.getByTestId("citation-summary").className).toContain("citation-summary-ok");
  });

  it("never shows Not in your documents under an answer the server found supported", () => {
    const weak = toolResult({ confidence: confidence("insufficient") });
    const supported: CitationReport = {
      ...REPORT,
      citations: [check(RIGHT, 1, "supported", 0)],
      unsupported: 0,
      missing: 0,
      sentences: 1,
      supported_sentences: 1,
      all_supported: true,
      not_covered: false,
      warnings: 0,
      summary: "1 of 1 sentences supported by the cited passages",
    };
    const searches = [{ id: "call_1", query: "q", status: "done" as const, result: weak }];
    const { unmount } = render(<MessageItem message={answer({ content: RIGHT, searches, citations: supported })} canRetry={false} />);
    expect(screen.queryByTestId("not-covered")).toBeNull();
    unmount();
    // the server's verdict decides both ways; an older report without one falls back to the searches
    render(<MessageItem message={answer({ content: RIGHT, searches, citations: { ...supported, not_covered: true } })} canRetry={false} />);
    expect(screen.getByTestId("not-covered")).toBeTruthy();
  });

  it("shows the checked text, with the markers the check added", () => {
    const plain = "Port 11434 is where Ollama runs.";
    const repaired = `${plain} [1]`;
    const msg = applyEvent(answer({ content: plain, status: "streaming", citations: null }), {
      type: "citations",
      ...REPORT,
      citations: [check(repaired, 1, "supported", 0)],
      content: repaired,
      repaired: 1,
    } as never);
    expect(msg.content).toBe(repaired);
  });

  it("says so when the answer made no search of the documents", () => {
    const report: CitationReport = {
      ...REPORT,
      citations: [{ sentence: RIGHT, start: 0, end: RIGHT.length, n: 0, verdict: "no_source", lexical: 0, similarity: null }],
      unsupported: 0,
      missing: 0,
      no_source: 1,
      sentences: 1,
      supported_sentences: 0,
      searched: false,
      summary: "0 of 1 sentences supported by the cited passages",
    };
    render(<MessageItem message={answer({ content: RIGHT, searches: [], citations: report })} canRetry={false} />);
    expect(screen.getByTestId("citation-summary").textContent).toContain("no search of your documents was made");
  });

  /** A one-sentence answer its passage supports, with `over` changed. */
  const oneSupported = (over: Partial<CitationReport>): CitationReport => ({
    ...REPORT,
    citations: [check(RIGHT, 1, "supported")],
    unsupported: 0,
    missing: 0,
    sentences: 1,
    supported_sentences: 1,
    all_supported: true,
    summary: "1 of 1 sentences supported by the cited passages",
    ...over,
  });

  it("warns when the answer may not answer what was asked, and never beside Not in your documents", () => {
    const supported = oneSupported({ off_question: true, warnings: 1 });
    const { unmount } = render(
      <MessageItem message={answer({ content: `${RIGHT} [1]`, citations: supported })} canRetry={false} />,
    );
    const line = screen.getByTestId("citation-summary");
    expect(line.textContent).toContain("it may not answer what was asked");
    expect(line.className).not.toContain("citation-summary-ok");
    unmount();
    render(
      <MessageItem
        message={answer({ content: `${RIGHT} [1]`, citations: { ...supported, off_question: false, warnings: 0 } })}
        canRetry={false}
      />,
    );
    expect(screen.getByTestId("citation-summary").className).toContain("citation-summary-ok");
  });

  it("never shows a clean check mark beside Not in your documents", () => {
    const elsewhere = oneSupported({ not_covered: true, warnings: 1 });
    render(<MessageItem message={answer({ content: `${RIGHT} [1]`, citations: elsewhere })} canRetry={false} />);
    const line = screen.getByTestId("citation-summary");
    expect(line.className).not.toContain("citation-summary-ok");
    expect(line.textContent).toContain("match the question poorly");
    expect(screen.getByTestId("not-covered")).toBeTruthy();
  });
});
