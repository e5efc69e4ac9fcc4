import { useEffect, useRef, useState, type FormEvent } from "react";
import type { Thread } from "../api/types";
import { Icon } from "../components/Icon";
import { formatDate } from "../lib/format";

interface Props {
  threads: Thread[];
  activeId: string | null;
  error: string | null;
  onNew: () => void;
  onSelect: (id: string) => void;
  onRename: (id: string, title: string) => Promise<void>;
  onDelete: (id: string) => Promise<void>;
}

export function ThreadList({ threads, activeId, error, onNew, onSelect, onRename, onDelete }: Props) {
  const [query, setQuery] = useState("");
  const needle = query.trim().toLowerCase();
  const shown = needle ? threads.filter((t) => (t.title || "Untitled chat").toLowerCase().includes(needle)) : threads;
  return (
    <div className="threads">
      <button type="button" className="btn btn-primary btn-block" onClick={onNew} data-testid="new-thread">
        <Icon name="plus" /> New chat
      </button>
      {threads.length > 1 && (
        <input
          type="search"
          className="input thread-search"
          placeholder="Search conversations"
          aria-label="Search conversations by title"
          value={query}
          maxLength={200}
          onChange={(e) => setQuery(e.target.value)}
          data-testid="thread-search"
        />
      )}
      {error && (
        <p className="muted small" role="alert">
          {error}
        </p>
      )}
      {threads.length === 0 && !error ? (
        <p className="muted small threads-empty" data-testid="threads-empty">
          No conversations yet.
        </p>
      ) : shown.length === 0 ? (
        <p className="muted small threads-empty" role="status" data-testid="threads-none">
          No conversation titled like “{query.trim()}”.
        </p>
      ) : (
        <ul className="thread-list" data-testid="thread-list" aria-label="Conversations">
          {shown.map((t) => (
            <ThreadRow
              key={t.id}
              thread={t}
              active={t.id === activeId}
              onSelect={onSelect}
              onRename={onRename}
              onDelete={onDelete}
            />
          ))}
        </ul>
      )}
    </div>
  );
}

type RowProps = Pick<Props, "onSelect" | "onRename" | "onDelete"> & { thread: Thread; active: boolean };

function ThreadRow({ thread, active, onSelect, onRename, onDelete }: RowProps) {
  const [mode, setMode] = useState<"view" | "rename" | "confirm">("view");
  const [title, setTitle] = useState(thread.title);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  const settled = useRef(false);
  const label = thread.title || "Untitled chat";

  useEffect(() => {
    if (mode === "rename") {
      settled.current = false;
      input.current?.select();
    }
  }, [mode]);

  const cancel = () => {
    settled.current = true;
    setTitle(thread.title);
    setMode("view");
  };

  // Enter (submit) and blur both save; `settled` makes sure only one does.
  const save = async (e?: FormEvent) => {
    e?.preventDefault();
    if (settled.current) return;
    settled.current = true;
    const next = title.trim();
    if (!next || next === thread.title) return setMode("view");
    setBusy(true);
    try {
      await onRename(thread.id, next);
      setMode("view");
    } catch {
      settled.current = false; // keep editing; the page shows the error
    } finally {
      setBusy(false);
    }
  };

  const del = async () => {
    setBusy(true);
    try {
      await onDelete(thread.id);
    } finally {
      setBusy(false);
      setMode("view");
    }
  };

  if (mode === "rename") {
    return (
      <li className="thread-row editing" data-testid="thread-item" data-thread-id={thread.id}>
        <form onSubmit={save} className="thread-rename">
          <label className="sr-only" htmlFor={`rename-${thread.id}`}>
            Conversation title
          </label>
          <input
            id={`rename-${thread.id}`}
            ref={input}
            value={title}
            maxLength={200}
            disabled={busy}
            onChange={(e) => setTitle(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Escape") cancel();
            }}
            onBlur={() => void save()}
            data-testid="thread-rename-input"
          />
        </form>
      </li>
    );
  }

  return (
    <li
      className={`thread-row${active ? " active" : ""}`}
      data-testid="thread-item"
      data-thread-id={thread.id}
      data-active={active}
    >
      {mode === "confirm" ? (
        <div className="thread-confirm" role="group" aria-label={`Delete “${label}”?`}>
          <span className="small">Delete this chat?</span>
          <button type="button" className="btn btn-danger btn-small" disabled={busy} onClick={del} data-testid="thread-delete-confirm">
            Delete
          </button>
          <button type="button" className="btn btn-small" onClick={() => setMode("view")} data-testid="thread-delete-cancel" autoFocus>
            Cancel
          </button>
        </div>
      ) : (
        <>
          <button
            type="button"
            className="thread-select"
            aria-current={active ? "page" : undefined}
            onClick={() => onSelect(thread.id)}
            data-testid="thread-select"
          >
            <span className="thread-title" data-testid="thread-title" title={label}>
              {label}
            </span>
            <span className="thread-date muted">{formatDate(thread.updated_at)}</span>
          </button>
          <span className="thread-actions">
            <button
              type="button"
              className="icon-button"
              aria-label={`Rename “${label}”`}
              title="Rename"
              onClick={() => {
                setTitle(thread.title);
                setMode("rename");
              }}
              data-testid="thread-rename"
            >
              <Icon name="pencil" />
            </button>
            <button
              type="button"
              className="icon-button"
              aria-label={`Delete “${label}”`}
              title="Delete"
              onClick={() => setMode("confirm")}
              data-testid="thread-delete"
            >
              <Icon name="trash" />
            </button>
          </span>
        </>
      )}
    </li>
  );
}
