import { useEffect, useState } from "react";
import { collectionsApi } from "../api/collections";
import { documentsApi, PAGE_SIZE, type Order, type SortKey } from "../api/documents";
import type { CollectionDetail, Document } from "../api/types";
import { DocumentPicker } from "../components/DocumentPicker";
import { DocumentsPager } from "../documents/DocumentsToolbar";
import { useDocuments } from "../documents/useDocuments";
import "../documents/documents.css";
import { useDebounced } from "../lib/useDebounced";
import type { CollectionAct } from "./act";

interface Props {
  detail: CollectionDetail;
  act: CollectionAct;
  /** null with auth off (everything is the local admin's). */
  myId: string | null;
}

type SortValue = `${SortKey}:${Order}`;
const SORTS: { value: SortValue; label: string }[] = [
  { value: "created_at:desc", label: "Newest first" },
  { value: "created_at:asc", label: "Oldest first" },
  { value: "title:asc", label: "Title A–Z" },
  { value: "title:desc", label: "Title Z–A" },
  { value: "byte_size:desc", label: "Largest first" },
  { value: "status:asc", label: "Status" },
];

const plural = (n: number) => `${n.toLocaleString()} ${n === 1 ? "document" : "documents"}`;

/**
 * The collection's documents, a page at a time (the server searches, sorts and pages them: any number of
 * documents). Owners and writers add one of their own documents or remove any; anyone removes their own.
 */
export function CollectionDocuments({ detail, act, myId }: Props) {
  const canWrite = detail.role === "owner" || detail.role === "write";
  const [text, setText] = useState("");
  const q = useDebounced(text.trim(), 250);
  const [sortValue, setSortValue] = useState<SortValue>("created_at:desc");
  const [page, setPage] = useState(1);
  const [sort, order] = sortValue.split(":") as [SortKey, Order];
  const offset = (page - 1) * PAGE_SIZE;
  const { docs, total, error, refresh } = useDocuments({ collection_id: detail.id, q, sort, order, limit: PAGE_SIZE, offset });

  useEffect(() => setPage(1), [q]);
  // The last page emptied (its documents removed): show the one before.
  useEffect(() => {
    if (docs?.length === 0 && total && offset >= total) setPage(Math.max(1, Math.ceil(total / PAGE_SIZE)));
  }, [docs, total, offset]);

  /** My documents whose title or file name matches `q` and that are not in it yet (the server searches). */
  const findMine = async (query: string, signal: AbortSignal): Promise<Document[]> => {
    const documents = await documentsApi.find(query, { limit: 30, owner: "me" }, signal);
    return documents.filter((d) => (!d.access || d.access === "owner") && !d.collection_ids?.includes(detail.id));
  };

  const run = async (fn: () => Promise<unknown>, done: string) => {
    await act(fn, { done });
    await refresh();
  };

  const add = (doc: Document) => void run(() => collectionsApi.addDocument(detail.id, doc.id), `Added ${doc.title || doc.filename}.`);

  const count =
    total == null
      ? ""
      : q
        ? `${plural(total)} of ${detail.document_count.toLocaleString()} match “${q}”`
        : plural(total);

  return (
    <section className="card" aria-labelledby="docs-title">
      <h2 id="docs-title">Documents</h2>
      {detail.document_count > 0 && (
        <div className="docs-toolbar" role="search" aria-label="Find documents in this collection">
          <input
            type="search"
            className="docs-search"
            placeholder="Search titles and file names"
            aria-label="Search this collection's documents by title or file name"
            value={text}
            maxLength={200}
            onChange={(e) => setText(e.target.value)}
            data-testid="collection-doc-search"
          />
          <select
            aria-label="Sort by"
            value={sortValue}
            onChange={(e) => {
              setSortValue(e.target.value as SortValue);
              setPage(1);
            }}
            data-testid="collection-doc-sort"
          >
            {SORTS.map((s) => (
              <option key={s.value} value={s.value}>
                {s.label}
              </option>
            ))}
          </select>
        </div>
      )}
      {error && (
        <div className="error-box" role="alert" data-testid="collection-docs-error">
          <div className="error-text">{error}</div>
        </div>
      )}
      {detail.document_count > 0 && (
        <p className="muted small" aria-live="polite" data-testid="collection-doc-count">
          {count}
        </p>
      )}
      {docs == null ? null : docs.length === 0 ? (
        <p className="muted small" data-testid="collection-docs-empty">
          {q ? `No document in this collection matches “${q}”.` : "No documents in this collection yet."}
        </p>
      ) : (
        <ul className="plain-list" aria-label="Documents in this collection">
          {docs.map((d) => {
            const label = d.title || d.filename;
            const mine = myId != null && d.owner.id === myId;
            const removable = canWrite || mine;
            return (
              <li key={d.id} className="list-row" data-testid="collection-doc-row" data-document-id={d.id}>
                <div className="list-main">
                  <span className="list-title">{label}</span>
                  <div className="muted small">
                    {d.title && d.title !== d.filename ? `${d.filename} · ` : ""}
                    {mine ? "yours" : `from ${d.owner.username ?? "another user"}`}
                  </div>
                </div>
                {removable && (
                  <button
                    type="button"
                    className="btn btn-small"
                    aria-label={`Remove ${label} from the collection`}
                    onClick={() => void run(() => collectionsApi.removeDocument(detail.id, d.id), `Removed ${label}.`)}
                    data-testid="collection-doc-remove"
                  >
                    Remove
                  </button>
                )}
              </li>
            );
          })}
        </ul>
      )}
      {docs != null && total != null && (
        <DocumentsPager offset={offset} count={docs.length} total={total} pageSize={PAGE_SIZE} onPage={setPage} />
      )}

      {canWrite && (
        <div className="inline-form" role="group" aria-label="Add one of your documents" data-testid="collection-doc-form">
          <DocumentPicker
            search={findMine}
            onPick={add}
            label="Add one of your documents"
            placeholder="Find one of your documents to add…"
            testId="collection-doc-picker"
          />
        </div>
      )}
    </section>
  );
}
