import { useState } from "react";
import { documentsApi } from "../api/documents";
import type { Document } from "../api/types";

type Value = string | string[];
/** The keys the server sets (where a document came from): shown, never edited. */
export const RESERVED_KEYS = ["source_path", "source_id", "source_url", "fetched_at"];

/**
 * "subject=Polity, subject=History; year=2024" → `{subject: ["Polity", "History"], year: "2024"}` (a key given
 * twice is a list); a string says what is wrong. Empty text: no metadata.
 */
export function parseMetaText(text: string): Record<string, Value> | string {
  const out: Record<string, string[]> = {};
  for (const part of text.split(/[,;\n]/)) {
    if (!part.trim()) continue;
    const eq = part.indexOf("=");
    const key = eq > 0 ? part.slice(0, eq).trim() : "";
    const value = eq > 0 ? part.slice(eq + 1).trim() : "";
    if (!key || !value) return `“${part.trim()}” is not key=value`;
    (out[key] ??= []).includes(value) || out[key].push(value);
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.length === 1 ? v[0] : v]));
}

/** The upload's form fields for metadata text (`{metadata: JSON}`), none when empty; a string when invalid. */
export function metadataField(text: string): Record<string, string> | string | undefined {
  const parsed = parseMetaText(text);
  if (typeof parsed === "string") return parsed;
  return Object.keys(parsed).length ? { metadata: JSON.stringify(parsed) } : undefined;
}

const show = (v: unknown) => (Array.isArray(v) ? v.join(", ") : String(v ?? ""));
const split = (text: string): Value => {
  const parts = [...new Set(text.split(",").map((s) => s.trim()).filter(Boolean))];
  return parts.length === 1 ? parts[0] : parts;
};

const STATUS_TEXT: Record<string, string> = {
  pending: "Metadata extraction waiting",
  running: "Extracting metadata…",
  done: "Metadata extracted",
  failed: "Metadata extraction failed",
};

interface Props {
  doc: Document;
  /** The updated document after a save or an extraction request. */
  onSaved?: (doc: Document) => void;
  onClose?: () => void;
}

/**
 * A document's metadata as key / value rows (a list as comma-separated values). Save sends a merge patch:
 * changed and new keys, and null for removed ones. The server's keys are shown read-only; the owner or a
 * collection writer may edit, and run the LLM extraction again.
 */
export function MetadataEditor({ doc, onSaved, onClose }: Props) {
  const meta = (doc.metadata ?? {}) as Record<string, unknown>;
  const editable = Object.entries(meta).filter(([k]) => !RESERVED_KEYS.includes(k));
  const fixed = Object.entries(meta).filter(([k]) => RESERVED_KEYS.includes(k));
  const [rows, setRows] = useState(() => editable.map(([k, v]) => ({ key: k, value: show(v) })));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const canEdit = !doc.access || doc.access !== "read";

  const save = async () => {
    const patch: Record<string, Value | null> = {};
    for (const { key, value } of rows) {
      if (!key.trim()) continue;
      if (!value.trim()) return setError(`“${key}” has no value (remove the row instead)`);
      patch[key.trim()] = split(value);
    }
    for (const [key] of editable) if (!(key in patch)) patch[key] = null;
    setBusy(true);
    setError(null);
    try {
      onSaved?.(await documentsApi.updateMetadata(doc.id, patch));
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };

  const extract = async () => {
    setBusy(true);
    setError(null);
    try {
      await documentsApi.extractMetadata(doc.id);
      onSaved?.({ ...doc, metadata_status: "pending", metadata_error: null });
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="metadata-editor" data-testid="metadata-editor">
      {doc.metadata_status && (
        <p className="muted small" data-testid="metadata-status" data-status={doc.metadata_status}>
          {STATUS_TEXT[doc.metadata_status] ?? doc.metadata_status}
          {doc.metadata_error ? `: ${doc.metadata_error}` : ""}
        </p>
      )}
      {rows.map((row, i) => (
        <div className="meta-row" key={i}>
          <input
            aria-label="Key"
            value={row.key}
            maxLength={64}
            disabled={!canEdit}
            onChange={(e) => setRows((r) => r.map((x, j) => (j === i ? { ...x, key: e.target.value } : x)))}
            data-testid="meta-key"
          />
          <input
            aria-label={`Values of ${row.key || "the new key"} (comma-separated)`}
            value={row.value}
            disabled={!canEdit}
            onChange={(e) => setRows((r) => r.map((x, j) => (j === i ? { ...x, value: e.target.value } : x)))}
            data-testid="meta-value"
          />
          {canEdit && (
            <button type="button" className="link-button" aria-label={`Remove ${row.key}`} onClick={() => setRows((r) => r.filter((_, j) => j !== i))}>
              ×
            </button>
          )}
        </div>
      ))}
      {fixed.map(([k, v]) => (
        <div className="meta-row muted small" key={k}>
          {k}: {show(v)}
        </div>
      ))}
      {error && (
        <p className="error-text small" role="alert" data-testid="metadata-error">
          {error}
        </p>
      )}
      <div className="meta-row">
        {canEdit && (
          <>
            <button type="button" className="btn" onClick={() => setRows((r) => [...r, { key: "", value: "" }])} disabled={busy}>
              Add field
            </button>
            <button type="button" className="btn btn-primary" onClick={save} disabled={busy} data-testid="metadata-save">
              Save
            </button>
            <button type="button" className="btn" onClick={extract} disabled={busy} data-testid="metadata-extract" title="Fill title, summary, topics… with the language model (your keys are kept)">
              Extract with AI
            </button>
          </>
        )}
        {onClose && (
          <button type="button" className="link-button" onClick={onClose}>
            Close
          </button>
        )}
      </div>
    </div>
  );
}

/** The row's "Metadata" link: how many fields and the extraction's state; opens the editor in place. */
export function MetadataToggle({ doc }: { doc: Document }) {
  const [open, setOpen] = useState(false);
  const [current, setCurrent] = useState<Document | null>(null);
  const shown = current && current.id === doc.id && current.updated_at >= doc.updated_at ? current : doc;
  const count = Object.keys(shown.metadata ?? {}).filter((k) => !RESERVED_KEYS.includes(k)).length;
  return (
    <div className="doc-metadata small">
      <button
        type="button"
        className="link-button"
        aria-expanded={open}
        onClick={() => setOpen((o) => !o)}
        data-testid="metadata-toggle"
      >
        Metadata{count ? ` (${count})` : ""}
      </button>
      {shown.metadata_status === "failed" && !open && (
        <span className="muted" data-testid="metadata-failed">
          {" "}
          · extraction failed
        </span>
      )}
      {open && <MetadataEditor key={shown.updated_at} doc={shown} onSaved={setCurrent} onClose={() => setOpen(false)} />}
    </div>
  );
}
