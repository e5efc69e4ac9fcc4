import { useEffect, useState } from "react";
import { errorMessage } from "../api/client";
import type { BulkResults, Document } from "../api/types";
import { plural } from "../lib/format";
import { useCollections } from "../collections/CollectionsContext";
import { documentsApi, type MatchingFilter } from "../api/documents";
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

/** "Added to Team: 3 documents. 1 not: not found." from the server's answer. */
export function bulkSummary(verb: string, out: BulkResults, noun = "document"): { text: string; failed: boolean } {
  const bad = out.results.filter((r) => !r.ok);
  const notDone = out.matched - out.done;
  const reasons = [...new Set(bad.map((r) => r.error ?? "failed"))].join("; ");
  const text = `${verb} ${plural(out.done, noun)}.${notDone ? ` ${notDone} not: ${reasons || "failed"}.` : ""}`;
  return { text, failed: notDone > 0 };
}

interface Props {
  /** The documents on the visible page. */
  docs: Document[];
  selected: Set<string>;
  onSelect: (ids: Set<string>) => void;
  /** After an action: what happened, in words, and the list to refetch. */
  onDone: (message: string, failed: boolean) => void;
  /** How many documents match the list's filters (all pages), and those filters. */
  total?: number | null;
  filter?: MatchingFilter;
}

/**
 * Select all on the page, or all N matching across pages (the server is sent the filter, not the ids); Delete /
 * Retry / add to or remove from a collection in one request; Re-chunk and Compare the documents of the page.
 */
export function BulkActions({ docs, selected, onSelect, onDone, total = null, filter = {} }: Props) {
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const ids = docs.map((d) => d.id).filter((id) => selected.has(id));
  const all = docs.length > 0 && ids.length === docs.length;
  const [matching, setMatching] = useState(false);
  const filterKey = JSON.stringify(filter);
  useEffect(() => setMatching(false), [filterKey]);
  useEffect(() => {
    if (!all) setMatching(false);
  }, [all]);
  // "All N matching": only when there is more than this page to take.
  const more = total != null && total > docs.length;
  const everything = matching && all && more;
  const count = everything ? (total ?? 0) : ids.length;
  const failedCount = docs.filter((d) => selected.has(d.id) && d.status === "failed").length;
  const { collections } = useCollections();
  const writable = (collections ?? []).filter((c) => c.role !== "read");
  const [target, setTarget] = useState("");
  // Retry takes failed documents only: across pages, the filter narrowed to them (none when it asks for another).
  const retryFilter = filter.status && filter.status !== "failed" ? null : { ...filter, status: "failed" as const };
  const canRetry = everything ? retryFilter != null : failedCount > 0;

  const finishClear = () => {
    onSelect(new Set());
    setMatching(false);
  };

  const finish = (next: { text: string; failed: boolean }) => {
    onDone(next.text, next.failed);
    onSelect(new Set());
    setMatching(false);
  };

  /** Add to / remove from a collection: one call (the ids, or the filter). */
  const runCollection = async (add: boolean) => {
    setBusy(true);
    const name = writable.find((c) => c.id === target)?.name ?? "";
    try {
      const out = await documentsApi.bulk(
        add ? "add_to_collection" : "remove_from_collection",
        everything ? { filter } : ids,
        target,
      );
      finish(bulkSummary(add ? `Added to ${name}:` : `Removed from ${name}:`, out));
    } catch (e) {
      onDone(`${add ? "Adding to" : "Removing from"} ${name} failed: ${errorMessage(e)}`, true);
    } finally {
      setBusy(false);
    }
  };

  /** Chunk again: one request per document of the page. */
  const rechunk = async () => {
    setBusy(true);
    const { ok, errors } = await each(ids, (id) => documentsApi.rechunk(id, "auto", null));
    const reasons = [...new Set(errors)].join("; ");
    onDone(`Queued to chunk again: ${plural(ok, "document")}.${errors.length ? ` ${errors.length} not: ${reasons}.` : ""}`, errors.length > 0);
    setBusy(false);
  };

  const run = async (action: "delete" | "retry") => {
    setBusy(true);
    // Retry only what can be retried: the failed ones (the server would refuse the others as a conflict).
    const failed = ids.filter((id) => docs.some((d) => d.id === id && d.status === "failed"));
    const targets = everything ? { filter: action === "retry" ? (retryFilter ?? filter) : filter } : action === "retry" ? failed : ids;
    try {
      const out = await documentsApi.bulk(action, targets);
      finish(bulkSummary(action === "delete" ? "Deleted" : "Queued again", out));
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
            {everything ? `All ${count} matching selected` : `${ids.length} selected`}
          </span>
          {all && more && !everything && (
            <button type="button" className="btn btn-small btn-ghost" onClick={() => setMatching(true)} data-testid="documents-select-matching">
              Select all {total} matching
            </button>
          )}
          {everything && (
            <button type="button" className="btn btn-small btn-ghost" onClick={() => finishClear()} data-testid="documents-select-clear">
              Clear selection
            </button>
          )}
          {confirm ? (
            <>
              <button type="button" className="btn btn-danger btn-small" disabled={busy} onClick={() => void run("delete")} data-testid="bulk-delete-confirm">
                Delete {everything ? `all ${plural(count, "matching document")}` : plural(ids.length, "document")}
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
                disabled={busy || !canRetry}
                title={canRetry ? undefined : "Only failed documents can be retried"}
                onClick={() => void run("retry")}
                data-testid="bulk-retry"
              >
                {everything ? "Retry the failed ones" : `Retry${failedCount ? ` ${failedCount} failed` : ""}`}
              </button>
              {!everything && (
                <button type="button" className="btn btn-small" disabled={busy} onClick={() => void rechunk()} data-testid="bulk-rechunk">
                  Re-chunk
                </button>
              )}
              {!everything && ids.length >= 2 && ids.length <= MAX_COMPARE && (
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
                  <button type="button" className="btn btn-small" disabled={busy || !target} onClick={() => void runCollection(true)} data-testid="bulk-collection-add">
                    Add
                  </button>
                  <button type="button" className="btn btn-small" disabled={busy || !target} onClick={() => void runCollection(false)} data-testid="bulk-collection-remove">
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
