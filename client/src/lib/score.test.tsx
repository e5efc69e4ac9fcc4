import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { SourceCard } from "../chat/SourceCard";
import { chunk } from "../test/fixtures";
import { scoreLabel, scorePercent } from "./score";

const trace = (rerank_score: number | null) => ({
  vector_rank: 1,
  vector_score: 0.5,
  keyword_rank: null,
  keyword_score: null,
  fused_score: 0.03,
  rerank_score,
});

describe("scoreLabel", () => {
  it("is Relevance only when reranked AND the chunk has a rerank score", () => {
    expect(scoreLabel({ trace: trace(0.9) }, true)).toBe("Relevance");
    expect(scoreLabel({ trace: trace(0) }, true)).toBe("Relevance");
  });
  it("is Similarity otherwise", () => {
    expect(scoreLabel({ trace: trace(null) }, true)).toBe("Similarity");
    expect(scoreLabel({ trace: trace(0.9) }, false)).toBe("Similarity");
    expect(scoreLabel({ trace: trace(0.9) }, undefined)).toBe("Similarity");
    expect(scoreLabel({ trace: null }, true)).toBe("Similarity");
    expect(scoreLabel({}, true)).toBe("Similarity");
  });
});

describe("scorePercent", () => {
  it("rounds and clamps", () => {
    expect(scorePercent(0.824)).toBe(82);
    expect(scorePercent(1.3)).toBe(100);
    expect(scorePercent(-1)).toBe(0);
    expect(scorePercent(null)).toBe(0);
    expect(scorePercent(NaN)).toBe(0);
  });
});

describe("SourceCard score", () => {
  const renderCard = (reranked: boolean, rerank: number | null) =>
    render(
      <ol>
        <SourceCard
          index={1}
          chunk={chunk({ score: 0.873, trace: trace(rerank) })}
          reranked={reranked}
          expanded={false}
          flash={false}
          onToggle={() => {}}
        />
      </ol>,
    );

  it("shows a Relevance percentage and bar for reranked chunks", () => {
    renderCard(true, 0.87);
    expect(screen.getByTestId("score-label")).toHaveTextContent("Relevance");
    expect(screen.getByTestId("score-value")).toHaveTextContent("87%");
    expect(screen.getByRole("meter", { name: "Relevance" })).toHaveAttribute("aria-valuenow", "87");
  });

  it("shows Similarity when the chunk lacks a rerank score", () => {
    renderCard(true, null);
    expect(screen.getByTestId("score-label")).toHaveTextContent("Similarity");
  });
});
