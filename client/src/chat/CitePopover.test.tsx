import { act, fireEvent, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { toolResult } from "../test/fixtures";
import { MessageItem } from "./MessageItem";
import type { ChatMessage } from "./state";

const answer: ChatMessage = {
  key: "a1",
  id: "m1",
  role: "assistant",
  content: "The port is 11434 [2].",
  status: "complete",
  searches: [{ id: "c", query: "q", status: "done", result: toolResult() }],
  error: null,
  connectionLost: false,
  prompt: "q",
};

const show = () =>
  render(
    <ol>
      <MessageItem message={answer} canRetry={false} onRegenerate={vi.fn()} onContinue={vi.fn()} />
    </ol>,
  );

/** A phone's screen: the preview is a sheet (CitePopover's SHEET_QUERY matches). */
const phone = vi.fn((query: string) => ({ matches: query.includes("max-width"), media: query }) as MediaQueryList);

describe("a pinned citation preview", () => {
  it("goes when Tab takes the focus past its last button (it would cover Regenerate)", async () => {
    const user = userEvent.setup();
    show();
    await user.click(screen.getByTestId("citation"));
    expect(screen.getByTestId("cite-popover")).toBeInTheDocument();
    expect(document.activeElement).toBe(screen.getByTestId("cite-popover-open"));
    await user.tab(); // Show in sources
    await user.tab(); // Close
    expect(screen.getByRole("button", { name: "Close preview" })).toHaveFocus();
    await user.tab(); // out: the message's actions
    expect(screen.queryByTestId("cite-popover")).toBeNull();
    expect(document.activeElement).not.toBe(document.body);
  });

  it("closes on Escape wherever the focus is (a click on its text leaves the focus on the page)", () => {
    show();
    const cite = screen.getByTestId("citation");
    fireEvent.click(cite);
    expect(screen.getByTestId("cite-popover")).toBeInTheDocument();
    (document.activeElement as HTMLElement).blur(); // the passage's text was clicked: the focus is on <body>
    expect(document.activeElement).toBe(document.body);
    const stop = vi.fn();
    window.addEventListener("keydown", stop);
    try {
      fireEvent.keyDown(document.body, { key: "Escape" });
      expect(screen.queryByTestId("cite-popover")).toBeNull();
      expect(document.activeElement).toBe(cite); // back to its [n]
      expect((stop.mock.calls[0][0] as KeyboardEvent).defaultPrevented).toBe(true); // not also "stop the answer"
    } finally {
      window.removeEventListener("keydown", stop);
    }
  });

  it("on a phone, opens no sheet before the tap is complete (it would take the tap's release and click)", () => {
    vi.stubGlobal("matchMedia", phone);
    try {
      show();
      const cite = screen.getByTestId("citation");
      // A tap's first half: the mouse-down moves the pointer over [n] and focuses it, before the release.
      fireEvent.mouseOver(cite);
      act(() => cite.focus());
      expect(screen.queryByTestId("cite-popover")).toBeNull(); // nothing lies over [n] for the release to hit
      fireEvent.click(cite); // the tap's click reaches [n]: pinned, the focus in the sheet
      expect(screen.getByTestId("cite-popover")).toHaveClass("cite-sheet");
      expect(screen.getByTestId("cite-popover-open")).toHaveFocus();
      fireEvent.keyDown(document.activeElement as Element, { key: "Escape" });
      expect(screen.queryByTestId("cite-popover")).toBeNull();
      expect(cite).toHaveFocus();
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it("on a phone, Enter on a focused [n] pins the sheet and Tab past its last button closes it", async () => {
    vi.stubGlobal("matchMedia", phone);
    const user = userEvent.setup();
    try {
      show();
      const cite = screen.getByTestId("citation");
      act(() => cite.focus());
      expect(screen.queryByTestId("cite-popover")).toBeNull(); // focus alone: no sheet over the page
      await user.keyboard("{Enter}");
      expect(screen.getByTestId("cite-popover")).toHaveClass("cite-sheet");
      expect(screen.getByTestId("cite-popover-open")).toHaveFocus();
      await user.tab(); // Show in sources
      await user.tab(); // Close
      await user.tab(); // out
      expect(screen.queryByTestId("cite-popover")).toBeNull();
      expect(document.activeElement).not.toBe(document.body);
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it("is a sheet at the bottom of a phone's screen, not a popover positioned under its [n]", () => {
    const matchMedia = vi.fn((query: string) => ({ matches: query.includes("max-width"), media: query }) as MediaQueryList);
    vi.stubGlobal("matchMedia", matchMedia);
    try {
      show();
      fireEvent.click(screen.getByTestId("citation"));
      const pop = screen.getByTestId("cite-popover");
      expect(pop).toHaveClass("cite-sheet");
      expect(pop.style.top).toBe(""); // the sheet's place is the stylesheet's
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
