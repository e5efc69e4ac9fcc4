import { useEffect, useState } from "react";
import type { Document } from "../api/types";
import { useCollections } from "../collections/CollectionsContext";
import { useDebounced } from "../lib/useDebounced";
import type { Order, SortKey } from "../api/documents";
import { TYPE_LABELS, type TypeFamily } from "./formats";

export interface Filters {
  q: string;
  status: Document["status"] | "";
  type: TypeFamily | "";
  sort: SortKey;
  order: Order;
  /** One collection's documents. */
  collection_id: string;
  /** Mine, or shared with me. */
  owner: "" | "me" | "others";
  /** `key=value`: a metadata key holding the value. */
  meta: string;
}

export const DEFAULT_FILTERS: Filters = {
  q: "",
  status: "",
  type: "",
  sort: "created_at",
  order: "desc",
  collection_id: "",
  owner: "",
  meta: "",
};

const SORTS: { value: `${SortKey}:${Order}`; label: string }[] = [
  { value: "created_at:desc", label: "Newest first" },
  { value: "created_at:asc", label: "Oldest first" },
  { value: "title:asc", label: "Title A–Z" },
  { value: "title:desc", label: "Title Z–A" },
  { value: "byte_size:desc", label: "Largest first" },
  { value: "byte_size:asc", label: "Smallest first" },
  { value: "status:asc", label: "Status" },
];

const STATUSES: { value: Filters["status"]; label: string }[] = [
  { value: "", label: "Any status" },
  { value: "ready", label: "Ready" },
  { value: "processing", label: "Processing" },
  { value: "queued", label: "Queued" },
  { value: "failed", label: "Failed" },
];

/** A metadata filter typed as `key=value`: sent once it has both sides (the server checks the rest). */
function MetaFilter({ value, onChange }: { value: string; onChange: (meta: string) => void }) {
  const [text, setText] = useState(value);
  const debounced = useDebounced(text, 400);
  useEffect(() => {
    const t = debounced.trim();
    const ok = /^[^=]+=.+$/.test(t);
    if ((ok || !t) && t !== value) onChange(t);
  }, [debounced]);
  useEffect(() => setText((t) => (t.trim() === value ? t : value)), [value]);
  return (
    <input
      type="search"
      className="docs-meta-filter"
      placeholder="Metadata: key=value"
      aria-label="Metadata filter, as key=value (for example subject=History)"
      value={text}
      maxLength={600}
      onChange={(e) => setText(e.target.value)}
      data-testid="documents-meta-filter"
    />
  );
}

/** Search (debounced), status, type, collection, owner, metadata and sort of the documents list. */
export function DocumentsToolbar({ filters, onChange }: { filters: Filters; onChange: (next: Partial<Filters>) => void }) {
  const { collections } = useCollections();
  const [text, setText] = useState(filters.q);
  const debounced = useDebounced(text, 250);
  useEffect(() => {
    if (debounced.trim() !== filters.q) onChange({ q: debounced.trim() });
  }, [debounced]);
  useEffect(() => {
    // the URL changed under the box (back button, a link): show it
    setText((t) => (t.trim() === filters.q ? t : filters.q));
  }, [filters.q]);

  return (
    <div className="docs-toolbar" role="search" aria-label="Find documents">
      <input
        type="search"
        className="docs-search"
        placeholder="Search titles and file names"
        aria-label="Search documents by title or file name"
        value={text}
        maxLength={200}
        onChange={(e) => setText(e.target.value)}
        data-testid="documents-search"
      />
      <select
        aria-label="Status"
        value={filters.status}
        onChange={(e) => onChange({ status: e.target.value as Filters["status"] })}
        data-testid="documents-status-filter"
      >
        {STATUSES.map((s) => (
          <option key={s.value} value={s.value}>
            {s.label}
          </option>
        ))}
      </select>
      <select
        aria-label="File type"
        value={filters.type}
        onChange={(e) => onChange({ type: e.target.value as Filters["type"] })}
        data-testid="documents-type-filter"
      >
        <option value="">Any type</option>
        {(Object.keys(TYPE_LABELS) as TypeFamily[]).map((t) => (
          <option key={t} value={t}>
            {TYPE_LABELS[t]}
          </option>
        ))}
      </select>
      {!!collections?.length && (
        <select
          aria-label="Collection"
          value={filters.collection_id}
          onChange={(e) => onChange({ collection_id: e.target.value })}
          data-testid="documents-collection-filter"
        >
          <option value="">Any collection</option>
          {collections.map((c) => (
            <option key={c.id} value={c.id}>
              {c.name}
            </option>
          ))}
        </select>
      )}
      <select
        aria-label="Owner"
        value={filters.owner}
        onChange={(e) => onChange({ owner: e.target.value as Filters["owner"] })}
        data-testid="documents-owner-filter"
      >
        <option value="">Anyone's</option>
        <option value="me">Mine</option>
        <option value="others">Shared with me</option>
      </select>
      <MetaFilter value={filters.meta} onChange={(meta) => onChange({ meta })} />
      <select
        aria-label="Sort by"
        value={`${filters.sort}:${filters.order}`}
        onChange={(e) => {
          const [sort, order] = e.target.value.split(":") as [SortKey, Order];
          onChange({ sort, order });
        }}
        data-testid="documents-sort"
      >
        {SORTS.map((s) => (
          <option key={s.value} value={s.value}>
            {s.label}
          </option>
        ))}
      </select>
    </div>
  );
}

/** "Showing 51–100 of 284" and Previous / Next. */
export function DocumentsPager({
  offset,
  count,
  total,
  pageSize,
  onPage,
}: {
  offset: number;
  count: number;
  total: number;
  pageSize: number;
  onPage: (page: number) => void;
}) {
  const page = Math.floor(offset / pageSize) + 1;
  const pages = Math.max(1, Math.ceil(total / pageSize));
  if (total <= pageSize && offset === 0) return null;
  return (
    <nav className="docs-pager" aria-label="Pages of documents" data-testid="documents-pager">
      <button type="button" className="btn btn-small" disabled={page <= 1} onClick={() => onPage(page - 1)} data-testid="documents-prev">
        Previous
      </button>
      <span className="muted small" aria-live="polite" data-testid="documents-range">
        {count ? `${offset + 1}–${offset + count}` : "none"} of {total} · page {page} of {pages}
      </span>
      <button
        type="button"
        className="btn btn-small"
        disabled={page >= pages}
        onClick={() => onPage(page + 1)}
        data-testid="documents-next"
      >
        Next
      </button>
    </nav>
  );
}
