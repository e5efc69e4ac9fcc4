import { useEffect, useRef } from "react";
import type { Chunk } from "../api/types";
import { Link } from "../lib/router";
import { viewerUrl } from "../lib/routes";

export interface Preview {
  n: number;
  /** The `[n]` button it belongs to (focus returns there). */
  anchor: HTMLElement;
  /** Clicked or tapped: stays until closed (a hover/focus preview goes when left). */
  pinned: boolean;
}

interface Props {
  preview: Preview;
  chunk: Chunk;
  /** The message element the popover is positioned in. */
  container: HTMLElement | null;
  onClose: (refocus: boolean) => void;
  onHover: (inside: boolean) => void;
  onShowInSources: (n: number) => void;
}

/** Below the anchor, inside the container, at most its width. */
function place(anchor: HTMLElement, container: HTMLElement | null) {
  if (!container) return { top: 0, left: 0 };
  const a = anchor.getBoundingClientRect();
  const c = container.getBoundingClientRect();
  const width = Math.min(360, c.width);
  return { top: a.bottom - c.top + 6, left: Math.max(0, Math.min(a.left - c.left, c.width - width)) };
}

/** The cited passage, in place under its `[n]`: no scrolling, no opening the source list. */
export function CitePopover({ preview, chunk, container, onClose, onHover, onShowInSources }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const title = chunk.title || chunk.filename;
  const { top, left } = place(preview.anchor, container);

  // Position through the CSSOM (allowed by the CSP, unlike style attributes in markup).
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    el.style.top = `${top}px`;
    el.style.left = `${left}px`;
  }, [top, left]);

  // A pinned preview takes focus (its link is reachable by keyboard); a click outside closes it.
  useEffect(() => {
    if (!preview.pinned) return;
    box.current?.querySelector<HTMLElement>("a, button")?.focus({ preventScroll: true });
    const onDown = (e: PointerEvent) => {
      const t = e.target as Node;
      if (!box.current?.contains(t) && !preview.anchor.contains(t)) onClose(false);
    };
    document.addEventListener("pointerdown", onDown);
    return () => document.removeEventListener("pointerdown", onDown);
  }, [preview, onClose]);

  return (
    <div
      ref={box}
      className="cite-popover"
      role="dialog"
      aria-label={`Source ${preview.n}: ${title}`}
      data-testid="cite-popover"
      data-n={preview.n}
      onMouseEnter={() => onHover(true)}
      onMouseLeave={() => onHover(false)}
      onKeyDown={(e) => {
        if (e.key === "Escape") {
          e.stopPropagation();
          onClose(true);
        }
      }}
    >
      <p className="cite-popover-head">
        <span className="source-num">{preview.n}</span>
        <span className="source-name">{title}</span>
        {chunk.page != null && <span className="muted small"> · p. {chunk.page}</span>}
        {chunk.section && <span className="muted small"> · § {chunk.section}</span>}
      </p>
      <p className="cite-popover-passage" data-testid="cite-popover-passage">
        {chunk.content}
      </p>
      <p className="cite-popover-actions">
        <Link to={viewerUrl(chunk)} className="btn btn-small" data-testid="cite-popover-open">
          Open in document
        </Link>
        <button
          type="button"
          className="btn btn-small btn-ghost"
          data-testid="cite-popover-sources"
          onClick={() => onShowInSources(preview.n)}
        >
          Show in sources
        </button>
        {preview.pinned && (
          <button type="button" className="btn btn-small btn-ghost" onClick={() => onClose(true)} aria-label="Close preview">
            Close
          </button>
        )}
      </p>
    </div>
  );
}
