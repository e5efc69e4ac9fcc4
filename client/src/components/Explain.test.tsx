import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ConfidenceChip } from "./ConfidenceChip";
import { SearchModeBadge } from "./SearchModeBadge";

describe("badges that explain themselves", () => {
  it("a search mode badge says what the search did, in plain words, on hover, focus and tap", () => {
    render(<SearchModeBadge mode="keyword" reranked />);
    const badge = screen.getByTestId("search-mode-badge");
    const tip = screen.getByTestId("search-mode-badge-explained");
    expect(badge).toHaveTextContent(/^Keyword \+ Reranked$/);
    // read by screen readers without opening anything; "BM25" only with what it means
    expect(badge).toHaveAccessibleDescription(/passages containing the words of your question were found, rare words counting more/);
    expect(badge).toHaveAccessibleDescription(/the language model read the passages again/);
    expect(tip).not.toBeVisible();
    fireEvent.mouseEnter(badge.parentElement!);
    expect(tip).toBeVisible();
    fireEvent.mouseLeave(badge.parentElement!);
    expect(tip).not.toBeVisible();
    fireEvent.click(badge); // a tap keeps it
    expect(tip).toBeVisible();
    expect(badge).toHaveAttribute("aria-expanded", "true");
    fireEvent.mouseLeave(badge.parentElement!);
    expect(tip).toBeVisible();
    fireEvent.keyDown(badge, { key: "Escape" });
    expect(tip).not.toBeVisible();
    fireEvent.click(badge);
    fireEvent.pointerDown(document.body); // a tap elsewhere
    expect(tip).not.toBeVisible();
  });

  it("the confidence chip explains the score and keeps the server's advice", () => {
    render(
      <ConfidenceChip
        confidence={{ label: "low", text: "Low confidence (31%)", insufficient: false, insufficient_confidence: false, message: "Try other words." } as never}
      />,
    );
    const chip = screen.getByTestId("confidence-chip");
    expect(chip).toHaveClass("chip-warn");
    expect(chip).toHaveAttribute("data-label", "low");
    expect(chip).toHaveAccessibleDescription(/How closely the best passage found matches your question.*Try other words\./);
    fireEvent.focus(chip);
    expect(screen.getByTestId("confidence-chip-explained")).toBeVisible();
  });
});
