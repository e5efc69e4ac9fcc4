import { useState } from "react";
import { errorMessage } from "../api/client";
import type { Document } from "../api/types";
import { plural } from "../lib/format";
import { collectionsApi } from "../api/collections";
import { useCollections } from "../collections/CollectionsContext";
import { documentsApi } from "../api/documents";
import { Link } from "../lib/router";

/** The server compares 2 to 4 whole documents (MAX_TASK_DOCUMENTS). */
const MAX_COMPARE = 4;

/** Run `one` for every id, four at a time; how many worked and why the others did not. */
async function each(ids: string[], one: (id: string) => Promise<unknown>): Promise<{ ok: number; errors: string[] }> {
  let ok = 0;
  const errors: string[] = [];
  const queue = [...ids];
  const worker = async () => {
    for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
      try {
        await one(id);
        ok += 1;
      } catch (e) {
        errors.push(errorMessage(e));
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return { ok, errors };
}

interface Props {
  /** The documents on the visible page. */
  docs: Document[];
  selected: Set<string>;
  onSelect: (ids: Set<string>) => void;
  /** After an action: what happened, in words, and the list to refetch. */
  onDone: (message: string, failed: boolean) => void;
}

/** Select all on the page, and Delete / Retry the selected documents in one request each. */
export function BulkActions({ docs, selected, onSelect, onDone }: Props) {
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const ids = docs.map((d) => d.id).filter((id) => selected.has(id));
  const all = docs.length > 0 && ids.length === docs.length;
  const failedCount = docs.filter((d) => selected.has(d.id) && d.status === "failed").length;
  const { collections } = useCollections();
  const writable = (collections ?? []).filter((c) => c.role !== "read");
  const [target, setTarget] = useState("");

  /** Add to / remove from a collection, or chunk again: one request per document. */
  const runEach = async (what: "add" | "remove" | "rechunk") => {
    setBusy(true);
    const name = writable.find((c) => c.id === target)?.name ?? "";
    const one =
      what === "add"
        ? (id: string) => collectionsApi.addDocument(target, id)
        : what === "remove"
          ? (id: string) => collectionsApi.removeDocument(target, id)
          : (id: string) => documentsApi.rechunk(id, "auto", null);
    const { ok, errors } = await each(ids, one);
    const verb = what === "add" ? `Added to ${name}:` : what === "remove" ? `Removed from ${name}:` : "Queued to chunk again:";
    const reasons = [...new Set(errors)].join("; ");
    onDone(`${verb} ${plural(ok, "document")}.${errors.length ? ` ${errors.length} not: ${reasons}.` : ""}`, errors.length > 0);
    setBusy(false);
  };

  const run = async (action: "delete" | "retry") => {
    setBusy(true);
    // Retry only what can be retried: the failed ones (the server would refuse the others as a conflict).
    const targets = action === "retry" ? ids.filter((id) => docs.some((d) => d.id === id && d.status === "failed")) : ids;
    try {
      const results = await documentsApi.bulk(action, targets);
      const ok = results.filter((r) => r.ok).length;
      const bad = results.filter((r) => !r.ok);
      const verb = action === "delete" ? "Deleted" : "Queued again";
      const reasons = [...new Set(bad.map((r) => r.error ?? "failed"))].join("; ");
      onDone(`${verb} ${plural(ok, "document")}.${bad.length ? ` ${bad.length} not: ${reasons}.` : ""}`, bad.length > 0);
      onSelect(new Set());
    } catch (e) {
      onDone(`${action === "delete" ? "Delete" : "Retry"} failed: ${errorMessage(e)}`, true);
    } finally {
      setBusy(false);
      setConfirm(false);
    }
  };

  return (
    <div className="docs-bulk" data-testid="documents-bulk">
      <label className="docs-select-all">
        <input
          type="checkbox"
          checked={all}
          ref={(el) => {
            if (el) el.indeterminate = ids.length > 0 && !all;
          }}
          onChange={(e) => onSelect(e.target.checked ? new Set(docs.map((d) => d.id)) : new Set())}
          data-testid="documents-select-all"
        />
        Select all on this page
      </label>
      {ids.length > 0 && (
        <>
          <span className="muted small" data-testid="documents-selected" aria-live="polite">
            {ids.length} selected
          </span>
          {confirm ? (
            <>
              <button type="button" className="btn btn-danger btn-small" disabled={busy} onClick={() => void run("delete")} data-testid="bulk-delete-confirm">
                Delete {plural(ids.length, "document")}
              </button>
              <button type="button" className="btn btn-small" onClick={() => setConfirm(false)} autoFocus data-testid="bulk-delete-cancel">
                Cancel
              </button>
            </>
          ) : (
            <>
              <button type="button" className="btn btn-small" disabled={busy} onClick={() => setConfirm(true)} data-testid="bulk-delete">
                Delete…
              </button>
              <button
                type="button"
                className="btn btn-small"
                disabled={busy || failedCount === 0}
                title={failedCount === 0 ? "Only failed documents can be retried" : undefined}
                onClick={() => void run("retry")}
                data-testid="bulk-retry"
              >
                Retry{failedCount ? ` ${failedCount} failed` : ""}
              </button>
              <button type="button" className="btn btn-small" disabled={busy} onClick={() => void runEach("rechunk")} data-testid="bulk-rechunk">
                Re-chunk
              </button>
              {ids.length >= 2 && ids.length <= MAX_COMPARE && (
                <Link
                  className="btn btn-small"
                  to={`/chat?documents=${ids.map(encodeURIComponent).join(",")}&task=compare`}
                  title="Read the whole of each document and compare them, citing each part"
                  data-testid="bulk-compare"
                >
                  Compare {ids.length}
                </Link>
              )}
              {writable.length > 0 && (
                <span className="docs-bulk-collection">
                  <select
                    className="input input-small"
                    value={target}
                    onChange={(e) => setTarget(e.target.value)}
                    aria-label="Collection for the selected documents"
                    data-testid="bulk-collection"
                  >
                    <option value="">Collection…</option>
                    {writable.map((c) => (
                      <option key={c.id} value={c.id}>
                        {c.name}
                      </option>
                    ))}
                  </select>
                  <button type="button" className="btn btn-small" disabled={busy || !target} onClick={() => void runEach("add")} data-testid="bulk-collection-add">
                    Add
                  </button>
                  <button type="button" className="btn btn-small" disabled={busy || !target} onClick={() => void runEach("remove")} data-testid="bulk-collection-remove">
                    Remove
                  </button>
                </span>
              )}
            </>
          )}
        </>
      )}
    </div>
  );
}
