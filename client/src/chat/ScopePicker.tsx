import { useEffect, useId, useRef, useState } from "react";
import { documentsApi } from "../api/documents";
import type { Document } from "../api/types";
import { useCollections } from "../collections/CollectionsContext";
import { useDebounced } from "../lib/useDebounced";

interface Props {
  documentIds: string[];
  collectionIds: string[];
  onChange: (documentIds: string[], collectionIds: string[]) => void;
}

/** Titles of documents met so far (chips of a thread's saved scope need them). */
const names = new Map<string, string>();
const docName = (d: Document) => d.title || d.filename;

/**
 * Which documents and collections the chat searches: chips for the selection, and a search within the user's
 * documents and collections to add more. Nothing chosen: everything the user may read.
 */
export function ScopePicker({ documentIds, collectionIds, onChange }: Props) {
  const { collections } = useCollections();
  const [open, setOpen] = useState(false);
  const [query, setQuery] = useState("");
  const q = useDebounced(query, 200);
  const [docs, setDocs] = useState<Document[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [, setKnown] = useState(0);
  const panelId = useId();
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (!open) return;
    const c = new AbortController();
    documentsApi
      .find(q, {}, c.signal)
      .then((found) => {
        for (const d of found) names.set(d.id, docName(d));
        setDocs(found);
        setError(null);
      })
      .catch((e: unknown) => !c.signal.aborted && setError(`Couldn't search documents: ${e instanceof Error ? e.message : String(e)}`));
    return () => c.abort();
  }, [open, q]);

  // Names of chosen documents not seen yet (a saved scope, or /chat?document=<id>).
  useEffect(() => {
    const missing = documentIds.filter((id) => !names.has(id));
    if (!missing.length) return;
    const c = new AbortController();
    void Promise.all(
      missing.map((id) =>
        documentsApi.get(id, c.signal).then(
          (d) => names.set(id, docName(d)),
          () => undefined,
        ),
      ),
    ).then(() => !c.signal.aborted && setKnown((k) => k + 1));
    return () => c.abort();
  }, [documentIds]);

  useEffect(() => {
    if (open) input.current?.focus();
  }, [open]);

  const needle = q.trim().toLowerCase();
  const cols = (collections ?? []).filter((c) => !needle || c.name.toLowerCase().includes(needle));
  const toggleDoc = (id: string) =>
    onChange(documentIds.includes(id) ? documentIds.filter((x) => x !== id) : [...documentIds, id], collectionIds);
  const toggleCol = (id: string) =>
    onChange(documentIds, collectionIds.includes(id) ? collectionIds.filter((x) => x !== id) : [...collectionIds, id]);
  const colName = (id: string) => collections?.find((c) => c.id === id)?.name ?? "Collection";

  return (
    <div className="scope-picker" data-testid="scope-picker">
      <button
        type="button"
        className="btn btn-small"
        aria-expanded={open}
        aria-controls={panelId}
        onClick={() => setOpen((o) => !o)}
        data-testid="scope-button"
      >
        {documentIds.length || collectionIds.length ? "Searching in" : "All documents"} ▾
      </button>
      <ul className="chips" aria-label="Searching in">
        {documentIds.map((id) => (
          <li key={id} className="chip" data-testid="scope-chip" data-id={id}>
            <span className="chip-text" title={names.get(id)}>
              {names.get(id) ?? "Document"}
            </span>
            <button type="button" className="chip-remove" aria-label={`Remove ${names.get(id) ?? "document"}`} onClick={() => toggleDoc(id)}>
              ×
            </button>
          </li>
        ))}
        {collectionIds.map((id) => (
          <li key={id} className="chip chip-collection" data-testid="scope-chip" data-id={id}>
            <span className="chip-text">{colName(id)}</span>
            <button type="button" className="chip-remove" aria-label={`Remove ${colName(id)}`} onClick={() => toggleCol(id)}>
              ×
            </button>
          </li>
        ))}
      </ul>
      {open && (
        <div
          id={panelId}
          className="scope-panel"
          role="group"
          aria-label="Choose documents and collections"
          onKeyDown={(e) => {
            if (e.key === "Escape") {
              e.stopPropagation();
              setOpen(false);
            }
          }}
        >
          <label htmlFor={`${panelId}-q`} className="sr-only">
            Find documents and collections
          </label>
          <input
            id={`${panelId}-q`}
            ref={input}
            type="search"
            placeholder="Find documents and collections…"
            value={query}
            maxLength={200}
            onChange={(e) => setQuery(e.target.value)}
            data-testid="scope-search"
          />
          {error && (
            <p className="small error-text" role="alert">
              {error}
            </p>
          )}
          <ul className="scope-options">
            {cols.map((c) => (
              <li key={c.id}>
                <label>
                  <input type="checkbox" checked={collectionIds.includes(c.id)} onChange={() => toggleCol(c.id)} />
                  <span>
                    {c.name} <span className="muted small">(collection)</span>
                  </span>
                </label>
              </li>
            ))}
            {docs.map((d) => (
              <li key={d.id}>
                <label data-testid="scope-option">
                  <input type="checkbox" checked={documentIds.includes(d.id)} onChange={() => toggleDoc(d.id)} />
                  <span title={docName(d)}>{docName(d)}</span>
                </label>
              </li>
            ))}
            {!docs.length && !cols.length && !error && <li className="muted small">Nothing matches.</li>}
          </ul>
          <button type="button" className="btn btn-small" onClick={() => setOpen(false)} data-testid="scope-done">
            Done
          </button>
        </div>
      )}
    </div>
  );
}
