import type { ReactNode } from "react";
import type { SearchMode } from "../api/types";

const MODES: { value: SearchMode; label: string; hint: string }[] = [
  { value: "hybrid", label: "Hybrid", hint: "Vector + keyword, fused" },
  { value: "vector", label: "Vector", hint: "Semantic similarity" },
  { value: "keyword", label: "Keyword", hint: "Full-text match" },
];

interface Props {
  text: string;
  onText: (t: string) => void;
  mode: SearchMode;
  onMode: (m: SearchMode) => void;
  rerank: boolean;
  onRerank: (r: boolean) => void;
  /** Why rerank cannot work now (the LLM is unreachable): the switch is off and disabled, with this reason. */
  rerankUnavailable?: string | null;
  /** Optional extra control (the collection filter). */
  filter?: ReactNode;
}

export function SearchControls({ text, onText, mode, onMode, rerank, onRerank, rerankUnavailable, filter }: Props) {
  const off = !!rerankUnavailable;
  return (
    <div className="search-controls">
      <label htmlFor="search-input" className="sr-only">
        Search your documents
      </label>
      <input
        id="search-input"
        type="search"
        className="search-input"
        placeholder="Search your documents…"
        value={text}
        autoFocus
        autoComplete="off"
        onChange={(e) => onText(e.target.value)}
        data-testid="search-input"
      />
      <div className="search-options">
        <div className="segmented" role="radiogroup" aria-label="Search mode" data-testid="search-mode">
          {MODES.map((m) => (
            <button
              key={m.value}
              type="button"
              role="radio"
              aria-checked={mode === m.value}
              title={m.hint}
              className={mode === m.value ? "selected" : ""}
              onClick={() => onMode(m.value)}
              data-testid={`search-mode-${m.value}`}
            >
              {m.label}
            </button>
          ))}
        </div>
        <label
          className={off ? "switch disabled" : "switch"}
          style={off ? { opacity: 0.55, cursor: "not-allowed" } : undefined}
          title={rerankUnavailable ?? "Let the language model reorder the results by relevance (slow with a small local model)"}
        >
          <input
            type="checkbox"
            checked={rerank && !off}
            disabled={off}
            aria-describedby={off ? "rerank-unavailable" : undefined}
            onChange={(e) => off || onRerank(e.target.checked)}
            data-testid="rerank-toggle"
          />
          <span className="switch-track" aria-hidden="true" />
          Rerank
        </label>
        {off && (
          <span id="rerank-unavailable" className="muted small" data-testid="rerank-unavailable">
            {rerankUnavailable}
          </span>
        )}
        {filter}
      </div>
    </div>
  );
}
