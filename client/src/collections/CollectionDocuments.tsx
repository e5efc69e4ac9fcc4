import { collectionsApi } from "../api/collections";
import { documentsApi } from "../api/documents";
import type { CollectionDetail, Document } from "../api/types";
import { DocumentPicker } from "../components/DocumentPicker";
import type { CollectionAct } from "./act";

interface Props {
  detail: CollectionDetail;
  act: CollectionAct;
  /** null with auth off (everything is the local admin's). */
  myId: string | null;
}

/** The collection's documents; owners and writers add one of their own documents or remove any. */
export function CollectionDocuments({ detail, act, myId }: Props) {
  const canWrite = detail.role === "owner" || detail.role === "write";
  const inside = new Set(detail.documents.map((d) => d.id));

  /** My documents whose title or file name matches `q` (the server searches: any number of documents). */
  const findMine = async (q: string, signal: AbortSignal): Promise<Document[]> => {
    const documents = await documentsApi.find(q, { limit: 30, owner: "me" }, signal);
    return documents.filter((d) => !d.access || d.access === "owner");
  };

  const add = (doc: Document) =>
    void act(() => collectionsApi.addDocument(detail.id, doc.id), { done: `Added ${doc.title || doc.filename}.` });

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
        <div className="inline-form" role="group" aria-label="Add one of your documents" data-testid="collection-doc-form">
          <DocumentPicker
            search={findMine}
            onPick={add}
            exclude={inside}
            label="Add one of your documents"
            placeholder="Find one of your documents to add…"
            testId="collection-doc-picker"
          />
        </div>
      )}
    </section>
  );
}
