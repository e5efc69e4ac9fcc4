import { useMemo, type FocusEvent, type MouseEvent } from "react";
import { renderMarkdown } from "../lib/markdown";

/** How a `[n]` citation was reached: hovered, focused, or clicked/tapped (which pins its preview). */
export type CiteTrigger = "hover" | "focus" | "click";

export interface RichHandlers {
  /** A `[n]` was clicked (or tapped). */
  onCite?: (n: number, el: HTMLElement) => void;
  /** A `[n]` was hovered or focused (`el`), or left (null). */
  onPreview?: (n: number, el: HTMLElement | null, how: CiteTrigger) => void;
}

const citeOf = (target: EventTarget | null) =>
  target instanceof Element ? target.closest<HTMLElement>("[data-cite]") : null;

/** Event handlers for rendered Markdown: citations, and each code block's Copy button. */
export function richHandlers({ onCite, onPreview }: RichHandlers) {
  return {
    onClick: (e: MouseEvent<HTMLDivElement>) => {
      const target = e.target as HTMLElement;
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
  return (
    <div
      className={className}
      data-testid="message-content"
      {...richHandlers({ onCite, onPreview })}
      dangerouslySetInnerHTML={{ __html: html }}
    />
  );
}
