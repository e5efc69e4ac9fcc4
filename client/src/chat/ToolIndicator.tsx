import type { SearchStep } from "./state";
import { SearchModeBadge } from "../components/SearchModeBadge";
import { Spinner } from "../components/Spinner";
import { SourceCard } from "./SourceCard";
import { ConfidenceChip } from "../components/ConfidenceChip";
import { Explain } from "../components/Explain";

const WHOLE = "Every part of the document was read and summarised, instead of searching for a few passages.";

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

const STAGES: Record<string, string> = { read: "Reading", map: "Summarising part", reduce: "Combining summaries" };

/** What a running tool is doing, in words: "Summarising part 3 of 12 (pages 5–9)…". */
function runningText(step: SearchStep, q: string): string {
  const p = step.progress;
  if (step.name === "summarize_documents") {
    if (!p) return "Reading the whole document…";
    const where = p.message ? ` (${p.message})` : "";
    return `${STAGES[p.stage] ?? p.stage} ${p.done} of ${p.total}${where}…`;
  }
  if (step.name === "read_document") return "Reading the document…";
  if (step.name === "find_documents") return `Finding every document with ${q || "…"}…`;
  return `Searching documents for ${q || "…"}…`;
}

/** The finished tool's line: "Found 6 relevant chunks", "41 documents contain 'penalty'", "Summarised 12 parts". */
function doneText(step: SearchStep, n: number, q: string): string {
  const r = step.result;
  if (r?.documents) {
    const all = r.documents.total_documents;
    return `${all} ${all === 1 ? "document contains" : "documents contain"} ${q}${r.documents.complete ? "" : " (stopped early)"}`;
  }
  if (r?.summary) return `Summarised ${r.summary.parts} ${r.summary.parts === 1 ? "part" : "parts"}`;
  if (step.name === "read_document") return `Read ${n} ${n === 1 ? "section" : "sections"}`;
  if (n > 0 && (r?.confidence?.insufficient ?? r?.confidence?.insufficient_confidence))
    return `Found ${n} ${n === 1 ? "chunk" : "chunks"}, none a close match`;
  return `Found ${n} relevant ${n === 1 ? "chunk" : "chunks"}`;
}

export function ToolIndicator({ step, firstIndex, open, onToggle, isCardOpen, onToggleCard, flash, cardRef }: Props) {
  const q = step.query ? `'${step.query}'` : "";
  if (step.status === "running") {
    return (
      <div className="tool" data-testid="tool-indicator" data-status="running">
        <div className="tool-line">
          <Spinner label="Searching" />
          <span data-testid="tool-running">{runningText(step, q)}</span>
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
      <div className="tool-head">
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
          <span data-testid="tool-summary">{doneText(step, n, q)}</span>
          {n > 0 && <span className="chevron" aria-hidden="true" />}
        </button>
        {/* the badges explain themselves on hover, focus or tap: beside the toggle, never inside it */}
        {r.summary ? (
          <Explain className="badge badge-whole" testId="whole-document-badge" explanation={WHOLE}>
            Whole document
          </Explain>
        ) : (
          <>
            <SearchModeBadge mode={r.search_mode} reranked={r.reranked} />
            <ConfidenceChip confidence={r.confidence} />
          </>
        )}
        {r.rerank?.warning && (
          <span className="chip chip-warn" title={r.rerank.warning} data-testid="tool-rerank-warning">
            {r.rerank.status === "partial" ? "Rerank partial" : "Rerank failed"}
          </span>
        )}
      </div>
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
