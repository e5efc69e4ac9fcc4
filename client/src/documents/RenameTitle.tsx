import { useState, type FormEvent } from "react";
import { errorMessage } from "../api/client";
import type { Document } from "../api/types";
import { documentsApi } from "../api/documents";

/** The title as an input while renaming: Enter saves (the file name stays), Escape cancels. */
export function RenameTitle({ doc, onDone }: { doc: Document; onDone: (updated: Document | null) => void }) {
  const [value, setValue] = useState(doc.title || doc.filename);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const title = value.trim();
    if (!title || title === doc.title) return onDone(null);
    setBusy(true);
    try {
      onDone(await documentsApi.rename(doc.id, title));
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };
  return (
    <form className="doc-rename" onSubmit={(e) => void submit(e)} data-testid="document-rename-form">
      <input
        className="input"
        value={value}
        maxLength={500}
        autoFocus
        disabled={busy}
        aria-label={`New title for ${doc.filename}`}
        aria-invalid={error ? true : undefined}
        onChange={(e) => setValue(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            e.preventDefault();
            onDone(null);
          }
        }}
        data-testid="document-rename-input"
      />
      <button type="submit" className="btn btn-small btn-primary" disabled={busy} data-testid="document-rename-save">
        Save
      </button>
      <button type="button" className="btn btn-small" onClick={() => onDone(null)}>
        Cancel
      </button>
      {error && (
        <p className="doc-error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
