import { useCallback, useEffect, useRef, useState } from "react";
import type { Document } from "../api/types";
import { documentsApi, type ListParams } from "../api/documents";
import { DOCUMENTS_CHANGED } from "./RechunkAction";

export const DOCS_POLL_MS = 1000;

export const isActive = (d: Pick<Document, "status">) => d.status === "queued" || d.status === "processing";

/**
 * One page of the documents list (server-side search, filters, sort and paging), with the total. While a document
 * on the visible page is queued or processing, that page (and only it) is fetched again every second.
 */
export function useDocuments(params: ListParams = {}) {
  const [docs, setDocs] = useState<Document[] | null>(null);
  const [total, setTotal] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const alive = useRef(true);
  const key = JSON.stringify(params);
  // The latest request wins: an older answer (slow, or for the filters before the last keystroke) is dropped.
  const seq = useRef(0);

  const refresh = useCallback(async () => {
    const mine = ++seq.current;
    try {
      const page = await documentsApi.list(JSON.parse(key) as ListParams);
      if (!alive.current || mine !== seq.current) return;
      setDocs(page.documents);
      setTotal(page.total);
      setError(null);
    } catch (e) {
      if (alive.current && mine === seq.current)
        setError(`Couldn't load documents: ${e instanceof Error ? e.message : String(e)}`);
    }
  }, [key]);

  useEffect(() => {
    alive.current = true;
    void refresh();
    const changed = () => void refresh(); // a row queued a document again (Re-chunk…)
    window.addEventListener(DOCUMENTS_CHANGED, changed);
    return () => {
      alive.current = false;
      window.removeEventListener(DOCUMENTS_CHANGED, changed);
    };
  }, [refresh]);

  const polling = !!docs?.some(isActive);
  useEffect(() => {
    if (!polling) return;
    let stopped = false;
    let timer: number;
    // Chain timeouts (not setInterval) so slow responses never pile up.
    const tick = async () => {
      await refresh();
      if (!stopped) timer = window.setTimeout(tick, DOCS_POLL_MS);
    };
    timer = window.setTimeout(tick, DOCS_POLL_MS);
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [polling, refresh]);

  return { docs, setDocs, total, setTotal, error, refresh, polling };
}
