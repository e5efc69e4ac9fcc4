import { json, request } from "../api/client";
import type { components, operations } from "../api/schema";
import type { BulkResult, ChunkList, Document, DocumentList } from "../api/types";

type MetadataPatch = components["schemas"]["MetadataPatch"];
type ListQuery = NonNullable<operations["ApiDocumentsListDocuments"]["parameters"]["query"]>;
import type { TypeFamily } from "./formats";

export type SortKey = "created_at" | "title" | "byte_size" | "status";
export type Order = "asc" | "desc";

/** What the documents page asks for: GET /api/documents's query. */
export interface ListParams {
  q?: string;
  status?: Document["status"] | "";
  type?: TypeFamily | "";
  sort?: SortKey;
  order?: Order;
  limit?: number;
  offset?: number;
  collection_id?: string;
  owner?: NonNullable<ListQuery["owner"]> | "";
  /** `key=value` */
  meta?: string;
}

export const PAGE_SIZE = 50;

function query(params: Record<string, string | number | undefined | null>): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") qs.set(k, String(v));
  const s = qs.toString();
  return s ? `?${s}` : "";
}

export const documentsApi = {
  /** One page of the documents I may read, with how many match in all. */
  list: async (params: ListParams, signal?: AbortSignal): Promise<{ documents: Document[]; total: number }> => {
    // the server's defaults (newest first, 50 from the start) are left out: GET /api/documents is the first page
    const { sort, order, limit, offset, ...rest } = params;
    const qs = query({
      ...rest,
      sort: sort === "created_at" ? null : sort,
      order: order === "desc" ? null : order,
      limit: limit === PAGE_SIZE ? null : limit,
      offset: offset ? offset : null,
    });
    const r = await request<DocumentList>(`/api/documents${qs}`, { signal });
    return { documents: r.documents, total: r.total ?? r.documents.length };
  },

  get: (id: string, signal?: AbortSignal) => request<Document>(`/api/documents/${encodeURIComponent(id)}`, { signal }),

  bulk: async (action: "delete" | "retry", ids: string[]): Promise<BulkResult[]> =>
    (await request<{ results: BulkResult[] }>("/api/documents/bulk", json("POST", { action, ids }))).results,

  /** Chunks in order: from `offset`, or the page around `chunkId`. */
  chunks: (id: string, params: { offset?: number; limit?: number; chunkId?: number | null }, signal?: AbortSignal) =>
    request<ChunkList>(
      `/api/documents/${encodeURIComponent(id)}/chunks${query({ offset: params.offset, limit: params.limit, chunk_id: params.chunkId })}`,
      { signal },
    ),

  /** A new title (the file name stays); the updated document. */
  rename: (id: string, title: string) =>
    request<Document>(`/api/documents/${encodeURIComponent(id)}`, json("PATCH", { title } satisfies MetadataPatch)),

  /** The original file (PDF inline; other types download). */
  fileUrl: (id: string) => `/api/documents/${encodeURIComponent(id)}/file`,
};
