import { useId, useState } from "react";
import type { ChunkTrace as Trace } from "../api/types";

const fmt = (v: number | null | undefined, digits = 3) => (v == null ? "—" : v.toFixed(digits));
const rank = (v: number | null | undefined) => (v == null ? "not matched" : `#${v}`);

/** "Why this chunk": the retrieval trace behind a toggle. */
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
            {trace.vector_score != null && <span className="muted"> ({fmt(trace.vector_score)})</span>}
          </dd>
          <dt>Keyword rank</dt>
          <dd>
            {rank(trace.keyword_rank)}
            {trace.keyword_score != null && <span className="muted"> ({fmt(trace.keyword_score)})</span>}
          </dd>
          <dt>Fused score</dt>
          <dd>{fmt(trace.fused_score, 4)}</dd>
          <dt>Rerank score</dt>
          <dd>{fmt(trace.rerank_score)}</dd>
        </dl>
      )}
    </div>
  );
}
