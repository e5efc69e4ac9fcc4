// Search (GET /api/search): passages for a query, with the documents they come from and metadata facets.
import { get } from "./client";
import type { components } from "./schema";
import type { MetadataFilters, SearchMode } from "./types";

export type RerankCost = components["schemas"]["RerankCostOut"];

export interface SearchParams {
  q: string;
  /** null: the server's configured default. */
  mode?: SearchMode | null;
  /** null: the server's configured default. */
  rerank?: boolean | null;
  limit?: number;
  documentIds?: string[];
  collectionIds?: string[];
  /** Metadata filters: one of a key's values (OR), every key (AND). */
  filters?: MetadataFilters;
}

export const searchApi = {
  /** What LLM rerank costs a chat search at the model's measured speed (the settings page). */
  rerankCost: (signal?: AbortSignal) => get("/api/search/rerank-cost", { signal }),
  search: (params: SearchParams, signal?: AbortSignal) => {
    const filter = Object.entries(params.filters ?? {}).flatMap(([key, values]) => values.map((v) => `${key}=${v}`));
    const query = {
      q: params.q,
      mode: params.mode || undefined,
      rerank: params.rerank,
      limit: params.limit || undefined,
      document_ids: params.documentIds,
      collection_ids: params.collectionIds,
      filter,
    };
    return get("/api/search", { params: { query }, signal });
  },
};
