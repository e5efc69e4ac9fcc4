import type { Confidence } from "../api/types";
import { Explain } from "./Explain";

const MEANING =
  "How closely the best passage found matches your question: high means it is very likely about the same thing; low means the documents may not answer it.";

/** "High confidence (82%)"; a warning chip when low or insufficient (older servers: only the latter). */
export function ConfidenceChip({ confidence }: { confidence: Confidence | null | undefined }) {
  if (!confidence) return null;
  const weak = confidence.insufficient_confidence || confidence.label === "low" || confidence.label === "insufficient";
  const text = confidence.text ?? (weak ? "Low confidence" : null);
  if (!text) return null;
  return (
    <Explain
      className={weak ? "chip chip-warn" : "chip"}
      testId="confidence-chip"
      data={{ "data-label": confidence.label }}
      explanation={confidence.message ? `${MEANING} ${confidence.message}` : MEANING}
    >
      {text}
    </Explain>
  );
}
