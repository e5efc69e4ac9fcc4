import { useEffect, useMemo, useState } from "react";
import type { Document } from "../api/types";
import { formatEta, plural } from "../lib/format";
import { documentsApi } from "../api/documents";

/** One upload of several files, followed from the first byte sent to the last document ready. */
export interface Batch {
  /** Files chosen. */
  files: number;
  /** Files whose upload request has answered. */
  sent: number;
  /** Documents the upload queued (their ids), as the answers come in. */
  ids: string[];
  /** Files the server refused or skipped (rejected, duplicate): finished as far as this batch goes. */
  skipped: number;
  /** Of those, files already uploaded before (duplicates): nothing new to process. */
  duplicates?: number;
  /** performance.now() when the upload started. */
  started: number;
}

interface Summary {
  fraction: number;
  ready: number;
  failed: number;
  active: number;
  etaS: number | null;
}

/** Each file counts for one share: sent and ingested; a processing document by its chunks done. */
export function summarize(batch: Batch, docs: Document[] | null, now = performance.now()): Summary {
  const byId = new Map((docs ?? []).map((d) => [d.id, d]));
  let ready = 0;
  let failed = 0;
  let active = 0;
  let ingested = 0;
  for (const id of batch.ids) {
    const d = byId.get(id);
    if (d?.status === "ready") {
      ready += 1; // only a document seen ready counts as done (one not seen yet is still in progress)
      ingested += 1;
    } else if (!d) {
      active += 1;
    } else if (d.status === "failed") {
      failed += 1;
      ingested += 1;
    } else {
      active += 1;
      if (d.status === "processing" && d.chunks_total) ingested += Math.min(1, d.chunks_done / d.chunks_total);
    }
  }
  // A file may hold many documents (a .jsonl corpus): ingestion is measured over the documents known so far,
  // scaled by the share of files sent; sending is a tenth of the work, ingesting the rest.
  const sent = batch.sent / Math.max(batch.files, 1);
  const units = batch.ids.length + batch.skipped;
  const fraction = Math.min(1, sent * (0.1 + 0.9 * (units ? (ingested + batch.skipped) / units : 0)));
  const elapsed = (now - batch.started) / 1000;
  const etaS = fraction > 0.02 && fraction < 1 && elapsed > 1 ? (elapsed * (1 - fraction)) / fraction : null;
  return { fraction, ready, failed, active, etaS };
}

const BATCH_POLL_MS = 1000;
const final = (d: Document | undefined) => d?.status === "ready" || d?.status === "failed";

/**
 * The batch's documents as last seen: those on the visible page, and, while some are not ready or failed, the
 * newest ready, failed and processing documents fetched every second (a big batch runs past the page shown).
 */
export function useBatchDocuments(batch: Batch | null, pageDocs: Document[] | null): Document[] {
  const [seen, setSeen] = useState<Map<string, Document>>(() => new Map());
  const ids = batch?.ids;
  const merge = (docs: Document[]) =>
    setSeen((prev) => {
      const wanted = new Set(ids ?? []);
      const next = new Map(prev);
      let changed = false;
      for (const d of docs)
        if (wanted.has(d.id) && next.get(d.id) !== d) {
          next.set(d.id, d);
          changed = true;
        }
      return changed ? next : prev;
    });
  useEffect(() => merge(pageDocs ?? []), [pageDocs, ids]);
  const pending = !!ids?.some((id) => !final(seen.get(id)));
  useEffect(() => {
    if (!pending) return;
    let stopped = false;
    let timer: number;
    const tick = async () => {
      try {
        const pages = await Promise.all(
          (["ready", "failed", "processing"] as const).map((status) => documentsApi.list({ status, limit: 200 })),
        );
        if (!stopped) merge(pages.flatMap((p) => p.documents));
      } catch {
        /* the next tick tries again */
      }
      if (!stopped) timer = window.setTimeout(tick, BATCH_POLL_MS);
    };
    timer = window.setTimeout(tick, BATCH_POLL_MS);
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [pending, ids]);
  return useMemo(() => [...seen.values()], [seen]);
}

export function BatchProgress({ batch, docs }: { batch: Batch; docs: Document[] | null }) {
  const { fraction, ready, failed, active, etaS } = summarize(batch, docs);
  const pct = Math.round(fraction * 100);
  const uploading = batch.sent < batch.files;
  const eta = formatEta(etaS);
  const duplicates = batch.duplicates ?? 0;
  const rejected = batch.skipped - duplicates;
  const queued = batch.ids.length;
  const parts = [
    uploading ? `Uploading ${batch.sent} of ${batch.files} files` : `${plural(batch.files, "file")} uploaded`,
    // "0 of 0 ready" says nothing: with no new document, say what happened to the files instead
    queued || uploading ? `${ready} of ${queued} ready` : null,
    failed ? `${failed} failed` : null,
    !uploading && active ? `${active} in progress` : null,
    duplicates ? `${duplicates} already uploaded` : null,
    rejected > 0 ? `${rejected} rejected` : null,
    eta && pct < 100 ? `${eta} left` : null,
  ].filter(Boolean);
  const nothingNew = !uploading && queued === 0;
  const text = nothingNew
    ? duplicates === batch.files
      ? `Already uploaded: ${batch.files === 1 ? "this file is" : `all ${batch.files} files are`} in your documents, nothing new to process.`
      : `Nothing new to process: ${parts.slice(1).join(" · ")}`
    : pct === 100
      ? `Done: ${parts.slice(1).join(" · ")}`
      : parts.join(" · ");
  return (
    <div className="batch-progress" data-testid="batch-progress" data-done={pct === 100 ? "true" : "false"}>
      <p className="small" aria-live="polite" data-testid="batch-progress-text">
        {text}
      </p>
      <div
        className="progress"
        role="progressbar"
        aria-label="Upload and ingestion of the chosen files"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={pct}
      >
        <span style={{ width: `${pct}%` }} />
      </div>
    </div>
  );
}
