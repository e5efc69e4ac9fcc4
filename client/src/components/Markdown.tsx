import { useMemo, type MouseEvent } from "react";
import { renderMarkdown } from "../lib/markdown";

/**
 * Sanitized Markdown. `onCite(n)` fires when a `[n]` citation is clicked
 * (citations are only linked for 1..sourceCount).
 */
export function Markdown({
  content,
  sourceCount = 0,
  onCite,
  className = "markdown",
}: {
  content: string;
  sourceCount?: number;
  onCite?: (n: number) => void;
  className?: string;
}) {
  const html = useMemo(() => renderMarkdown(content, sourceCount), [content, sourceCount]);
  const onClick = (e: MouseEvent<HTMLDivElement>) => {
    const el = (e.target as HTMLElement).closest<HTMLElement>("[data-cite]");
    if (el && onCite) {
      e.preventDefault();
      onCite(Number(el.dataset.cite));
    }
  };
  return (
    <div className={className} data-testid="message-content" onClick={onClick} dangerouslySetInnerHTML={{ __html: html }} />
  );
}
