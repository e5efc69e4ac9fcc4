import type { SearchStep } from "./state";
import { SearchModeBadge } from "../components/SearchModeBadge";
import { Spinner } from "../components/Spinner";
import { SourceCard } from "./SourceCard";
import { ConfidenceChip } from "../components/ConfidenceChip";

interface Props {
  step: SearchStep;
  /** Citation number of this search's first chunk. */
  firstIndex: number;
  open: boolean;
  onToggle: () => void;
  isCardOpen: (n: number) => boolean;
  onToggleCard: (n: number) => void;
  flash: number | null;
  cardRef: (n: number, el: HTMLLIElement | null) => void;
}

export function ToolIndicator({ step, firstIndex, open, onToggle, isCardOpen, onToggleCard, flash, cardRef }: Props) {
  const q = step.query ? `'${step.query}'` : "";
  if (step.status === "running") {
    return (
      <div className="tool" data-testid="tool-indicator" data-status="running">
        <div className="tool-line">
          <Spinner label="Searching" />
          <span>Searching documents for {q || "…"}…</span>
        </div>
      </div>
    );
  }
  if (step.status === "stopped" || !step.result) {
    return (
      <div className="tool" data-testid="tool-indicator" data-status="stopped">
        <div className="tool-line muted">Search {q && `for ${q} `}did not finish</div>
      </div>
    );
  }
  const r = step.result;
  const n = r.chunks.length;
  return (
    <div className="tool" data-testid="tool-indicator" data-status="done">
      <button
        type="button"
        className="tool-line tool-toggle"
        aria-expanded={open}
        onClick={onToggle}
        disabled={n === 0}
        data-testid="sources-toggle"
        title={step.query ? `Query: ${step.query}` : undefined}
      >
        <span className="tool-icon" aria-hidden="true">
          ✓
        </span>
        <span data-testid="tool-summary">
          {n > 0 && (r.confidence?.insufficient ?? r.confidence?.insufficient_confidence)
            ? `Found ${n} ${n === 1 ? "chunk" : "chunks"}, none a close match`
            : `Found ${n} relevant ${n === 1 ? "chunk" : "chunks"}`}
        </span>
        <SearchModeBadge mode={r.search_mode} reranked={r.reranked} />
        <ConfidenceChip confidence={r.confidence} />
        {r.rerank?.warning && (
          <span className="chip chip-warn" title={r.rerank.warning} data-testid="tool-rerank-warning">
            {r.rerank.status === "partial" ? "Rerank partial" : "Rerank failed"}
          </span>
        )}
        {n > 0 && <span className="chevron" aria-hidden="true" />}
      </button>
      {r.rerank?.warning && (
        <p className="note muted" role="status" data-testid="tool-rerank-note">
          {r.rerank.warning}
        </p>
      )}
      {open && n > 0 && (
        <ol className="sources" data-testid="source-list">
          {r.chunks.map((c, i) => {
            const idx = firstIndex + i;
            return (
              <SourceCard
                key={`${c.id}-${idx}`}
                ref={(el) => cardRef(idx, el)}
                index={idx}
                chunk={c}
                reranked={r.reranked}
                expanded={isCardOpen(idx)}
                flash={flash === idx}
                onToggle={() => onToggleCard(idx)}
              />
            );
          })}
        </ol>
      )}
    </div>
  );
}
