import { useCallback, useEffect, useMemo, useRef, useState, type FocusEvent, type MouseEvent, type ReactNode } from "react";
import { renderMarkdown } from "../lib/markdown";

/** How a `[n]` citation was reached: hovered, focused, or clicked/tapped (which pins its preview). */
export type CiteTrigger = "hover" | "focus" | "click";

export interface RichHandlers {
  /** A `[n]` was clicked (or tapped). */
  onCite?: (n: number, el: HTMLElement) => void;
  /** A `[n]` was hovered or focused (`el`), or left (null). */
  onPreview?: (n: number, el: HTMLElement | null, how: CiteTrigger) => void;
  /** A link to another site was clicked: ask before opening `url` (see `useExternalLinks`). */
  onExternal?: (url: string) => void;
}

const citeOf = (target: EventTarget | null) =>
  target instanceof Element ? target.closest<HTMLElement>("[data-cite]") : null;

/** Event handlers for rendered Markdown: citations, and each code block's Copy button. */
export function richHandlers({ onCite, onPreview, onExternal }: RichHandlers) {
  return {
    onClick: (e: MouseEvent<HTMLDivElement>) => {
      const target = e.target as HTMLElement;
      const external = target.closest<HTMLElement>("[data-ext-link]");
      if (external) {
        e.preventDefault();
        onExternal?.(external.dataset.extLink ?? "");
        return;
      }
      const copy = target.closest<HTMLElement>("[data-copy-code]");
      if (copy) {
        const code = copy.parentElement?.querySelector("pre")?.textContent ?? "";
        void navigator.clipboard?.writeText(code).then(() => {
          copy.textContent = "Copied";
          window.setTimeout(() => (copy.textContent = "Copy"), 1500);
        }, () => undefined);
        return;
      }
      const el = citeOf(target);
      if (el) {
        e.preventDefault();
        onCite?.(Number(el.dataset.cite), el);
      }
    },
    onMouseOver: (e: MouseEvent<HTMLDivElement>) => {
      const el = citeOf(e.target);
      if (el && onPreview) onPreview(Number(el.dataset.cite), el, "hover");
    },
    onMouseOut: (e: MouseEvent<HTMLDivElement>) => {
      const el = citeOf(e.target);
      if (el && onPreview && !el.contains(e.relatedTarget as Node | null)) onPreview(Number(el.dataset.cite), null, "hover");
    },
    onFocus: (e: FocusEvent<HTMLDivElement>) => {
      const el = citeOf(e.target);
      if (el && onPreview) onPreview(Number(el.dataset.cite), el, "focus");
    },
    onBlur: (e: FocusEvent<HTMLDivElement>) => {
      const el = citeOf(e.target);
      if (el && onPreview) onPreview(Number(el.dataset.cite), null, "focus");
    },
  };
}

/** The confirmation before an answer's link to another site opens: it shows the full URL. */
export function ExternalLinkDialog({ url, onClose }: { url: string; onClose: () => void }) {
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => cancel.current?.focus(), []);
  let host = url;
  try {
    host = new URL(url).host;
  } catch {
    /* shown as is */
  }
  return (
    <div className="ext-link-backdrop" onClick={onClose}>
      <div
        className="ext-link-dialog card"
        role="alertdialog"
        aria-modal="true"
        aria-labelledby="ext-link-title"
        aria-describedby="ext-link-url"
        data-testid="external-link-dialog"
        onClick={(e) => e.stopPropagation()}
        onKeyDown={(e) => e.key === "Escape" && onClose()}
      >
        <h2 id="ext-link-title">Open a link to {host}?</h2>
        <p className="muted small">
          This link is in an answer, which may repeat text from your documents. Opening it sends the whole address
          below to {host}:
        </p>
        <p id="ext-link-url" className="ext-link-full mono" data-testid="external-link-full-url">
          {url}
        </p>
        <div className="row-actions">
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => {
              window.open(url, "_blank", "noopener,noreferrer");
              onClose();
            }}
            data-testid="external-link-open"
          >
            Open link
          </button>
          <button type="button" className="btn" ref={cancel} onClick={onClose} data-testid="external-link-cancel">
            Cancel
          </button>
        </div>
      </div>
    </div>
  );
}

/** `onExternal` for `richHandlers`, and the confirmation dialog to render while one is pending. */
export function useExternalLinks(): [(url: string) => void, ReactNode] {
  const [pending, setPending] = useState<string | null>(null);
  const ask = useCallback((url: string) => setPending(url), []);
  const dialog = pending ? <ExternalLinkDialog url={pending} onClose={() => setPending(null)} /> : null;
  return [ask, dialog];
}

/**
 * Sanitized Markdown. `onCite(n)` fires when a `[n]` citation is clicked, `onPreview` when one is hovered or
 * focused (citations are only linked for 1..sourceCount). Code blocks are highlighted, with a Copy button.
 */
export function Markdown({
  content,
  sourceCount = 0,
  onCite,
  onPreview,
  className = "markdown",
}: {
  content: string;
  sourceCount?: number;
  className?: string;
} & RichHandlers) {
  const html = useMemo(() => renderMarkdown(content, sourceCount), [content, sourceCount]);
  const [onExternal, dialog] = useExternalLinks();
  return (
    <>
      <div
        className={className}
        data-testid="message-content"
        {...richHandlers({ onCite, onPreview, onExternal })}
        dangerouslySetInnerHTML={{ __html: html }}
      />
      {dialog}
    </>
  );
}
