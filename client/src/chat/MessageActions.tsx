import { useEffect, useRef, useState } from "react";
import type { Rating } from "../api/feedback";
import type { ChatMessage } from "./state";

const THUMBS = {
  up: "M14 9V5a3 3 0 0 0-3-3l-4 9v11h11.28a2 2 0 0 0 2-1.7l1.38-9a2 2 0 0 0-2-2.3zM7 22H4a2 2 0 0 1-2-2v-7a2 2 0 0 1 2-2h3",
  down: "M10 15v4a3 3 0 0 0 3 3l4-9V2H5.72a2 2 0 0 0-2 1.7l-1.38 9a2 2 0 0 0 2 2.3zM17 2h2.67A2.31 2.31 0 0 1 22 4v7a2.31 2.31 0 0 1-2.33 2H17",
};

/** A thumb (an SVG: emoji need a font the system may not have). */
function Thumb({ dir }: { dir: Rating }) {
  return (
    <svg width={16} height={16} viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth={2} strokeLinecap="round" strokeLinejoin="round" aria-hidden="true" focusable="false">
      <path d={THUMBS[dir]} />
    </svg>
  );
}

/** What a message's buttons do (ChatPage wires them to useChat). */
export interface MessageHandlers {
  onRegenerate?: (id: string) => void;
  onContinue?: (id: string) => void;
  onEdit?: (id: string, text: string) => Promise<boolean> | void;
  onBranch?: (id: string) => void;
  onRate?: (id: string, rating: Rating | null, note: string | null) => Promise<void>;
  /** Answer this question again over all the user's documents (the thread's scope cleared). */
  onWiden?: (id: string) => void;
}

/** Copy text to the clipboard; the button says "Copied" for a moment. */
export function useCopy(): [boolean, (text: string) => void] {
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    if (!copied) return;
    const t = window.setTimeout(() => setCopied(false), 1500);
    return () => window.clearTimeout(t);
  }, [copied]);
  const copy = (text: string) => {
    void navigator.clipboard?.writeText(text).then(
      () => setCopied(true),
      () => undefined,
    );
  };
  return [copied, copy];
}

/** "< 2/3 >": the branches of a message (its siblings); switching shows that branch's answers. */
export function SiblingSwitcher({ message, disabled, onBranch }: { message: ChatMessage; disabled: boolean; onBranch?: (id: string) => void }) {
  const siblings = message.siblings ?? [];
  const at = message.id ? siblings.indexOf(message.id) : -1;
  if (siblings.length < 2 || at === -1 || !onBranch) return null;
  const what = message.role === "user" ? "version of this question" : "answer";
  return (
    <span className="siblings" role="group" aria-label={`${what} ${at + 1} of ${siblings.length}`} data-testid="sibling-switcher">
      <button
        type="button"
        className="icon-button"
        aria-label={`Previous ${what}`}
        disabled={disabled || at === 0}
        onClick={() => onBranch(siblings[at - 1])}
        data-testid="sibling-prev"
      >
        ‹
      </button>
      <span className="small" data-testid="sibling-position">
        {at + 1}/{siblings.length}
      </span>
      <button
        type="button"
        className="icon-button"
        aria-label={`Next ${what}`}
        disabled={disabled || at === siblings.length - 1}
        onClick={() => onBranch(siblings[at + 1])}
        data-testid="sibling-next"
      >
        ›
      </button>
    </span>
  );
}

interface Props extends MessageHandlers {
  message: ChatMessage;
  /** An answer is being generated in this thread: actions that start one wait. */
  running: boolean;
  onStartEdit?: () => void;
}

export function MessageActions({ message, running, onRegenerate, onContinue, onBranch, onRate, onStartEdit }: Props) {
  const [copied, copy] = useCopy();
  const id = message.id;
  const assistant = message.role === "assistant";
  const unfinished = message.status === "incomplete" || message.status === "error";
  if (message.status === "streaming") return null;
  return (
    <div className="msg-actions" data-testid="message-actions">
      <SiblingSwitcher message={message} disabled={running} onBranch={onBranch} />
      {message.content && (
        <button type="button" className="btn btn-small btn-ghost" onClick={() => copy(message.content)} data-testid="copy-message">
          {copied ? "Copied" : "Copy"}
        </button>
      )}
      {!assistant && id && onStartEdit && (
        <button type="button" className="btn btn-small btn-ghost" disabled={running} onClick={onStartEdit} data-testid="edit-message">
          Edit
        </button>
      )}
      {assistant && id && onRegenerate && (
        <button type="button" className="btn btn-small btn-ghost" disabled={running} onClick={() => onRegenerate(id)} data-testid="regenerate">
          Regenerate
        </button>
      )}
      {assistant && id && unfinished && message.content && onContinue && (
        <button type="button" className="btn btn-small btn-ghost" disabled={running} onClick={() => onContinue(id)} data-testid="continue">
          Continue
        </button>
      )}
      {assistant && id && onRate && <FeedbackButtons message={message} onRate={onRate} />}
    </div>
  );
}

