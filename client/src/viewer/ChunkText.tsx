import { useEffect, useRef, useState } from "react";
import { errorMessage } from "../api/client";
import type { ChunkList, DocumentChunk } from "../api/types";
import { documentsApi } from "../api/documents";

const MORE = 40;

/** Where a chunk sits: "Page 3 · § Holidays · Slide 2 · chunk 7" (what the format knows). */
export function whereLabel(c: DocumentChunk): string {
  return [
    c.page != null ? `Page ${c.page}` : null,
    c.section ? `§ ${c.section}` : null,
    c.location?.label || null,
    `chunk ${c.ordinal + 1}`,
  ]
    .filter(Boolean)
    .join(" · ");
}

interface Props {
  documentId: string;
  /** The first window of chunks (around the cited one). */
  initial: ChunkList;
  targetId: number | null;
}

/** A document's text, chunk by chunk, the cited one highlighted and scrolled into view; earlier and later
 * chunks load on demand. */
export function ChunkText({ documentId, initial, targetId }: Props) {
  const [chunks, setChunks] = useState(initial.chunks);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const target = useRef<HTMLElement>(null);
  const first = chunks[0]?.ordinal ?? initial.offset;
  const last = chunks.length ? chunks[chunks.length - 1].ordinal : initial.offset - 1;

  useEffect(() => {
    target.current?.scrollIntoView?.({ block: "center" });
  }, []);

  const load = async (where: "before" | "after") => {
    setBusy(true);
    setError(null);
    try {
      const offset = where === "before" ? Math.max(0, first - MORE) : last + 1;
      const limit = where === "before" ? first - offset : MORE;
      const page = await documentsApi.chunks(documentId, { offset, limit });
      setChunks((cur) => (where === "before" ? [...page.chunks, ...cur] : [...cur, ...page.chunks]));
    } catch (e) {
      setError(`Couldn't load more: ${errorMessage(e)}`);
    } finally {
      setBusy(false);
    }
  };

  if (!chunks.length) return <p className="muted">No text to show.</p>;
  return (
    <div className="viewer-text" data-testid="viewer-text">
      {first > 0 && (
        <button type="button" className="btn btn-small" disabled={busy} onClick={() => void load("before")} data-testid="viewer-earlier">
          Show earlier text
        </button>
      )}
      {chunks.map((c) => {
        const cited = c.id === targetId;
        return (
          <article
            key={c.id}
            ref={cited ? target : undefined}
            className={`viewer-chunk${cited ? " cited" : ""}`}
            aria-current={cited ? "true" : undefined}
            aria-label={cited ? `Cited passage, ${whereLabel(c)}` : undefined}
            data-testid="viewer-chunk"
            data-chunk-id={c.id}
            data-cited={cited ? "true" : undefined}
          >
            <div className="viewer-loc muted small">{whereLabel(c)}</div>
            <div className="viewer-chunk-text">{c.content}</div>
          </article>
        );
      })}
      {error && (
        <p className="doc-error" role="alert">
          {error}
        </p>
      )}
      {last + 1 < initial.total && (
        <button type="button" className="btn btn-small" disabled={busy} onClick={() => void load("after")} data-testid="viewer-later">
          Show more text
        </button>
      )}
    </div>
  );
}
