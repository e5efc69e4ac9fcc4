import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { SourceCard } from "../chat/SourceCard";
import { chunk } from "../test/fixtures";
import { scoreHint, scoreLabel, scorePercent } from "./score";

const trace = (rerank_score: number | null) => ({
  vector_rank: 1,
  vector_score: 0.5,
  keyword_rank: null,
  keyword_score: null,
  fused_score: 0.6,
  rerank_score,
});

describe("scoreLabel", () => {
  it("names the figure the server says it sent", () => {
    expect(scoreLabel({ score_kind: "similarity", trace: trace(null) }, false)).toBe("Similarity");
    expect(scoreLabel({ score_kind: "bm25 (normalised)", trace: trace(null) }, false)).toBe("Keyword match");
    expect(scoreLabel({ score_kind: "fused", trace: trace(null) }, false)).toBe("Hybrid score");
    expect(scoreLabel({ score_kind: "rerank", trace: trace(0.9) }, true)).toBe("Relevance");
    // a reranked search whose rerank deadline left this chunk unscored: still the hybrid score
    expect(scoreLabel({ score_kind: "fused", trace: trace(null) }, true)).toBe("Hybrid score");
  });
  it("falls back, for passages saved without score_kind, to Relevance only when reranked AND scored", () => {
    expect(scoreLabel({ trace: trace(0.9) }, true)).toBe("Relevance");
    expect(scoreLabel({ trace: trace(0) }, true)).toBe("Relevance");
    expect(scoreLabel({ trace: trace(null) }, true)).toBe("Similarity");
    expect(scoreLabel({ trace: trace(0.9) }, false)).toBe("Similarity");
    expect(scoreLabel({ trace: trace(0.9) }, undefined)).toBe("Similarity");
    expect(scoreLabel({ trace: null }, true)).toBe("Similarity");
    expect(scoreLabel({}, true)).toBe("Similarity");
    expect(scoreLabel({ score_kind: null }, true)).toBe("Similarity");
  });
  it("has a one-line explanation for every label", () => {
    for (const label of ["Similarity", "Keyword match", "Hybrid score", "Relevance"] as const) {
      expect(scoreHint(label).length).toBeGreaterThan(10);
    }
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
  const renderCard = (reranked: boolean, rerank: number | null, kind: "fused" | "rerank" | undefined) =>
    render(
      <ol>
        <SourceCard
          index={1}
          chunk={chunk({ score: 0.873, score_kind: kind, trace: trace(rerank) })}
          reranked={reranked}
          expanded={false}
          flash={false}
          onToggle={() => {}}
        />
      </ol>,
    );

  it("shows a Relevance percentage and bar for reranked chunks", () => {
    renderCard(true, 0.87, "rerank");
    expect(screen.getByTestId("score-label")).toHaveTextContent("Relevance");
    expect(screen.getByTestId("score-value")).toHaveTextContent("87%");
    expect(screen.getByRole("meter", { name: "Relevance" })).toHaveAttribute("aria-valuenow", "87");
    expect(screen.getByTestId("score-bar")).toHaveAttribute("title", expect.stringContaining("language model"));
  });

  it("shows the Hybrid score, explained, when the chunk lacks a rerank score", () => {
    renderCard(true, null, "fused");
    expect(screen.getByTestId("score-label")).toHaveTextContent("Hybrid score");
    expect(screen.getByTestId("score-bar")).toHaveAttribute("title", expect.stringContaining("orders the results"));
  });

  it("shows Similarity for a passage saved before score_kind existed", () => {
    renderCard(false, null, undefined);
    expect(screen.getByTestId("score-label")).toHaveTextContent("Similarity");
  });
});
