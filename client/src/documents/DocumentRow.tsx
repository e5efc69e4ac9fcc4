import { useState } from "react";
import type { Document } from "../api/types";
import { Icon } from "../components/Icon";
import { RenameTitle } from "./RenameTitle";
import { formatBytes, formatDate, formatEta, plural } from "../lib/format";
import { Link } from "../lib/router";
import { MetadataToggle } from "./MetadataEditor";
import { RechunkAction } from "./RechunkAction";
import { isActive } from "./useDocuments";

const STATUS_TEXT = { queued: "Queued", processing: "Processing", ready: "Ready", failed: "Failed" } as const;

/** What an active document is doing, in words: the stage, the count, the time left, a retry's reason. */
export function stageText(doc: Document, now = Date.now()): string | null {
  const attempt = doc.attempts > 1 ? ` (attempt ${doc.attempts})` : "";
  switch (doc.stage) {
    case "queued":
      return doc.attempts > 0 ? `Queued to try again${attempt}` : "Queued";
    case "waiting": {
      const wait = doc.retry_at ? Math.max(0, Math.round((Date.parse(doc.retry_at) - now) / 1000)) : null;
      return `Waiting to retry${wait != null ? ` in ${wait} s` : ""}${doc.error ? ` — last error: ${doc.error}` : ""}`;
    }
    case "reading":
      // a long read says what it is doing: "OCR page 3 of 12"
      return doc.progress_note ? `${doc.progress_note}${attempt}…` : `Reading the file${attempt}…`;
    case "embedding": {
      const eta = formatEta(doc.eta_s);
      return `Embedding ${doc.chunks_done} of ${doc.chunks_total ?? "?"} chunks${eta ? ` · ${eta} left` : ""}${attempt}`;
    }
    default:
      return null;
  }
}

interface Props {
  doc: Document;
  onDelete: (id: string) => Promise<void>;
  /** Queue a failed document again (POST /api/documents/{id}/retry). */
  onRetry?: (id: string) => Promise<void>;
  /** Stop a queued or processing document (POST /api/documents/{id}/cancel). */
  onCancel?: (id: string) => Promise<void>;
  /** Names of the collections the document is in (those I can see). */
  collections?: string[];
  /** Multi-select (the page's bulk actions): a checkbox when given. */
  selected?: boolean;
  onSelect?: (id: string, selected: boolean) => void;
  /** After a rename: the updated document (the Rename button shows only with it). */
  onChanged?: (doc: Document) => void;
}

