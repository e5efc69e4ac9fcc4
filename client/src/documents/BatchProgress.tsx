import type { Document } from "../api/types";
import { formatEta, plural } from "../lib/format";

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
    if (!d || d.status === "ready") {
      ready += 1; // gone from the list (deleted) counts as finished
      ingested += 1;
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

export function BatchProgress({ batch, docs }: { batch: Batch; docs: Document[] | null }) {
  const { fraction, ready, failed, active, etaS } = summarize(batch, docs);
  const pct = Math.round(fraction * 100);
  const uploading = batch.sent < batch.files;
  const eta = formatEta(etaS);
  const parts = [
    uploading ? `Uploading ${batch.sent} of ${batch.files} files` : `${plural(batch.files, "file")} uploaded`,
    `${ready} of ${batch.ids.length} ready`,
    failed ? `${failed} failed` : null,
    !uploading && active ? `${active} in progress` : null,
    eta && pct < 100 ? `${eta} left` : null,
  ].filter(Boolean);
  return (
    <div className="batch-progress" data-testid="batch-progress" data-done={pct === 100 ? "true" : "false"}>
      <p className="small" aria-live="polite" data-testid="batch-progress-text">
        {pct === 100 ? `Done: ${parts.slice(1).join(" · ")}` : parts.join(" · ")}
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
