import { memo, useCallback, useEffect, useRef, useState } from "react";
import { Markdown } from "../components/Markdown";
import { CodeText } from "../components/HealthBanner";
import { messageSources, type ChatMessage } from "./state";
import { ToolIndicator } from "./ToolIndicator";
import { CitationSummary, CitedMarkdown } from "./Citations";

interface Props {
  message: ChatMessage;
  onRetry?: (assistantKey: string) => void;
  canRetry: boolean;
}

export const MessageItem = memo(function MessageItem({ message, onRetry, canRetry }: Props) {
  if (message.role === "user") {
    return (
      <li className="msg msg-user" data-testid="message" data-role="user" data-status={message.status}>
        <div className="bubble" data-testid="message-content">
          {message.content}
        </div>
      </li>
    );
  }
  return <AssistantMessage message={message} onRetry={onRetry} canRetry={canRetry} />;
});

function AssistantMessage({ message, onRetry, canRetry }: Props) {
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

  const onCite = (n: number) => {
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
          onCite={onCite}
          className="markdown answer"
          report={message.citations}
        />
      ) : message.content ? (
        <Markdown
          content={message.content}
          sourceCount={sources.length}
          onCite={onCite}
          className={`markdown answer${streaming ? " streaming" : ""}`}
        />
      ) : null}
      {message.citations && <CitationSummary report={message.citations} />}
      {waiting && (
        <div className="typing" aria-label="Thinking" data-testid="thinking">
          <span />
          <span />
          <span />
        </div>
      )}
      {message.status === "incomplete" && !message.connectionLost && (
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
    </li>
  );
}
