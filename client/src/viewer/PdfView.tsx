// Loaded on demand (React.lazy): pdf.js stays out of the main bundle, and its worker is a file of the app's own
// assets (the CSP allows `worker-src 'self'`; no blob: worker, no eval).
import { getDocument, GlobalWorkerOptions, TextLayer, type PDFDocumentProxy } from "pdfjs-dist";
import workerUrl from "pdfjs-dist/build/pdf.worker.min.mjs?url";
import { useEffect, useRef, useState } from "react";
import { matchRuns } from "./match";
import "./pdf.css";

GlobalWorkerOptions.workerSrc = workerUrl;

const MAX_WIDTH = 900;

interface Props {
  url: string;
  /** The page to show, from 1 (clamped to the document). */
  page: number;
  /** The cited passage: its text runs on the page are highlighted. */
  passage: string | null;
  title: string;
  onPage: (page: number) => void;
}

/** One page of a PDF: the canvas, a text layer over it (selectable text), the passage highlighted. */
export default function PdfView({ url, page, passage, title, onPage }: Props) {
  const [doc, setDoc] = useState<PDFDocumentProxy | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [shown, setShown] = useState<{ page: number; hits: number } | null>(null);
  const box = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const layer = useRef<HTMLDivElement>(null);

  useEffect(() => {
    setDoc(null);
    setError(null);
    const task = getDocument({ url });
    task.promise.then(setDoc, (e: unknown) => {
      if ((e as { name?: string })?.name !== "AbortException")
        setError(`Couldn't open the PDF: ${e instanceof Error ? e.message : String(e)}`);
    });
    return () => {
      void task.destroy();
    };
  }, [url]);

  const count = doc?.numPages ?? 0;
  const number = count ? Math.min(Math.max(1, page), count) : page;

  useEffect(() => {
    if (!doc || !canvas.current || !layer.current || !box.current) return;
    let cancelled = false;
    let cleanup = () => {};
    void (async () => {
      try {
        const pdfPage = await doc.getPage(number);
        if (cancelled) return;
        // the room the page has (its column), not the box itself (as wide as the canvas drawn last)
        const room = box.current?.parentElement?.clientWidth || MAX_WIDTH;
        const width = Math.min(room - 2, MAX_WIDTH);
        const scale = width / pdfPage.getViewport({ scale: 1 }).width;
        const viewport = pdfPage.getViewport({ scale });
        const ratio = window.devicePixelRatio || 1;
        const c = canvas.current!;
        c.width = Math.floor(viewport.width * ratio);
        c.height = Math.floor(viewport.height * ratio);
        c.style.width = `${Math.floor(viewport.width)}px`;
        c.style.height = `${Math.floor(viewport.height)}px`;
        box.current?.style.setProperty("--scale-factor", String(scale));
        const render = pdfPage.render({
          canvas: c,
          viewport,
          transform: ratio === 1 ? undefined : [ratio, 0, 0, ratio, 0, 0],
        });
        const text = new TextLayer({ textContentSource: pdfPage.streamTextContent(), container: layer.current!, viewport });
        cleanup = () => {
          render.cancel();
          text.cancel();
        };
        layer.current!.replaceChildren();
        await Promise.all([render.promise, text.render()]);
        if (cancelled) return;
        const hits = passage ? matchRuns(text.textContentItemsStr, passage) : [];
        hits.forEach((i) => text.textDivs[i]?.classList.add("pdf-hl"));
        setShown({ page: number, hits: hits.length });
        text.textDivs[hits[0]]?.scrollIntoView?.({ block: "center" });
      } catch (e) {
        if (!cancelled && (e as { name?: string })?.name !== "RenderingCancelledException")
          setError(`Couldn't show page ${number}: ${e instanceof Error ? e.message : String(e)}`);
      }
    })();
    return () => {
      cancelled = true;
      cleanup();
    };
  }, [doc, number, passage]);

  if (error)
    return (
      <div className="error-box" role="alert" data-testid="pdf-error">
        <div className="error-text">{error}</div>
      </div>
    );
  return (
    <section className="pdf-view" aria-label={`${title}, page ${number}`}>
      <div className="pdf-toolbar">
        <button type="button" className="btn btn-small" disabled={!doc || number <= 1} onClick={() => onPage(number - 1)} data-testid="pdf-prev">
          Previous page
        </button>
        <span aria-live="polite" data-testid="pdf-page-label">
          {doc ? `Page ${number} of ${count}` : "Opening the PDF…"}
        </span>
        <button
          type="button"
          className="btn btn-small"
          disabled={!doc || number >= count}
          onClick={() => onPage(number + 1)}
          data-testid="pdf-next"
        >
          Next page
        </button>
        {shown && passage && shown.page === number && (
          <span className="muted small" data-testid="pdf-hits">
            {shown.hits ? "The cited passage is highlighted." : "The cited passage is not on this page."}
          </span>
        )}
      </div>
      <div className="pdf-page" ref={box} data-testid="pdf-page" data-page={shown?.page ?? ""}>
        <canvas ref={canvas} role="img" aria-label={`Page ${number} of ${title}`} />
        <div className="textLayer" ref={layer} />
      </div>
    </section>
  );
}
