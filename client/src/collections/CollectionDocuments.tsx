import { useEffect, useState, type FormEvent } from "react";
import { collectionsApi } from "../api/accounts";
import { api } from "../api/client";
import type { CollectionDetail, Document } from "../api/types";
import type { CollectionAct } from "./CollectionDetailPage";

interface Props {
  detail: CollectionDetail;
  act: CollectionAct;
  /** null with auth off (everything is the local admin's). */
  myId: string | null;
}

/** The collection's documents; owners and writers add one of their own documents or remove any. */
export function CollectionDocuments({ detail, act, myId }: Props) {
  const canWrite = detail.role === "owner" || detail.role === "write";
  const [mine, setMine] = useState<Document[] | null>(null);
  const [docId, setDocId] = useState("");

  useEffect(() => {
    if (!canWrite) return;
    const ctrl = new AbortController();
    api
      .listDocuments(ctrl.signal)
      .then((docs) => setMine(docs.filter((d) => !d.access || d.access === "owner")))
      .catch(() => !ctrl.signal.aborted && setMine([]));
    return () => ctrl.abort();
  }, [canWrite]);

  const inside = new Set(detail.documents.map((d) => d.id));
  const candidates = (mine ?? []).filter((d) => !inside.has(d.id));
  const chosen = candidates.some((d) => d.id === docId) ? docId : "";

  const add = async (e: FormEvent) => {
    e.preventDefault();
    const doc = candidates.find((d) => d.id === chosen);
    if (!doc) return;
    if (await act(() => collectionsApi.addDocument(detail.id, doc.id), { done: `Added ${doc.title || doc.filename}.` }))
      setDocId("");
  };

  return (
    <section className="card" aria-labelledby="docs-title">
      <h2 id="docs-title">Documents</h2>
      {detail.documents.length === 0 ? (
        <p className="muted small" data-testid="collection-docs-empty">
          No documents in this collection yet.
        </p>
      ) : (
        <ul className="plain-list" aria-label="Documents in this collection">
          {detail.documents.map((d) => {
            const label = d.title || d.filename;
            const removable = canWrite || (myId != null && d.owner.id === myId);
            return (
              <li key={d.id} className="list-row" data-testid="collection-doc-row" data-document-id={d.id}>
                <div className="list-main">
                  <span className="list-title">{label}</span>
                  <div className="muted small">
                    {d.title && d.title !== d.filename ? `${d.filename} · ` : ""}
                    {myId != null && d.owner.id === myId ? "yours" : `from ${d.owner.username}`}
                  </div>
                </div>
                {removable && (
                  <button
                    type="button"
                    className="btn btn-small"
                    aria-label={`Remove ${label} from the collection`}
                    onClick={() => void act(() => collectionsApi.removeDocument(detail.id, d.id), { done: `Removed ${label}.` })}
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

      {canWrite && (
        <form className="inline-form" onSubmit={add} aria-label="Add one of your documents" data-testid="collection-doc-form">
          <label htmlFor="collection-doc" className="sr-only">
            Document to add
          </label>
          <select id="collection-doc" value={chosen} onChange={(e) => setDocId(e.target.value)} data-testid="collection-doc-select">
            <option value="">
              {mine === null ? "Loading your documents…" : candidates.length ? "Add one of your documents…" : "No other documents of yours"}
            </option>
            {candidates.map((d) => (
              <option key={d.id} value={d.id}>
                {d.title || d.filename}
              </option>
            ))}
          </select>
          <button type="submit" className="btn btn-primary" disabled={!chosen} data-testid="collection-doc-add">
            Add
          </button>
        </form>
      )}
    </section>
  );
}
