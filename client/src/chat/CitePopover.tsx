import { useEffect, useLayoutEffect, useRef, useState } from "react";
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

/** Phones: the preview is a sheet at the bottom of the screen, over everything (the composer too). */
export const SHEET_QUERY = "(max-width: 760px)";
const isSheet = () => typeof window.matchMedia === "function" && window.matchMedia(SHEET_QUERY).matches;

/**
 * Below the anchor, inside the container, at most its width; above the anchor when it would not fit below in
 * the visible part of the message list (the composer sits under it), whichever side has more room otherwise.
 */
function place(anchor: HTMLElement, container: HTMLElement, height: number) {
  const a = anchor.getBoundingClientRect();
  const c = container.getBoundingClientRect();
  const view = container.closest(".messages-scroll")?.getBoundingClientRect() ?? { top: 0, bottom: window.innerHeight };
  const bottom = Math.min(view.bottom, window.innerHeight);
  const top = Math.max(view.top, 0);
  const width = Math.min(360, c.width);
  const below = a.bottom + 6;
  const above = a.top - 6 - height;
  const fitsBelow = below + height <= bottom;
  const useAbove = !fitsBelow && (above >= top || a.top - top > bottom - a.bottom);
  return { top: (useAbove ? above : below) - c.top, left: Math.max(0, Math.min(a.left - c.left, c.width - width)) };
}

/** The cited passage, in place under (or over) its `[n]`; on a phone, once pinned, a sheet at the bottom of the screen. */
export function CitePopover({ preview, chunk, container, onClose, onHover, onShowInSources }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const title = chunk.title || chunk.filename;
  const [sheet] = useState(isSheet);

  // Position through the CSSOM (allowed by the CSP, unlike style attributes in markup), once its height is known.
  useLayoutEffect(() => {
    const el = box.current;
    if (!el || sheet || !container) return;
    const { top, left } = place(preview.anchor, container, el.offsetHeight);
    el.style.top = `${top}px`;
    el.style.left = `${left}px`;
  }, [preview, chunk, container, sheet]);

  // A pinned preview takes focus (its link is reachable by keyboard); a click outside closes it, and so does
  // Escape wherever the focus is (a click on its text leaves the focus on the page, not in the preview).
  useEffect(() => {
    if (!preview.pinned) return;
    box.current?.querySelector<HTMLElement>("a, button")?.focus({ preventScroll: true });
    const onDown = (e: PointerEvent) => {
      const t = e.target as Node;
      if (!box.current?.contains(t) && !preview.anchor.contains(t)) onClose(false);
    };
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || e.defaultPrevented) return;
      e.preventDefault(); // not also "stop the answer" (ChatPage's Escape)
      onClose(true);
    };
    document.addEventListener("pointerdown", onDown);
    document.addEventListener("keydown", onKey);
    return () => {
      document.removeEventListener("pointerdown", onDown);
      document.removeEventListener("keydown", onKey);
    };
  }, [preview, onClose]);

  // On a phone only a tap (or Enter) shows the sheet. A hover or focus preview there would be a sheet over the
  // [n] itself: the mouse-down of a tap focuses [n], its sheet opens under the finger, the release lands on the
  // sheet, and the click goes to their common ancestor, so the preview was never pinned (issue 46).
  if (sheet && !preview.pinned) return null;

  return (
    <div
      ref={box}
      className={`cite-popover${sheet ? " cite-sheet" : ""}`}
      role="dialog"
      aria-label={`Source ${preview.n}: ${title}`}
      data-testid="cite-popover"
      data-n={preview.n}
      onMouseEnter={() => onHover(true)}
      onMouseLeave={() => onHover(false)}
      onBlur={(e) => {
        // Tab past its last button: the focus moves on, so the preview goes (it would cover what has the focus).
        const to = e.relatedTarget;
        if (preview.pinned && to instanceof Node && !e.currentTarget.contains(to) && !preview.anchor.contains(to)) onClose(false);
      }}
      onKeyDown={(e) => {
        if (e.key === "Escape") {
          e.stopPropagation();
          e.preventDefault();
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
      {/* focusable: a long passage scrolls, and keyboard users must be able to scroll it too */}
      <div
        className="cite-popover-passage"
        data-testid="cite-popover-passage"
        role="region"
        tabIndex={0}
        aria-label={`Passage ${preview.n}`}
      >
        {chunk.content}
      </div>
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
