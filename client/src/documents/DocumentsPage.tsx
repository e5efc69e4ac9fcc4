import { useState } from "react";
import { api } from "../api/client";
import { useCollections } from "../collections/CollectionsContext";
import type { UploadResult } from "../api/types";
import { RetryError } from "../components/RetryError";
import { Spinner } from "../components/Spinner";
import { DocumentRow } from "./DocumentRow";
import { UploadZone } from "./UploadZone";
import { useDocuments } from "./useDocuments";

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e));

export function DocumentsPage() {
  const { docs, setDocs, error, refresh } = useDocuments();
  const [uploading, setUploading] = useState(false);
  const [results, setResults] = useState<UploadResult[]>([]);
  const [notice, setNotice] = useState<string | null>(null);
  const [target, setTarget] = useState("");
  const { collections, refresh: refreshCollections } = useCollections();
  const writable = (collections ?? []).filter((c) => c.role === "owner" || c.role === "write");
  const names = new Map((collections ?? []).map((c) => [c.id, c.name]));
  const targetId = writable.some((c) => c.id === target) ? target : "";

  const upload = async (files: File[]) => {
    setUploading(true);
    setNotice(null);
    setResults([]);
    try {
      const res = await api.uploadDocuments(files, targetId || null);
      setResults(res.filter((r) => r.status !== "queued"));
      const fresh = res.flatMap((r) => (r.document && r.status === "queued" ? [r.document] : []));
      if (fresh.length) setDocs((d) => [...fresh, ...(d ?? []).filter((x) => !fresh.some((f) => f.id === x.id))]);
    } catch (e) {
      setNotice(`Upload failed: ${errText(e)}`);
    } finally {
      setUploading(false);
      void refresh();
      if (targetId) void refreshCollections(); // document counts
    }
  };

  const remove = async (id: string) => {
    try {
      await api.deleteDocument(id);
      setDocs((d) => (d ?? []).filter((x) => x.id !== id));
    } catch (e) {
      setNotice(`Delete failed: ${errText(e)}`);
    }
  };

  return (
    <div className="page">
      <header className="page-header">
        <h1>Documents</h1>
        <p className="muted">Files you upload are split into chunks, embedded locally and made searchable.</p>
      </header>

      {writable.length > 0 && (
        <div className="upload-target small">
          <label htmlFor="upload-collection">Upload into collection</label>
          <select
            id="upload-collection"
            value={targetId}
            onChange={(e) => setTarget(e.target.value)}
            data-testid="upload-collection"
          >
            <option value="">None (only in my documents)</option>
            {writable.map((c) => (
              <option key={c.id} value={c.id}>
                {c.name}
              </option>
            ))}
          </select>
        </div>
      )}
      <UploadZone busy={uploading} onFiles={upload} />
      {uploading && (
        <p className="muted small" data-testid="upload-progress">
          <Spinner label="Uploading" /> Uploading…
        </p>
      )}
      {notice && (
        <div className="error-box" role="alert" data-testid="upload-error">
          <div className="error-text">{notice}</div>
        </div>
      )}
      {results.length > 0 && (
        <ul className="upload-results" data-testid="upload-results">
          {results.map((r, i) => (
            <li key={`${r.filename}-${i}`} data-testid="upload-result" data-status={r.status} className={`upload-result ${r.status}`}>
              <strong>{r.filename}</strong>:{" "}
              {r.status === "duplicate" ? "already uploaded — skipped." : r.error || "rejected."}
            </li>
          ))}
        </ul>
      )}

      {error && <RetryError message={error} onRetry={() => void refresh()} />}

      {docs === null ? (
        !error && (
          <div className="center-state">
            <Spinner label="Loading documents" />
          </div>
        )
      ) : docs.length === 0 ? (
        <div className="empty" data-testid="documents-empty">
          <h2>No documents yet</h2>
          <p className="muted">
            Upload PDF, DOCX, Markdown, HTML or text files — drag them onto the box above or choose them from your
            computer. Once a file shows <em>Ready</em> you can chat with it or search it.
          </p>
        </div>
      ) : (
        <ul className="doc-list" data-testid="documents-list" aria-label="Documents">
          {docs.map((d) => (
            <DocumentRow
              key={d.id}
              doc={d}
              onDelete={remove}
              collections={(d.collection_ids ?? []).flatMap((id) => names.get(id) ?? [])}
            />
          ))}
        </ul>
      )}
    </div>
  );
}
