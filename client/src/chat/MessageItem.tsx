import { memo, useCallback, useEffect, useRef, useState } from "react";
import { Markdown, type CiteTrigger } from "../components/Markdown";
import { CodeText } from "../components/HealthBanner";
import { messageSources, type ChatMessage } from "./state";
import { ToolIndicator } from "./ToolIndicator";
import { ProgressNote } from "./ProgressNote";
import { CitationSummary, CitedMarkdown } from "./Citations";
import { CitePopover, type Preview } from "./CitePopover";
import { EditQuestion, MessageActions, type MessageHandlers } from "./MessageActions";
import { notCovered } from "./coverage";

interface Props extends MessageHandlers {
  message: ChatMessage;
  onRetry?: (assistantKey: string) => void;
  canRetry: boolean;
  /** An answer is being generated in this thread. */
  running?: boolean;
  /** The thread searches only some documents or collections ("Search all my documents" can widen it). */
  scoped?: boolean;
}

export const MessageItem = memo(function MessageItem(props: Props) {
  if (props.message.role === "user") return <UserMessage {...props} />;
  return <AssistantMessage {...props} />;
});

function UserMessage({ message, running = false, ...handlers }: Props) {
  const [editing, setEditing] = useState(false);
  return (
    <li
      className="msg msg-user"
      data-testid="message"
      data-role="user"
      data-status={message.status}
      data-message-id={message.id ?? undefined}
    >
      {editing && handlers.onEdit ? (
        <EditQuestion message={message} onEdit={handlers.onEdit} onDone={() => setEditing(false)} />
      ) : (
        <div className="bubble" data-testid="message-content">
          {message.content}
        </div>
      )}
      {!editing && (
        <MessageActions
          message={message}
          running={running}
          onBranch={handlers.onBranch}
          onStartEdit={handlers.onEdit ? () => setEditing(true) : undefined}
        />
      )}
    </li>
  );
}

/** Hover previews wait this long before closing (the pointer may be on its way into the popover). */
const HOVER_GRACE_MS = 250;

