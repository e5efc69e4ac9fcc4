import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent, type ReactNode } from "react";
import { readDraft, writeDraft } from "../lib/drafts";

interface Props {
  /** An answer is being generated: Stop shows; the box stays enabled for the next draft. */
  sending: boolean;
  /** Resolves true when the server took the question; false keeps (restores) the text. */
  onSend: (text: string) => Promise<boolean> | boolean | void;
  onStop: () => void;
  autoFocus?: boolean;
  /** sessionStorage key: what is typed is kept there (see lib/drafts) and restored on mount. */
  draftKey?: string;
  /** The server's CHAT_MAX_MESSAGE_CHARS: the counter warns near it and Send is disabled over it. */
  maxChars?: number;
  /** Why the last question was not taken (busy, too long): shown above the box. */
  notice?: string | null;
  /** Controls shown above the box (retrieval settings). */
  controls?: ReactNode;
  /** Extra controls shown beside the hint. */
  options?: ReactNode;
}

/** The counter shows from this share of the limit on. */
const SHOW_AT = 0.8;

export function Composer({ sending, onSend, onStop, autoFocus, draftKey, maxChars = 8000, notice, controls, options }: Props) {
  const [text, setText] = useState(() => (draftKey ? readDraft(draftKey) : ""));
  const ref = useRef<HTMLTextAreaElement>(null);
  const shownKey = useRef(draftKey);

  // Another thread: show its draft.
  useEffect(() => {
    if (shownKey.current === draftKey) return;
    shownKey.current = draftKey;
    setText(draftKey ? readDraft(draftKey) : "");
  }, [draftKey]);

  useEffect(() => {
    if (autoFocus) ref.current?.focus();
  }, [autoFocus]);

  const edit = (value: string) => {
    setText(value);
    if (draftKey) writeDraft(draftKey, value);
  };

  // Grow with content up to a limit.
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = `${Math.min(el.scrollHeight, 240)}px`;
  }, [text]);

  const length = text.trim().length;
  const over = length > maxChars;

  const submit = async () => {
    const value = text.trim();
    if (!value || over) return;
    const key = draftKey;
    setText("");
    if (key) writeDraft(key, "");
    const taken = await onSend(value);
    if (taken === false) {
      // Refused (an answer is running, too long, unreachable): the text comes back, never lost.
      setText((now) => (now ? now : value));
      if (key) writeDraft(key, value);
    }
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      void submit();
    }
  };

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    void submit();
  };

  const showCount = length >= maxChars * SHOW_AT;
  return (
    <form className="composer" onSubmit={onSubmit} data-testid="composer">
      {controls}
      {notice && (
        <p className="composer-notice" role="alert" data-testid="composer-notice">
          {notice}
        </p>
      )}
      <label htmlFor="composer-input" className="sr-only">
        Message
      </label>
      <textarea
        id="composer-input"
        ref={ref}
        rows={1}
        value={text}
        placeholder="Ask about your documents…"
        onChange={(e) => edit(e.target.value)}
        onKeyDown={onKeyDown}
        aria-describedby={showCount ? "composer-count" : undefined}
        aria-invalid={over || undefined}
        data-testid="composer-input"
      />
      <div className="composer-actions">
        {sending && (
          <button
            type="button"
            className="btn btn-stop"
            onClick={() => {
              onStop();
              ref.current?.focus(); // the button goes away: the box keeps the focus
            }}
            title="Stop (Esc)"
            data-testid="stop-button"
          >
            <span className="stop-icon" aria-hidden="true" /> Stop
          </button>
        )}
        <button type="submit" className="btn btn-primary" disabled={!length || over} data-testid="send-button">
          Send
        </button>
      </div>
      <div className="composer-footer">
        <p className="composer-hint muted">
          Enter to send · Shift+Enter for a new line{sending ? " · Esc stops the answer" : ""}
        </p>
        {showCount && (
          <p id="composer-count" className={`char-count${over ? " over" : ""}`} data-testid="char-count">
            {length.toLocaleString("en")} / {maxChars.toLocaleString("en")}
            {over ? ` — ${(length - maxChars).toLocaleString("en")} too many; shorten it to send` : " characters"}
          </p>
        )}
        {options}
      </div>
    </form>
  );
}
