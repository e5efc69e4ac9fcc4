import { useEffect, useId, useRef, useState } from "react";
import { threadsApi } from "../api/threads";
import { Icon } from "../components/Icon";
import { disclosureKeys } from "../lib/disclosure";

/**
 * The thread's downloads behind one button (a disclosure: the title keeps the header's room). Escape or a click
 * elsewhere closes it; Escape gives the focus back to the button.
 */
export function ExportMenu({ threadId }: { threadId: string }) {
  const [open, setOpen] = useState(false);
  const id = useId();
  const box = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (!open) return;
    box.current?.querySelector<HTMLElement>(".export-list a")?.focus();
    const onDown = (e: PointerEvent) => {
      if (!box.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener("pointerdown", onDown);
    return () => document.removeEventListener("pointerdown", onDown);
  }, [open]);

  return (
    <div
      ref={box}
      className="chat-export"
      data-testid="chat-export"
      {...disclosureKeys(open, (refocus) => {
        setOpen(false);
        if (refocus) button.current?.focus();
      })}
    >
      <button
        ref={button}
        type="button"
        className="btn btn-small btn-ghost export-button"
        aria-expanded={open}
        aria-controls={id}
        onClick={() => setOpen((o) => !o)}
        title="Export this conversation"
        data-testid="export-button"
      >
        <Icon name="download" />
        <span className="export-label">Export</span>
      </button>
      {open && (
        <ul id={id} className="export-list" aria-label="Export this conversation as">
          <li>
            <a href={threadsApi.exportUrl(threadId, "markdown")} download onClick={() => setOpen(false)} data-testid="export-markdown">
              Markdown (.md)
            </a>
          </li>
          <li>
            <a href={threadsApi.exportUrl(threadId, "json")} download onClick={() => setOpen(false)} data-testid="export-json">
              JSON
            </a>
          </li>
        </ul>
      )}
    </div>
  );
}
