import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent, type ReactNode } from "react";
import { readDraft, writeDraft } from "../lib/drafts";

interface Props {
  sending: boolean;
  onSend: (text: string) => void;
  onStop: () => void;
  autoFocus?: boolean;
  /** sessionStorage key: what is typed is kept there (see lib/drafts) and restored on mount. */
  draftKey?: string;
  /** Extra controls shown beside the hint (e.g. the collection filter). */
  options?: ReactNode;
}

export function Composer({ sending, onSend, onStop, autoFocus, draftKey, options }: Props) {
  const [text, setText] = useState(() => (draftKey ? readDraft(draftKey) : ""));
  const ref = useRef<HTMLTextAreaElement>(null);
  const wasSending = useRef(false);
  const shownKey = useRef(draftKey);

  // Another thread: show its draft.
  useEffect(() => {
    if (shownKey.current === draftKey) return;
    shownKey.current = draftKey;
    setText(draftKey ? readDraft(draftKey) : "");
  }, [draftKey]);

  const edit = (value: string) => {
    setText(value);
    if (draftKey) writeDraft(draftKey, value);
  };

  // Give focus back to the textarea when an answer finishes.
  useEffect(() => {
    if (!sending && (wasSending.current || autoFocus)) ref.current?.focus();
    wasSending.current = sending;
  }, [sending, autoFocus]);

  // Grow with content up to a limit.
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = `${Math.min(el.scrollHeight, 240)}px`;
  }, [text]);

  const submit = () => {
    const value = text.trim();
    if (!value || sending) return;
    onSend(value);
    setText("");
    if (draftKey) writeDraft(draftKey, "");
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      submit();
    }
  };

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    submit();
  };

  return (
    <form className="composer" onSubmit={onSubmit} data-testid="composer">
      <label htmlFor="composer-input" className="sr-only">
        Message
      </label>
      <textarea
        id="composer-input"
        ref={ref}
        rows={1}
        value={text}
        placeholder={sending ? "Answering…" : "Ask about your documents…"}
        onChange={(e) => edit(e.target.value)}
        onKeyDown={onKeyDown}
        disabled={sending}
        data-testid="composer-input"
      />
      <div className="composer-actions">
        {sending && (
          <button type="button" className="btn btn-stop" onClick={onStop} data-testid="stop-button">
            <span className="stop-icon" aria-hidden="true" /> Stop
          </button>
        )}
        <button
          type="submit"
          className="btn btn-primary"
          disabled={sending || !text.trim()}
          data-testid="send-button"
        >
          Send
        </button>
      </div>
      <div className="composer-footer">
        <p className="composer-hint muted">Enter to send · Shift+Enter for a new line</p>
        {options}
      </div>
    </form>
  );
}
