import { useState } from "react";
import { errorMessage } from "../api/client";
import { documentsApi, type ChunkStrategy } from "../api/documents";
import type { Document } from "../api/types";

export const CHUNK_STRATEGIES: { value: ChunkStrategy; label: string }[] = [
  { value: "auto", label: "Auto (by file type)" },
  { value: "sentence", label: "Sentence (prose)" },
  { value: "line", label: "Line (receipts, sheets)" },
  { value: "semantic", label: "Semantic (long reports)" },
];

/** Listeners (the documents list) refresh when a document is queued again from here. */
export const DOCUMENTS_CHANGED = "ragchat:documents-changed";

/** "Re-chunk…" on a ready or failed document the user may write: strategy and size, then it is queued again. */
export function RechunkAction({ doc }: { doc: Document }) {
  const [open, setOpen] = useState(false);
  const [strategy, setStrategy] = useState<ChunkStrategy>(doc.chunking?.requested ?? "auto");
  const [tokens, setTokens] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (doc.access === "read" || (doc.status !== "ready" && doc.status !== "failed")) return null;
  const used = doc.chunking?.strategy;
  const size = tokens.trim() ? Number(tokens) : null;
  const badSize = size != null && (!Number.isInteger(size) || size < 16 || size > 256);

  if (!open) {
    return (
      <button
        type="button"
        className="btn btn-small"
        title={used ? `Chunked by ${used}${doc.chunking?.reason ? ` (${doc.chunking.reason})` : ""}` : undefined}
        aria-label={`Re-chunk ${doc.filename}`}
        onClick={() => setOpen(true)}
        data-testid="document-rechunk"
      >
        Re-chunk…
      </button>
    );
  }
  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      await documentsApi.rechunk(doc.id, strategy, size);
      setOpen(false);
      window.dispatchEvent(new Event(DOCUMENTS_CHANGED));
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      className="rechunk-form small"
      style={{ display: "inline-flex", flexWrap: "wrap", gap: "0.25rem", alignItems: "center" }}
      data-testid="rechunk-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (!badSize) void submit();
      }}
    >
      <select
        aria-label="Chunking strategy"
        value={strategy}
        onChange={(e) => setStrategy(e.target.value as ChunkStrategy)}
        data-testid="rechunk-strategy"
      >
        {CHUNK_STRATEGIES.map((s) => (
          <option key={s.value} value={s.value}>
            {s.label}
          </option>
        ))}
      </select>
      <input
        type="number"
        min={16}
        max={256}
        placeholder={String(doc.chunking?.tokens ?? "tokens")}
        aria-label="Tokens per chunk (16-256, empty: the default)"
        aria-invalid={badSize}
        value={tokens}
        onChange={(e) => setTokens(e.target.value)}
        data-testid="rechunk-tokens"
      />
      <button type="submit" className="btn btn-small" disabled={busy || badSize} data-testid="rechunk-apply">
        Re-chunk
      </button>
      <button type="button" className="btn btn-small" onClick={() => setOpen(false)}>
        Cancel
      </button>
      {error && (
        <span role="alert" className="doc-error" data-testid="rechunk-error">
          {error}
        </span>
      )}
    </form>
  );
}