function AssistantMessage({ message, onRetry, canRetry, running = false, scoped = false, ...handlers }: Props) {
  const [openSearches, setOpenSearches] = useState<Set<string>>(() => new Set());
  const [openCards, setOpenCards] = useState<Set<number>>(() => new Set());
  const [flash, setFlash] = useState<{ n: number; nonce: number } | null>(null);
  const cards = useRef(new Map<number, HTMLLIElement>());
  const sources = messageSources(message);

  const cardRef = useCallback((n: number, el: HTMLLIElement | null) => {
    if (el) cards.current.set(n, el);
    else cards.current.delete(n);
  }, []);

  const toggle = <T,>(set: Set<T>, v: T) => {
    const next = new Set(set);
    if (next.has(v)) next.delete(v);
    else next.add(v);
    return next;
  };

  // Offsets: citation number of each search's first chunk.
  let offset = 1;
  const firstIndex = message.searches.map((s) => {
    const start = offset;
    offset += s.result?.chunks.length ?? 0;
    return start;
  });

  const [preview, setPreview] = useState<Preview | null>(null);
  const item = useRef<HTMLLIElement>(null);
  const closing = useRef<number | null>(null);
  const cancelClose = () => {
    if (closing.current != null) window.clearTimeout(closing.current);
    closing.current = null;
  };
  useEffect(() => cancelClose, []);

  const previewRef = useRef(preview);
  previewRef.current = preview;
  /** Focus going back to [n] (after Escape) must not open its preview again. */
  const refocusing = useRef(false);
  const closePreview = useCallback((refocus: boolean) => {
    const p = previewRef.current;
    setPreview(null);
    if (p && refocus) {
      refocusing.current = true;
      p.anchor.focus({ preventScroll: true });
      refocusing.current = false;
    }
  }, []);

  const onPreview = (n: number, el: HTMLElement | null, how: CiteTrigger) => {
    if (refocusing.current) return;
    cancelClose();
    if (el) {
      setPreview((p) => (p?.pinned ? p : { n, anchor: el, pinned: false }));
      return;
    }
    if (how === "focus") {
      // Focus moved on: into the popover keeps it; elsewhere closes an unpinned one.
      window.setTimeout(() => {
        if (!item.current?.querySelector(".cite-popover")?.contains(document.activeElement)) {
          setPreview((p) => (p?.pinned ? p : null));
        }
      }, 0);
      return;
    }
    closing.current = window.setTimeout(() => setPreview((p) => (p?.pinned ? p : null)), HOVER_GRACE_MS);
  };

  const onCiteClick = (n: number, el: HTMLElement) => {
    cancelClose();
    setPreview((p) => (p?.pinned && p.n === n ? null : { n, anchor: el, pinned: true }));
  };

  /** Open the source list at card `n` (from the preview's "Show in sources"). */
  const onCite = (n: number) => {
    setPreview(null);
    const si = message.searches.findIndex((s, i) => {
      const len = s.result?.chunks.length ?? 0;
      return n >= firstIndex[i] && n < firstIndex[i] + len;
    });
    if (si === -1) return;
    setOpenSearches((s) => new Set(s).add(message.searches[si].id));
    setOpenCards((s) => new Set(s).add(n));
    setFlash({ n, nonce: Date.now() });
  };

  useEffect(() => {
    if (!flash) return;
    const el = cards.current.get(flash.n);
    if (el) {
      el.scrollIntoView?.({ behavior: "smooth", block: "nearest" });
      el.focus({ preventScroll: true });
    }
    const t = window.setTimeout(() => setFlash(null), 1600);
    return () => window.clearTimeout(t);
  }, [flash]);

  const streaming = message.status === "streaming";
  const waiting = streaming && !message.content && message.searches.every((s) => s.status !== "running");

  return (
    <li
      ref={item}
      className="msg msg-assistant"
      data-testid="message"
      data-role="assistant"
      data-status={message.status}
      data-message-id={message.id ?? undefined}
      aria-busy={streaming}
    >
      {message.searches.length > 0 && (
        <div className="tools">
          {message.searches.map((s, i) => (
            <ToolIndicator
              key={s.id}
              step={s}
              firstIndex={firstIndex[i]}
              open={openSearches.has(s.id)}
              onToggle={() => setOpenSearches((set) => toggle(set, s.id))}
              isCardOpen={(n) => openCards.has(n)}
              onToggleCard={(n) => setOpenCards((set) => toggle(set, n))}
              flash={flash?.n ?? null}
              cardRef={cardRef}
            />
          ))}
        </div>
      )}
      {message.content && message.citations && !streaming ? (
        <CitedMarkdown
          content={message.content}
          sourceCount={sources.length}
          onCite={onCiteClick}
          onPreview={onPreview}
          className="markdown answer"
          report={message.citations}
        />
      ) : message.content ? (
        <Markdown
          content={message.content}
          sourceCount={sources.length}
          onCite={onCiteClick}
          onPreview={onPreview}
          className={`markdown answer${streaming ? " streaming" : ""}`}
        />
      ) : null}
      {preview && sources[preview.n - 1] && (
        <CitePopover
          preview={preview}
          chunk={sources[preview.n - 1]}
          container={item.current}
          onClose={closePreview}
          onHover={(inside) => (inside ? cancelClose() : onPreview(preview.n, null, "hover"))}
          onShowInSources={onCite}
        />
      )}
      {notCovered(message) && (
        <div className="not-covered" role="note" data-testid="not-covered">
          <p>
            <strong>Not in your documents.</strong>{" "}
            {scoped
              ? "Nothing in the documents this chat searches matches the question closely."
              : "Nothing in your documents matches the question closely, so this answer has no source to rest on."}
          </p>
          {scoped && message.id && handlers.onWiden && (
            <button
              type="button"
              className="btn btn-small"
              disabled={running}
              onClick={() => handlers.onWiden?.(message.id as string)}
              data-testid="widen-scope"
            >
              Search all my documents
            </button>
          )}
        </div>
      )}
      {message.citations && <CitationSummary report={message.citations} />}
      {streaming && message.retried && (
        <p className="note muted" role="status" data-testid="answer-retried">
          {message.retried}
        </p>
      )}
      {waiting && message.reading && <ProgressNote reading={message.reading} />}
      {waiting && !message.reading && (
        <div className="typing" aria-label="Thinking" data-testid="thinking">
          <span />
          <span />
          <span />
        </div>
      )}
      {message.model && !streaming && !message.error && (
        <p className="muted small msg-model" data-testid="message-model">
          Answered by {message.model}
        </p>
      )}
      {message.status === "incomplete" && !message.connectionLost && !message.error && (
        <p className="note muted" data-testid="message-incomplete">
          Stopped — this answer is incomplete.
        </p>
      )}
      {message.error && (
        <div className="error-box" role="alert" data-testid="error-box" data-code={message.error.code}>
          <div className="error-text">
            <CodeText text={message.error.message} />
          </div>
          {message.connectionLost && canRetry && onRetry && (
            <button type="button" className="btn btn-small" onClick={() => onRetry(message.key)} data-testid="retry-button">
              Retry
            </button>
          )}
        </div>
      )}
      <MessageActions message={message} running={running} {...handlers} />
    </li>
  );
}