/** A server message with `code` in backticks (a command to run): the code as code, never the backticks. */
export function withCode(text: string) {
  return text.split(/`([^`]+)`/g).map((part, i) => (i % 2 ? <code key={i}>{part}</code> : part));
}

export function DocumentRow({ doc, onDelete, onRetry, onCancel, onChanged, collections = [], selected, onSelect }: Props) {
  const [confirm, setConfirm] = useState(false);
  const [renaming, setRenaming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [acting, setActing] = useState(false);
  const act = async (action?: (id: string) => Promise<void>) => {
    if (!action) return;
    setActing(true);
    try {
      await action(doc.id);
    } finally {
      setActing(false);
    }
  };
  const active = isActive(doc);
  const total = doc.chunks_total;
  const pct = total ? Math.min(100, Math.round((doc.chunks_done / total) * 100)) : null;
  // Only the owner may delete; shared documents show who owns them.
  const mine = !doc.access || doc.access === "owner";

  return (
    <li
      className={`doc-row${onSelect ? " selectable" : ""}${selected ? " selected" : ""}`}
      data-testid="document-row"
      data-status={doc.status}
      data-document-id={doc.id}
    >
      {onSelect && (
        <input
          type="checkbox"
          className="doc-select"
          checked={!!selected}
          onChange={(e) => onSelect(doc.id, e.target.checked)}
          aria-label={`Select ${doc.title || doc.filename}`}
          data-testid="document-select"
        />
      )}
      <div className="doc-icon" aria-hidden="true">
        <Icon name="file" size={20} />
      </div>
      <div className="doc-body">
        <div className="doc-title">
          {renaming ? (
            <RenameTitle
              doc={doc}
              onDone={(updated) => {
                setRenaming(false);
                if (updated) onChanged?.(updated);
              }}
            />
          ) : doc.status === "ready" ? (
            <Link to={`/documents/${encodeURIComponent(doc.id)}`} className="doc-open" data-testid="document-title">
              {doc.title || doc.filename}
            </Link>
          ) : (
            <span data-testid="document-title">{doc.title || doc.filename}</span>
          )}
          {!mine && (
            <span className="badge badge-shared" data-testid="doc-access" data-access={doc.access}>
              Shared · {doc.access}
            </span>
          )}
        </div>
        <div className="doc-meta muted small">
          {doc.title && doc.title !== doc.filename && <span>{doc.filename}</span>}
          <span>{formatBytes(doc.byte_size)}</span>
          {doc.page_count != null && <span data-testid="document-pages">{plural(doc.page_count, "page")}</span>}
          {doc.status === "ready" && <span data-testid="document-chunks">{plural(total ?? doc.chunks_done, "chunk")}</span>}
          {doc.status === "ready" && doc.text_search_config && doc.text_search_config !== "english" && <span data-testid="document-language" title="keyword search analyses it as this language">{doc.text_search_config}</span>}
          <span>{formatDate(doc.created_at)}</span>
          {!mine && doc.owner && <span data-testid="doc-owner">Owner: {doc.owner.username}</span>}
          {collections.length > 0 && (
            <span data-testid="doc-collections">
              {collections.length === 1 ? "Collection" : "Collections"}: {collections.join(", ")}
            </span>
          )}
        </div>
        {active && (
          <p className="doc-stage muted small" data-testid="document-stage" data-stage={doc.stage}>
            {stageText(doc)}
          </p>
        )}
        {active && (
          <div
            className={`progress${pct == null ? " indeterminate" : ""}`}
            role="progressbar"
            aria-label={`Ingesting ${doc.filename}`}
            aria-valuemin={0}
            aria-valuemax={100}
            aria-valuenow={pct ?? undefined}
            data-testid="document-progress"
          >
            <span style={pct == null ? undefined : { width: `${pct}%` }} />
          </div>
        )}
        {doc.status === "failed" && (
          <p className="doc-error" data-testid="document-error">
            {doc.error ? withCode(doc.error) : "Ingestion failed."}
          </p>
        )}
        <MetadataToggle doc={doc} />
      </div>
      <span className={`status status-${doc.status}`} data-testid="document-status">
        {STATUS_TEXT[doc.status] ?? doc.status}
        {active && pct != null ? ` ${pct}%` : ""}
      </span>
      <div className="doc-actions">
        {onChanged && !renaming && !confirm && doc.access !== "read" && (
          <button
            type="button"
            className="btn btn-small btn-ghost"
            aria-label={`Rename ${doc.title || doc.filename}`}
            onClick={() => setRenaming(true)}
            data-testid="document-rename"
          >
            Rename
          </button>
        )}
        {mine && !confirm && doc.status === "failed" && onRetry && (
          <button
            type="button"
            className="btn btn-small"
            disabled={acting}
            aria-label={`Retry ${doc.filename}`}
            onClick={() => void act(onRetry)}
            data-testid="document-retry"
          >
            Retry
          </button>
        )}
        {mine && !confirm && active && onCancel && (
          <button
            type="button"
            className="btn btn-small"
            disabled={acting}
            aria-label={`Cancel ingesting ${doc.filename}`}
            onClick={() => void act(onCancel)}
            data-testid="document-stop"
          >
            Cancel
          </button>
        )}
        {!confirm && doc.status === "ready" && (
          <Link
            to={`/chat?document=${encodeURIComponent(doc.id)}&task=summarize`}
            className="btn btn-small btn-ghost"
            aria-label={`Summarise ${doc.title || doc.filename}`}
            data-testid="document-summarize"
          >
            Summarise
          </Link>
        )}
        {!confirm && <RechunkAction doc={doc} />}
        {!mine ? null : confirm ? (
          <>
            <button
              type="button"
              className="btn btn-danger btn-small"
              disabled={busy}
              data-testid="document-delete-confirm"
              onClick={async () => {
                setBusy(true);
                try {
                  await onDelete(doc.id);
                } finally {
                  setBusy(false);
                  setConfirm(false);
                }
              }}
            >
              Delete
            </button>
            <button type="button" className="btn btn-small" onClick={() => setConfirm(false)} autoFocus data-testid="document-delete-cancel">
              Cancel
            </button>
          </>
        ) : (
          <button
            type="button"
            className="icon-button"
            aria-label={`Delete ${doc.filename}`}
            title="Delete"
            onClick={() => setConfirm(true)}
            data-testid="document-delete"
          >
            <Icon name="trash" />
          </button>
        )}
      </div>
    </li>
  );
}
