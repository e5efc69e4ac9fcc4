import { act, render, screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { applyEvent } from "./state";
import type { ChatMessage } from "./state";
import { ProgressNote, aboutTime, progressText, type Estimate } from "./ProgressNote";

const estimate: Estimate = {
  stage: "reading",
  passages: 6,
  prompt_tokens: 400,
  first_token_s: 40,
  total_s: 140,
  prompt_tps: 10,
  gen_tps: 2,
  samples: 3,
};

describe("the answer-in-progress line", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date("2025-01-01T12:00:00Z"));
  });
  afterEach(() => vi.useRealTimers());

  it("says the stage and the estimate, then counts up to it", () => {
    render(<ProgressNote reading={{ passages: 6, since: Date.now(), estimate }} />);
    const line = screen.getByTestId("reading");
    expect(line).toHaveTextContent("Reading 6 passages… about 40 s");
    expect(line.title).toContain("about 10.0 tokens/s");
    expect(line.title).toContain("the whole answer takes about 2.5 min");
    act(() => vi.advanceTimersByTime(12_000));
    expect(line).toHaveTextContent("Reading 6 passages… 12 s of about 40 s");
    act(() => vi.advanceTimersByTime(40_000));
    expect(line).toHaveTextContent("Reading 6 passages… 52 s (usually about 40 s; still working)");
  });

  it("without a measured speed it shows the stage and the time so far, as before", () => {
    render(<ProgressNote reading={{ passages: 1, since: Date.now() - 5_000 }} />);
    expect(screen.getByTestId("reading")).toHaveTextContent(/^Reading 1 passage… 5 s$/);
    expect(screen.getByTestId("reading").title).toBe("");
  });

  it("before any passage it is thinking", () => {
    expect(progressText({ passages: 0, since: 0, estimate: { ...estimate, stage: "thinking", passages: 0 } }, 0)).toBe(
      "Thinking… about 40 s",
    );
    expect(aboutTime(0.2)).toBe("about 1 s");
    expect(aboutTime(130)).toBe("about 2 min");
    expect(aboutTime(1500)).toBe("about 25 min");
  });

  it("the estimate event starts or updates the line; the first token ends it", () => {
    let m: ChatMessage = { key: "a", id: null, role: "assistant", content: "", status: "streaming", searches: [], error: null, connectionLost: false };
    m = applyEvent(m, { type: "estimate", ...estimate, stage: "thinking", passages: 0 });
    expect(m.reading?.passages).toBe(0);
    expect(m.reading?.estimate?.first_token_s).toBe(40);
    m = applyEvent(m, { type: "reading", passages: 6 });
    const since = m.reading?.since;
    m = applyEvent(m, { type: "estimate", ...estimate });
    expect(m.reading?.since).toBe(since);
    expect(m.reading?.estimate?.passages).toBe(6);
    m = applyEvent(m, { type: "token", delta: "Hi" });
    expect(m.reading).toBeNull();
  });
});
