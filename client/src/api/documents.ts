// The documents (GET/PATCH/DELETE /api/documents/...): the documents page's pages, the pickers' searches, the
// viewer's chunks, metadata, re-chunking, retry and cancel, bulk actions, URL ingestion. Uploads: uploads.ts.
import { del, get, getUrl, patch, post, type JsonBody, type Query } from "./client";
import type { components } from "./schema";
import type { Document } from "./types";

type Schemas = components["schemas"];
type ListQuery = Query<"/api/documents", "get">;

export type SortKey = NonNullable<ListQuery["sort"]>;
export type Order = NonNullable<ListQuery["order"]>;
/** How a document is split into chunks (POST /api/documents/{id}/rechunk). */
export type ChunkStrategy = Schemas["RechunkRequest"]["strategy"];

/** What the documents page asks for (its filters; "" is not filtered): GET /api/documents's query. */
export interface ListParams {
  q?: string;
  status?: Document["status"] | "";
  type?: NonNullable<ListQuery["type"]> | "";
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

export type BulkAction = JsonBody<"/api/documents/bulk", "post">["action"];
/** The list's filters as the page holds them ("" is not filtered), sent by a "select all N matching" action as
 * the schema's `BulkFilter` once the empty ones are dropped. */
export type MatchingFilter = Pick<ListParams, "q" | "status" | "type" | "collection_id" | "owner" | "meta">;

/** `params` without its empty ("") values: the server reads an empty filter as a bad value. */
function present<T extends object>(params: T): { [K in keyof T]: Exclude<T[K], ""> } {
  return Object.fromEntries(Object.entries(params).filter(([, v]) => v !== "")) as { [K in keyof T]: Exclude<T[K], ""> };
}

const one = (id: string) => ({ params: { path: { document_id: id } } });

export const documentsApi = {
  /** One page of the documents I may read, with how many match in all. */
  list: async (params: ListParams, signal?: AbortSignal): Promise<{ documents: Document[]; total: number }> => {
    // the server's defaults (newest first, 50 from the start) are left out: GET /api/documents is the first page
    const { sort, order, limit, offset, ...rest } = params;
    const query = present({
      ...rest,
      sort: sort === "created_at" ? undefined : sort,
      order: order === "desc" ? undefined : order,
      limit: limit === PAGE_SIZE ? undefined : limit,
      offset: offset ? offset : undefined,
    });
    const r = await get("/api/documents", { params: { query }, signal });
    return { documents: r.documents, total: r.total ?? r.documents.length };
  },

  /** Every document I may read (of one collection), newest first: the API's pages of 200, fetched in turn
   * (the documents page asks for one page at a time instead: `list`). */
  listAll: async (signal?: AbortSignal, collectionId?: string): Promise<Document[]> => {
    const all: Document[] = [];
    for (let offset = 0; ; offset += 200) {
      const page = await get("/api/documents", {
        params: { query: { limit: 200, offset, collection_id: collectionId || undefined } },
        signal,
      });
      all.push(...page.documents);
      if (page.documents.length < 200 || all.length >= (page.total ?? 0) || offset >= 10_000) return all;
    }
  },

  /**
   * Documents whose title or file name holds `q`, by title (`owner: "me"`: only mine); the server filters when
   * it can, and so does this.
   */
  find: async (
    q: string,
    { limit = 20, owner }: { limit?: number; owner?: "me" } = {},
    signal?: AbortSignal,
  ): Promise<Document[]> => {
    const query = { limit, sort: "title", order: "asc", owner, q: q.trim() || undefined } as const;
    const { documents } = await get("/api/documents", { params: { query }, signal });
    const needle = q.trim().toLowerCase();
    return documents
      .filter((d) => !needle || `${d.title ?? ""} ${d.filename}`.toLowerCase().includes(needle))
      .slice(0, limit);
  },

  get: (id: string, signal?: AbortSignal) => get("/api/documents/{document_id}", { ...one(id), signal }),

  remove: (id: string) => del("/api/documents/{document_id}", one(id)),

  /** A new title (the file name stays); the updated document. */
  rename: (id: string, title: string) => patch("/api/documents/{document_id}", { ...one(id), body: { title } }),

  /** Edit a document's metadata (JSON merge patch: null removes a key); the updated document. */
  updateMetadata: (id: string, metadata: Schemas["MetadataPatch"]["metadata"]) =>
    patch("/api/documents/{document_id}", { ...one(id), body: { metadata } }),

  /** Run the LLM metadata extraction again for one document. */
  extractMetadata: (id: string) => post("/api/documents/{document_id}/extract-metadata", one(id)),

  /** Queue a failed document again; the updated document. */
  retry: (id: string) => post("/api/documents/{document_id}/retry", one(id)),

  /** Stop a queued or processing document; the updated document. */
  cancel: (id: string) => post("/api/documents/{document_id}/cancel", one(id)),

  /** The document, queued again to be chunked with `strategy` (`chunkTokens` null: the default size). */
  rechunk: (id: string, strategy: ChunkStrategy, chunkTokens: number | null) =>
    post("/api/documents/{document_id}/rechunk", { ...one(id), body: { strategy, chunk_tokens: chunkTokens } }),

  /**
   * Delete, retry, add to or remove from a collection many documents: by id (one result per id; `error`: not
   * found, forbidden, conflict), or every document a list filter matches ("select all N matching": the server
   * applies it inside what I may read; only the failures come back), with how many matched and how many worked.
   */
  bulk: (action: BulkAction, target: string[] | { filter: MatchingFilter }, collectionId?: string) =>
    post("/api/documents/bulk", {
      body: {
        action,
        ...(Array.isArray(target) ? { ids: target } : { filter: present(target.filter) }),
        ...(collectionId ? { collection_id: collectionId } : {}),
      },
    }),

  /** Chunks in order: from `offset`, or the page around `chunkId`. */
  chunks: (id: string, params: { offset?: number; limit?: number; chunkId?: number | null }, signal?: AbortSignal) =>
    get("/api/documents/{document_id}/chunks", {
      params: { path: { document_id: id }, query: { offset: params.offset, limit: params.limit, chunk_id: params.chunkId } },
      signal,
    }),

  /** Fetch a web page (or a file at a URL) on the server and queue it like an upload. */
  ingestUrl: async (url: string, collectionId: string | null) =>
    (await post("/api/documents/url", { body: { url, collection_id: collectionId } })).results,

  /** The original file (PDF inline; other types download). */
  fileUrl: (id: string) => getUrl("/api/documents/{document_id}/file", one(id)),
};
