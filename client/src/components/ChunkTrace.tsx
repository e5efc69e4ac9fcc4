import { useId, useState } from "react";
import type { ChunkTrace as Trace } from "../api/types";

const fmt = (v: number | null | undefined, digits = 3) => (v == null ? "—" : v.toFixed(digits));
const rank = (v: number | null | undefined) => (v == null ? "not matched" : `#${v}`);

/**
 * "Why this chunk": the retrieval trace behind a toggle. Each arm's rank and raw score (cosine similarity,
 * BM25), the chunk's cosine similarity even when the vector arm did not return it, the hybrid (fused) score
 * and the rerank score: the figures behind the one score the card shows.
 */
export function ChunkTrace({ trace }: { trace?: Trace | null }) {
  const [open, setOpen] = useState(false);
  const id = useId();
  if (!trace) return null;
  return (
    <div className="trace">
      <button
        type="button"
        className="link-button"
        aria-expanded={open}
        aria-controls={id}
        onClick={() => setOpen((o) => !o)}
        data-testid="why-toggle"
      >
        {open ? "Hide details" : "Why this chunk"}
      </button>
      {open && (
        <dl id={id} className="trace-grid" data-testid="chunk-trace">
          <dt>Vector rank</dt>
          <dd>
            {rank(trace.vector_rank)}
            {trace.vector_score != null && <span className="muted"> (similarity {fmt(trace.vector_score)})</span>}
          </dd>
          <dt>Keyword rank</dt>
          <dd>
            {rank(trace.keyword_rank)}
            {trace.keyword_score != null && <span className="muted"> (BM25 {fmt(trace.keyword_score)})</span>}
          </dd>
          <dt>Similarity</dt>
          <dd data-testid="trace-similarity">{fmt(trace.similarity ?? trace.vector_score)}</dd>
          <dt>Hybrid score</dt>
          <dd data-testid="trace-fused">{fmt(trace.fused_score)}</dd>
          <dt>Rerank score</dt>
          <dd>{fmt(trace.rerank_score)}</dd>
        </dl>
      )}
    </div>
  );
}
