import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { collectionsApi } from "../api/collections";
import { errorMessage } from "../api/client";
import type { Collection } from "../api/types";

export interface CollectionsValue {
  /** null until loaded (and when there is no provider). */
  collections: Collection[] | null;
  error: string | null;
  refresh: () => Promise<void>;
}

/** Without a provider (single-page unit tests): no collections, nothing fetched. */
const Ctx = createContext<CollectionsValue>({ collections: null, error: null, refresh: async () => {} });

/** The collections I own or that are shared with me, shared by the pages (filters, upload target, names). */
export const useCollections = () => useContext(Ctx);

export function CollectionsProvider({ children }: { children: ReactNode }) {
  const [collections, setCollections] = useState<Collection[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const alive = useRef(true);

  const refresh = useCallback(async () => {
    try {
      const list = await collectionsApi.list();
      if (!alive.current) return;
      setCollections(list);
      setError(null);
    } catch (e) {
      if (alive.current) setError(`Couldn't load collections: ${errorMessage(e)}`);
    }
  }, []);

  useEffect(() => {
    alive.current = true;
    void refresh();
    return () => {
      alive.current = false;
    };
  }, [refresh]);

  const value = useMemo(() => ({ collections, error, refresh }), [collections, error, refresh]);
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}