function FeedbackButtons({ message, onRate }: { message: ChatMessage; onRate: NonNullable<MessageHandlers["onRate"]> }) {
  const id = message.id as string;
  const current = message.feedback?.rating ?? null;
  const [noteOpen, setNoteOpen] = useState(false);
  const [note, setNote] = useState(message.feedback?.note ?? "");
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (noteOpen) input.current?.focus();
  }, [noteOpen]);

  const rate = async (rating: Rating) => {
    const next = current === rating ? null : rating;
    setError(null);
    setSaved(false);
    try {
      await onRate(id, next, next ? note || null : null);
      setNoteOpen(next !== null);
    } catch (e) {
      setError(`Couldn't save: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  const saveNote = async () => {
    try {
      await onRate(id, current, note.trim() || null);
      setSaved(true);
      setNoteOpen(false);
    } catch (e) {
      setError(`Couldn't save: ${e instanceof Error ? e.message : String(e)}`);
    }
  };

  return (
    <span className="feedback" data-testid="feedback" data-rating={current ?? ""}>
      <button type="button" className="icon-button" aria-label="Good answer" aria-pressed={current === "up"} onClick={() => void rate("up")} data-testid="thumbs-up">
        <Thumb dir="up" />
      </button>
      <button type="button" className="icon-button" aria-label="Bad answer" aria-pressed={current === "down"} onClick={() => void rate("down")} data-testid="thumbs-down">
        <Thumb dir="down" />
      </button>
      {noteOpen && (
        <span className="feedback-note">
          <label className="sr-only" htmlFor={`note-${id}`}>
            Note (optional)
          </label>
          <input
            id={`note-${id}`}
            ref={input}
            value={note}
            maxLength={2000}
            placeholder="What was good or wrong? (optional)"
            onChange={(e) => setNote(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter") void saveNote();
              if (e.key === "Escape") {
                e.stopPropagation();
                setNoteOpen(false);
              }
            }}
            data-testid="feedback-note"
          />
          <button type="button" className="btn btn-small" onClick={() => void saveNote()} data-testid="feedback-save">
            Save
          </button>
        </span>
      )}
      {saved && (
        <span className="small muted" role="status">
          Thanks, saved.
        </span>
      )}
      {error && (
        <span className="small error-text" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}

/** Edit a question in place; sending makes a new branch from it. */
export function EditQuestion({ message, onDone, onEdit }: { message: ChatMessage; onDone: () => void; onEdit: NonNullable<MessageHandlers["onEdit"]> }) {
  const [text, setText] = useState(message.content);
  const ref = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    ref.current?.focus();
  }, []);
  const save = async () => {
    if (!text.trim() || !message.id) return;
    const ok = await onEdit(message.id, text.trim());
    if (ok !== false) onDone();
  };
  return (
    <div className="edit-question" data-testid="edit-question">
      <label className="sr-only" htmlFor={`edit-${message.key}`}>
        Edit the question
      </label>
      <textarea
        id={`edit-${message.key}`}
        ref={ref}
        value={text}
        rows={3}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            e.stopPropagation();
            onDone();
          }
          if (e.key === "Enter" && !e.shiftKey) {
            e.preventDefault();
            void save();
          }
        }}
        data-testid="edit-input"
      />
      <div className="edit-actions">
        <button type="button" className="btn btn-small" onClick={onDone} data-testid="edit-cancel">
          Cancel
        </button>
        <button type="button" className="btn btn-small btn-primary" disabled={!text.trim()} onClick={() => void save()} data-testid="edit-send">
          Send
        </button>
      </div>
    </div>
  );
}
