import { useCallback, useEffect, useRef, useState } from "react";
import { api } from "../api/client";
import type { Document } from "../api/types";

export const DOCS_POLL_MS = 1000;

export const isActive = (d: Pick<Document, "status">) => d.status === "queued" || d.status === "processing";

/** Document list; polls every second while any document is queued/processing. */
export function useDocuments() {
  const [docs, setDocs] = useState<Document[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const alive = useRef(true);

  const refresh = useCallback(async () => {
    try {
      const list = await api.listDocuments();
      if (!alive.current) return;
      setDocs(list);
      setError(null);
    } catch (e) {
      if (alive.current) setError(`Couldn't load documents: ${e instanceof Error ? e.message : String(e)}`);
    }
  }, []);

  useEffect(() => {
    alive.current = true;
    void refresh();
    return () => {
      alive.current = false;
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

  return { docs, setDocs, error, refresh, polling };
}
