import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from "react";

interface Props {
  sending: boolean;
  onSend: (text: string) => void;
  onStop: () => void;
  autoFocus?: boolean;
}

export function Composer({ sending, onSend, onStop, autoFocus }: Props) {
  const [text, setText] = useState("");
  const ref = useRef<HTMLTextAreaElement>(null);
  const wasSending = useRef(false);

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
        onChange={(e) => setText(e.target.value)}
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
      <p className="composer-hint muted">Enter to send · Shift+Enter for a new line</p>
    </form>
  );
}
