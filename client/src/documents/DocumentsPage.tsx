import { useEffect, useState } from "react";
import { errorMessage } from "../api/client";
import { documentsApi, PAGE_SIZE } from "../api/documents";
import { uploadFiles } from "../api/uploads";
import { useCollections } from "../collections/CollectionsContext";
import type { UploadResult } from "../api/types";
import { RetryError } from "../components/RetryError";
import { Spinner } from "../components/Spinner";
import { useSearchParams } from "../lib/router";
import { BulkActions } from "./BulkActions";
import { type Batch, BatchProgress, useBatchDocuments } from "./BatchProgress";
import { DocumentRow } from "./DocumentRow";
import { DEFAULT_FILTERS, DocumentsPager, DocumentsToolbar, type Filters } from "./DocumentsToolbar";
import { FORMAT_NAMES } from "./formats";
import { UploadZone } from "./UploadZone";
import { UrlForm } from "./UrlForm";
import { useDocuments } from "./useDocuments";
import "./documents.css";

/** Results the page lists: the files that did not simply become a new document. */
const noteworthy = (r: UploadResult) => r.status !== "queued";

/** The server's reason, without the file name it may start with (the list shows the name already). */
export const reasonFor = (r: Pick<UploadResult, "filename" | "error">) => {
  const text = (r.error ?? "").trim();
  const name = r.filename;
  return name && text.toLowerCase().startsWith(`${name.toLowerCase()}:`) ? text.slice(name.length + 1).trim() : text;
};

/** The list's search, filters, sort and page, kept in the URL (?q=&status=&type=&sort=&order=&page=). */
function useListState() {
  const [search, setSearch] = useSearchParams();
  const filters: Filters = {
    q: search.get("q") ?? "",
    status: (search.get("status") ?? "") as Filters["status"],
    type: (search.get("type") ?? "") as Filters["type"],
    sort: (search.get("sort") ?? DEFAULT_FILTERS.sort) as Filters["sort"],
    order: (search.get("order") ?? DEFAULT_FILTERS.order) as Filters["order"],
    collection_id: search.get("collection") ?? "",
    owner: (search.get("owner") ?? "") as Filters["owner"],
    meta: search.get("meta") ?? "",
  };
  const page = Math.max(1, Number.parseInt(search.get("page") ?? "1", 10) || 1);
  const change = (next: Partial<Filters>) => {
    const merged = { ...filters, ...next };
    setSearch({
      q: merged.q || null,
      status: merged.status || null,
      type: merged.type || null,
      sort: merged.sort === DEFAULT_FILTERS.sort ? null : merged.sort,
      order: merged.order === DEFAULT_FILTERS.order ? null : merged.order,
      collection: merged.collection_id || null,
      owner: merged.owner || null,
      meta: merged.meta || null,
      page: null, // a new search starts on the first page
    });
  };
  const goTo = (n: number) => setSearch({ page: n > 1 ? String(n) : null });
  const filtered = !!(filters.q || filters.status || filters.type || filters.collection_id || filters.owner || filters.meta);
  return { filters, page, change, goTo, filtered };
}

const RESULT_TEXT: Record<UploadResult["status"], string> = {
  queued: "uploaded.",
  duplicate: "already uploaded — skipped.",
  requeued: "failed before — processing it again.",
  rejected: "rejected.",
};

