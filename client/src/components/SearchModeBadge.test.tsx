import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { SearchMode } from "../api/types";
import { SearchModeBadge, searchModeText } from "./SearchModeBadge";

const cases: [SearchMode, boolean, string][] = [
  ["hybrid", false, "Hybrid"],
  ["hybrid", true, "Hybrid + Reranked"],
  ["vector", false, "Vector"],
  ["vector", true, "Vector + Reranked"],
  ["keyword", false, "Keyword"],
  ["keyword", true, "Keyword + Reranked"],
];

describe("SearchModeBadge", () => {
  it.each(cases)("mode=%s reranked=%s → %s", (mode, reranked, text) => {
    render(<SearchModeBadge mode={mode} reranked={reranked} />);
    expect(screen.getByTestId("search-mode-badge")).toHaveTextContent(new RegExp(`^${text.replace("+", "\\+")}$`));
  });

  it("reranked absent/null means not reranked", () => {
    expect(searchModeText("vector", undefined)).toBe("Vector");
    expect(searchModeText("vector", null)).toBe("Vector");
  });

  it.each([undefined, null, "" as SearchMode, "fancy" as SearchMode])("renders nothing for mode %s", (mode) => {
    const { container } = render(<SearchModeBadge mode={mode} reranked={true} />);
    expect(container).toBeEmptyDOMElement();
    expect(screen.queryByTestId("search-mode-badge")).toBeNull();
  });
});
