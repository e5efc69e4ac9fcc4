import { useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { ApiError, errorMessage, get, getUrl } from "../api/client";
import type { components } from "../api/schema";
import { Spinner } from "../components/Spinner";
import { matchRuns } from "./match";
import "./scan.css";

export type OcrPage = components["schemas"]["OcrPageOut"];

const pagePath = (documentId: string, page: number) => ({ params: { path: { document_id: documentId, page } } });

interface Props {
  documentId: string;
  /** The page to show, from 1 (an image's frame, a PDF's page). */
  page: number;
  /** Pages the document has (the pager's end), when known. */
  pages: number | null;
  /** The cited passage: the OCR lines it is made of are highlighted, on the image and in the text. */
  passage: string | null;
  title: string;
  onPage: (page: number) => void;
  /** What to show for a page without OCR lines (not scanned, blank, or read before lines were kept). */
  fallback: ReactNode;
}

const pct = (value: number, whole: number) => `${(100 * value) / whole}%`;

/**
 * A scanned page as the scan: the page image OCR read, the lines of the cited passage drawn as boxes over it
 * (in percent of the image, so they scale with it at any width), and the text OCR read beside it (below it on
 * a phone), the passage's lines marked. A page without lines shows `fallback` (today's view).
 */
export function ScanView({ documentId, page, pages, passage, title, onPage, fallback }: Props) {
  const [ocr, setOcr] = useState<OcrPage | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);
  const [active, setActive] = useState<number | null>(null);
  const [loaded, setLoaded] = useState(false);
  const firstBox = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const ctrl = new AbortController();
    setOcr(null);
    setError(null);
    setLoaded(false);
    setActive(null);
    get("/api/documents/{document_id}/pages/{page}/ocr", { ...pagePath(documentId, page), signal: ctrl.signal }).then(
      setOcr,
      (e: unknown) => {
        if (ctrl.signal.aborted) return;
        // a page past the last one, or a document gone: today's view says what there is
        if (e instanceof ApiError && e.status === 404) setOcr({ document_id: documentId, page, width: null, height: null, lines: [], scanned_pages: [] });
        else setError(errorMessage(e));
      },
    );
    return () => ctrl.abort();
  }, [documentId, page, attempt]);

  const texts = useMemo(() => (ocr ? ocr.lines.map((l) => l.text) : []), [ocr]);
  const hits = useMemo(() => new Set(passage ? matchRuns(texts, passage) : []), [texts, passage]);

  useEffect(() => {
    if (loaded && hits.size) firstBox.current?.scrollIntoView?.({ block: "center" });
  }, [loaded, hits]);

  if (error)
    return (
      <div className="error-box" role="alert" data-testid="scan-error">
        <div className="error-text">
          Couldn't read page {page}'s OCR lines: {error}
        </div>
        <button type="button" className="btn btn-small" onClick={() => setAttempt((n) => n + 1)}>
          Try again
        </button>
      </div>
    );
  if (!ocr) return <Spinner label={`Opening page ${page}`} />;
  if (!ocr.lines.length || !ocr.width || !ocr.height) return <>{fallback}</>;

  const { width, height } = ocr;
  const count = pages ?? Math.max(page, ...ocr.scanned_pages);
  const first = Math.min(...hits);
  return (
    <section className="scan-view" aria-label={`${title}, page ${page} (scanned)`} data-testid="scan-view" data-page={page}>
      <div className="pdf-toolbar">
        <button type="button" className="btn btn-small" disabled={page <= 1} onClick={() => onPage(page - 1)} data-testid="scan-prev">
          Previous page
        </button>
        <span aria-live="polite" data-testid="scan-page-label">
          Page {page} of {count}
        </span>
        <button type="button" className="btn btn-small" disabled={page >= count} onClick={() => onPage(page + 1)} data-testid="scan-next">
          Next page
        </button>
        {passage && (
          <span className="muted small" data-testid="scan-hits">
            {hits.size
              ? `The cited passage is highlighted: ${hits.size} ${hits.size === 1 ? "line" : "lines"}.`
              : "The cited passage is not on this page."}
          </span>
        )}
      </div>
      <div className="scan-body">
        <figure className="scan-figure" style={{ aspectRatio: `${width} / ${height}` }}>
          <img
            src={getUrl("/api/documents/{document_id}/pages/{page}/image", pagePath(documentId, page))}
            alt={`Page ${page} of ${title}, as scanned. Its text, read by OCR, follows.`}
            width={width}
            height={height}
            onLoad={() => setLoaded(true)}
            data-testid="scan-image"
          />
          {[...hits].map((i) => {
            const l = ocr.lines[i];
            return (
              <div
                key={i}
                ref={i === first ? firstBox : undefined}
                className={`scan-box${active === i ? " active" : ""}`}
                style={{ left: pct(l.x0, width), top: pct(l.y0, height), width: pct(l.x1 - l.x0, width), height: pct(l.y1 - l.y0, height) }}
                aria-hidden="true"
                data-testid="scan-box"
                data-line={i}
              />
            );
          })}
        </figure>
        <section className="scan-text" aria-label="Text read by OCR" tabIndex={0} data-testid="scan-text">
          <h2 className="small">Text read by OCR</h2>
          <ol>
            {ocr.lines.map((l, i) =>
              hits.has(i) ? (
                <li
                  key={i}
                  className={`scan-line cited${active === i ? " active" : ""}`}
                  tabIndex={0}
                  onFocus={() => setActive(i)}
                  onBlur={() => setActive(null)}
                  onMouseEnter={() => setActive(i)}
                  onMouseLeave={() => setActive(null)}
                  data-testid="scan-line"
                  data-line={i}
                >
                  <mark>{l.text}</mark>
                  <span className="sr-only"> (cited)</span>
                </li>
              ) : (
                <li key={i} className="scan-line" data-testid="scan-line" data-line={i}>
                  {l.text}
                </li>
              ),
            )}
          </ol>
        </section>
      </div>
    </section>
  );
}