export function DocumentsPage() {
  const list = useListState();
  const { filters, page } = list;
  const offset = (page - 1) * PAGE_SIZE;
  const params = { ...filters, limit: PAGE_SIZE, offset };
  const paramsKey = JSON.stringify(params);
  const { docs, setDocs, total, error, refresh } = useDocuments(params);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [bulkNote, setBulkNote] = useState<{ text: string; failed: boolean } | null>(null);
  useEffect(() => setSelected(new Set()), [paramsKey]); // another page or search: nothing selected
  const [uploading, setUploading] = useState(false);
  // The last upload, followed until its documents are ingested: one overall bar when it has several.
  const [batch, setBatch] = useState<Batch | null>(null);
  const batchDocs = useBatchDocuments(batch, docs);
  // Per file of the last upload, in the order chosen: the results worth listing.
  const [perFile, setPerFile] = useState<UploadResult[][]>([]);
  const results = perFile.flat();
  const [notice, setNotice] = useState<string | null>(null);
  const [target, setTarget] = useState("");
  const [moreUpload, setMoreUpload] = useState(false);
  const { collections, refresh: refreshCollections } = useCollections();
  const writable = (collections ?? []).filter((c) => c.role === "owner" || c.role === "write");
  const names = new Map((collections ?? []).map((c) => [c.id, c.name]));
  const targetId = writable.some((c) => c.id === target) ? target : "";

  // One request per file (api.uploadDocuments): each file's result shows as it arrives, next to its name.
  const upload = async (files: File[], fields?: Record<string, string>) => {
    setUploading(true);
    setBatch({ files: files.length, sent: 0, ids: [], skipped: 0, duplicates: 0, started: performance.now() });
    setNotice(null);
    setPerFile([]);
    const onFile = (res: UploadResult[], index: number) => {
      const queued = res.flatMap((r) => (r.document && (r.status === "queued" || r.status === "requeued") ? [r.document.id] : []));
      const skipped = res.filter((r) => r.status === "rejected" || r.status === "duplicate").length;
      const duplicates = res.filter((r) => r.status === "duplicate").length;
      setBatch(
        (b) =>
          b && {
            ...b,
            sent: b.sent + 1,
            ids: [...b.ids, ...queued],
            skipped: b.skipped + skipped,
            duplicates: (b.duplicates ?? 0) + duplicates,
          },
      );
      setPerFile((p) => {
        const next = p.slice();
        next[index] = res.filter(noteworthy);
        return next;
      });
      const fresh = res.flatMap((r) => (r.document && (r.status === "queued" || r.status === "requeued") ? [r.document] : []));
      if (fresh.length) setDocs((d) => [...fresh, ...(d ?? []).filter((x) => !fresh.some((f) => f.id === x.id))]);
    };
    try {
      await uploadFiles(files, targetId || null, onFile, fields);
    } catch (e) {
      setNotice(`Upload failed: ${errorMessage(e)}`);
      setBatch((b) => b && { ...b, sent: b.files });
    } finally {
      setUploading(false);
      void refresh();
      if (targetId) void refreshCollections(); // document counts
    }
  };

  /** Add a web page; its result is listed like a file's. True when the server took it. */
  const addUrl = async (url: string): Promise<boolean> => {
    setNotice(null);
    setPerFile([]);
    try {
      const res = await documentsApi.ingestUrl(url, targetId || null);
      setPerFile([res.filter(noteworthy)]);
      const fresh = res.flatMap((r) => (r.document ? [r.document] : []));
      if (fresh.length) setDocs((d) => [...fresh, ...(d ?? []).filter((x) => !fresh.some((f) => f.id === x.id))]);
      return true;
    } catch (e) {
      setNotice(`Could not add ${url}: ${errorMessage(e)}`);
      return false;
    } finally {
      if (targetId) void refreshCollections();
    }
  };

  const remove = async (id: string) => {
    try {
      await documentsApi.remove(id);
      setDocs((d) => (d ?? []).filter((x) => x.id !== id));
      void refresh(); // the total, and the next page's first document moves up
    } catch (e) {
      setNotice(`Delete failed: ${errorMessage(e)}`);
    }
  };

  /** Retry (a failed document) or cancel (a queued or processing one); the row shows the server's answer. */
  const transition = (action: "retry" | "cancel") => async (id: string) => {
    try {
      const updated = await documentsApi[action](id);
      setDocs((d) => (d ?? []).map((x) => (x.id === id ? updated : x)));
    } catch (e) {
      setNotice(`${action === "retry" ? "Retry" : "Cancel"} failed: ${errorMessage(e)}`);
      void refresh();
    }
  };

  return (
    <div className="page">
      <header className="page-header">
        <h1>Documents</h1>

        <p className="muted docs-intro">Files you upload are split into chunks, embedded locally and made searchable.</p>
        {total != null && total > 0 && !list.filtered && (
          <p className="muted small" data-testid="documents-count">
            {total === 1 ? "1 document" : `${total} documents`}
          </p>
        )}
      </header>

      <section className={`docs-add${moreUpload ? " more" : ""}`} aria-label="Add documents">
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
        <UrlForm busy={uploading} onUrl={addUrl} />
        {/* a phone shows the documents first: these upload options fold away behind one link */}
        <button
          type="button"
          className="link-button docs-add-more small"
          aria-expanded={moreUpload}
          onClick={() => setMoreUpload((m) => !m)}
          data-testid="upload-more"
        >
          {moreUpload ? "Fewer upload options" : "More ways to add: a web page, metadata, chunking"}
        </button>
      </section>
      {uploading && (
        <p className="muted small" data-testid="upload-progress">
          <Spinner label="Uploading" /> Uploading…
        </p>
      )}
      {batch && (batch.files > 1 || batch.ids.length > 1) && <BatchProgress batch={batch} docs={batchDocs} />}
      {notice && (
        <div className="error-box" role="alert" data-testid="upload-error">
          <div className="error-text">{notice}</div>
        </div>
      )}
      {results.length > 0 && (
        <ul className="upload-results" data-testid="upload-results">
          {results.map((r, i) => (
            <li key={`${r.filename}-${i}`} data-testid="upload-result" data-status={r.status} className={`upload-result ${r.status}`}>
              <strong>{r.filename}</strong>: {r.status === "rejected" ? reasonFor(r) || RESULT_TEXT.rejected : RESULT_TEXT[r.status]}
            </li>
          ))}
        </ul>
      )}

      {error && <RetryError message={error} onRetry={() => void refresh()} />}

      {(docs?.length || list.filtered || page > 1) && <DocumentsToolbar filters={filters} onChange={list.change} />}
      {bulkNote && (
        <p className={bulkNote.failed ? "doc-error" : "muted small"} role="status" data-testid="bulk-result">
          {bulkNote.text}
        </p>
      )}

      {docs === null ? (
        !error && (
          <div className="center-state">
            <Spinner label="Loading documents" />
          </div>
        )
      ) : docs.length === 0 && (list.filtered || page > 1) ? (
        <p className="muted docs-none" data-testid="documents-none" role="status">
          No documents match{filters.q ? ` “${filters.q}”` : ""}
          {filters.status || filters.type || filters.collection_id || filters.owner || filters.meta ? " with these filters" : ""}.
        </p>
      ) : docs.length === 0 ? (
        <div className="empty" data-testid="documents-empty">
          <h2>No documents yet</h2>
          <p className="muted">
            Upload PDF, DOCX, Markdown, HTML or text files, subtitles (.vtt, .srt), spreadsheets (.csv, .xlsx),
            slides (.pptx), e-books (.epub) or a JSONL corpus — drag them onto the box above or choose them from your
            computer — or add a web page by its address. Once a file shows <em>Ready</em> you can chat with it or
            search it.
          </p>
          <p className="muted small">Accepted: {FORMAT_NAMES}</p>
        </div>
      ) : (
        <>
          <BulkActions
            docs={docs}
            selected={selected}
            onSelect={setSelected}
            total={total}
            filter={{ q: filters.q, status: filters.status, type: filters.type, collection_id: filters.collection_id, owner: filters.owner, meta: filters.meta }}
            onDone={(text, failed) => {
              setBulkNote({ text, failed });
              void refresh();
            }}
          />
          <ul className="doc-list" data-testid="documents-list" aria-label="Documents">
            {docs.map((d) => (
              <DocumentRow
                key={d.id}
                doc={d}
                onDelete={remove}
                onRetry={transition("retry")}
                onCancel={transition("cancel")}
                onChanged={(u) => setDocs((cur) => cur && cur.map((x) => (x.id === u.id ? { ...x, ...u } : x)))}
                collections={(d.collection_ids ?? []).flatMap((id) => names.get(id) ?? [])}
                selected={selected.has(d.id)}
                onSelect={(id, on) =>
                  setSelected((cur) => {
                    const next = new Set(cur);
                    if (on) next.add(id);
                    else next.delete(id);
                    return next;
                  })
                }
              />
            ))}
          </ul>
          {total != null && (
            <DocumentsPager
              offset={offset}
              count={docs.length}
              total={total}
              pageSize={PAGE_SIZE}
              onPage={(n) => {
                setSelected(new Set());
                list.goTo(n);
              }}
            />
          )}
        </>
      )}
    </div>
  );
}
