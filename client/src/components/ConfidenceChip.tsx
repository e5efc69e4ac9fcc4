import type { Confidence } from "../api/types";

/** "High confidence (82%)"; a warning chip when low or insufficient (older servers: only the latter). */
export function ConfidenceChip({ confidence }: { confidence: Confidence | null | undefined }) {
  if (!confidence) return null;
  const weak = confidence.insufficient_confidence || confidence.label === "low" || confidence.label === "insufficient";
  const text = confidence.text ?? (weak ? "Low confidence" : null);
  if (!text) return null;
  return (
    <span
      className={weak ? "chip chip-warn" : "chip"}
      title={confidence.message ?? "How closely the best passage matches the question (cosine similarity)"}
      data-testid="confidence-chip"
      data-label={confidence.label}
    >
      {text}
    </span>
  );
}
