import { lazy, Suspense, useEffect, useState } from "react";
import { ApiError } from "../api/client";
import type { ChunkList, Document, DocumentChunk } from "../api/types";
import { RetryError } from "../components/RetryError";
import { Spinner } from "../components/Spinner";
import { documentsApi } from "../api/documents";
import { plural } from "../lib/format";
import { Link, useSearchParams } from "../lib/router";
import { useTitle } from "../lib/useTitle";
import { ChunkText, whereLabel } from "./ChunkText";
import { ScanView } from "./ScanView";
import "./viewer.css";

// pdf.js is big: loaded only when a PDF is opened (its own chunk, and its worker a file of the app's assets).
const PdfView = lazy(() => import("./PdfView"));

/** Chunks fetched around the cited one (the text viewer loads more on demand). */
export const WINDOW = 40;

const positive = (value: string | null) => {
  const n = value && /^\d+$/.test(value) ? Number(value) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : null;
};

/**
 * `/documents/<id>?chunk=<chunk_id>&page=<n>`: a document opened at a cited passage. A PDF shows the page (the
 * chunk's, or `page`) rendered with pdf.js and the passage highlighted on it; any other type its text, chunk by
 * chunk with where each sits (page, section, slide, sheet and rows, time), the cited chunk highlighted and
 * scrolled into view.
 */
export function DocumentViewer({ id }: { id: string }) {
  const [search, setSearch] = useSearchParams();
  const chunkId = positive(search.get("chunk"));
  const pageParam = positive(search.get("page"));
  const [doc, setDoc] = useState<Document | null>(null);
  const [chunks, setChunks] = useState<ChunkList | null>(null);
  const [error, setError] = useState<{ text: string; missing: boolean } | null>(null);
  const [attempt, setAttempt] = useState(0);
  useTitle(doc ? doc.title || doc.filename : "Document");

  useEffect(() => {
    const ctrl = new AbortController();
    setError(null);
    void (async () => {
      try {
        const d = await documentsApi.get(id, ctrl.signal);
        setDoc(d);
        let list: ChunkList;
        try {
          list = await documentsApi.chunks(id, { chunkId, limit: WINDOW }, ctrl.signal);
        } catch (e) {
          // a chunk id that is not (or no longer: re-ingested) one of this document's: open at the start
          if (!(e instanceof ApiError && e.status === 404) || chunkId == null) throw e;
          list = await documentsApi.chunks(id, { offset: 0, limit: WINDOW }, ctrl.signal);
        }
        setChunks(list);
      } catch (e) {
        if (ctrl.signal.aborted) return;
        const missing = e instanceof ApiError && e.status === 404;
        setError({ text: missing ? "This document does not exist, or you may not read it." : String((e as Error).message ?? e), missing });
      }
    })();
    return () => ctrl.abort();
  }, [id, chunkId, attempt]);

  if (error)
    return (
      <div className="page" data-testid="viewer-error">
        <p>
          <Link to="/documents">← Documents</Link>
        </p>
        {error.missing ? (
          <div className="center-state">
            <h1>Document not found</h1>
            <p className="muted">{error.text}</p>
          </div>
        ) : (
          <RetryError message={`Couldn't open the document: ${error.text}`} onRetry={() => setAttempt((n) => n + 1)} />
        )}
      </div>
    );
  if (!doc || !chunks)
    return (
      <div className="center-state">
        <Spinner label="Opening the document" />
      </div>
    );

  const target: DocumentChunk | null = chunks.chunks.find((c) => c.id === chunkId) ?? null;
  const isPdf = doc.content_type === "application/pdf";
  // an image, or a PDF with pages read by OCR: the scan view (today's view for a page without OCR lines)
  const scanned = doc.content_type.startsWith("image/") || (isPdf && doc.metadata?.ocr != null);
  const page = pageParam ?? target?.page ?? 1;
  const passage = target && (target.page == null || target.page === page) ? target.content : null;
  const title = doc.title || doc.filename;

  const text = <ChunkText key={`${doc.id}:${chunkId ?? ""}`} documentId={doc.id} initial={chunks} targetId={target?.id ?? null} />;
  const onPage = (n: number) => setSearch({ page: String(n) });
  const pdf = isPdf && (
    <div className="viewer-pdf">
      {target && (
        <aside className="viewer-cited" aria-label="Cited passage" data-testid="viewer-cited">
          <h2 className="small">Cited passage · {whereLabel(target)}</h2>
          <p>{target.content}</p>
        </aside>
      )}
      <Suspense fallback={<Spinner label="Loading the PDF viewer" />}>
        <PdfView url={documentsApi.fileUrl(doc.id)} page={page} passage={passage} title={title} onPage={onPage} />
      </Suspense>
    </div>
  );
  const body = scanned ? (
    <ScanView documentId={doc.id} page={page} pages={doc.page_count ?? null} passage={passage} title={title} onPage={onPage} fallback={pdf || text} />
  ) : (
    pdf || text
  );

  return (
    <div className="page viewer" data-testid="document-viewer" data-document-id={doc.id}>
      <p className="viewer-back small">
        <Link to="/documents">← Documents</Link>
      </p>
      <header className="page-header viewer-header">
        <div className="viewer-heading">
          <h1 data-testid="viewer-title">{title}</h1>
          <p className="muted small">
            {[doc.title && doc.title !== doc.filename ? doc.filename : null, doc.page_count != null ? plural(doc.page_count, "page") : null, plural(chunks.total, "chunk")]
              .filter(Boolean)
              .join(" · ")}
          </p>
        </div>
        <div className="viewer-actions">
          <Link to={`/chat?document=${encodeURIComponent(doc.id)}`} className="btn btn-primary" data-testid="viewer-ask">
            Ask about this document
          </Link>
          {doc.status === "ready" && (
            <Link to={`/chat?document=${encodeURIComponent(doc.id)}&task=summarize`} className="btn" data-testid="viewer-summarize">
              Summarise
            </Link>
          )}
          <a href={documentsApi.fileUrl(doc.id)} download={doc.filename} className="btn" data-testid="viewer-download">
            Download original
          </a>
        </div>
      </header>
      {doc.status !== "ready" && (
        <p className="muted" role="status" data-testid="viewer-not-ready">
          This document is {doc.status}: its text appears here once it is ready.
        </p>
      )}
      {body}
    </div>
  );
}
