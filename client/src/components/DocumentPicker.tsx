import { useEffect, useId, useRef, useState } from "react";
import type { Document } from "../api/types";
import { useDebounced } from "../lib/useDebounced";

interface Props {
  /** The documents matching `q` (an empty `q`: the first ones, by title). */
  search: (q: string, signal: AbortSignal) => Promise<Document[]>;
  onPick: (doc: Document) => void;
  label: string;
  placeholder?: string;
  /** Left out of the matches (already chosen). */
  exclude?: ReadonlySet<string>;
  testId?: string;
  disabled?: boolean;
}

const docName = (d: Document) => d.title || d.filename;

/**
 * A searchable document picker (a combobox): type to find documents by title or file name, pick one with the
 * mouse or the arrow keys and Enter. Works the same with 5 documents or 5,000 (the server searches).
 */
export function DocumentPicker({ search, onPick, label, placeholder, exclude, testId = "document-picker", disabled }: Props) {
  const [query, setQuery] = useState("");
  const q = useDebounced(query, 200);
  const [open, setOpen] = useState(false);
  const [found, setFound] = useState<Document[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [active, setActive] = useState(0);
  const id = useId();
  const box = useRef<HTMLDivElement>(null);
  const searchRef = useRef(search);
  searchRef.current = search;

  useEffect(() => {
    if (!open) return;
    const c = new AbortController();
    searchRef.current(q, c.signal).then(
      (docs) => {
        setFound(docs);
        setError(null);
        setActive(0);
      },
      (e: unknown) => !c.signal.aborted && setError(`Couldn't search documents: ${e instanceof Error ? e.message : String(e)}`),
    );
    return () => c.abort();
  }, [open, q]);

  const options = (found ?? []).filter((d) => !exclude?.has(d.id));
  const pick = (d: Document) => {
    onPick(d);
    setQuery("");
    setOpen(false);
  };
  const onKey = (e: React.KeyboardEvent) => {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      setOpen(true);
      if (options.length) setActive((a) => (a + (e.key === "ArrowDown" ? 1 : options.length - 1)) % options.length);
    } else if (e.key === "Enter" && open && options[active]) {
      e.preventDefault();
      pick(options[active]);
    } else if (e.key === "Escape" && open) {
      e.stopPropagation();
      setOpen(false);
    }
  };

  return (
    <div
      className="doc-picker"
      ref={box}
      data-testid={testId}
      onBlur={(e) => !box.current?.contains(e.relatedTarget as Node | null) && setOpen(false)}
    >
      <label htmlFor={`${id}-q`} className="sr-only">
        {label}
      </label>
      <input
        id={`${id}-q`}
        type="search"
        role="combobox"
        aria-expanded={open}
        aria-controls={`${id}-list`}
        aria-autocomplete="list"
        aria-activedescendant={open && options[active] ? `${id}-o${active}` : undefined}
        placeholder={placeholder ?? label}
        value={query}
        maxLength={200}
        disabled={disabled}
        onChange={(e) => {
          setQuery(e.target.value);
          setOpen(true);
        }}
        onFocus={() => setOpen(true)}
        onKeyDown={onKey}
        data-testid={`${testId}-search`}
      />
      {open && (
        <ul className="doc-picker-list" id={`${id}-list`} role="listbox" aria-label={label}>
          {error ? (
            <li className="small error-text" role="alert">
              {error}
            </li>
          ) : found === null ? (
            <li className="muted small">Searching…</li>
          ) : options.length === 0 ? (
            <li className="muted small" data-testid={`${testId}-empty`}>
              {query.trim() ? "No document matches." : "No other documents."}
            </li>
          ) : (
            options.map((d, i) => (
              <li
                key={d.id}
                id={`${id}-o${i}`}
                role="option"
                aria-selected={i === active}
                className={i === active ? "active" : undefined}
                onMouseDown={(e) => e.preventDefault()}
                onClick={() => pick(d)}
                data-testid={`${testId}-option`}
                data-id={d.id}
              >
                <span className="doc-picker-title">{docName(d)}</span>
                {d.title && d.title !== d.filename && <span className="muted small"> · {d.filename}</span>}
              </li>
            ))
          )}
        </ul>
      )}
    </div>
  );
}
