// Collections, their members and their documents (docs/ACCOUNTS.md): /api/collections/...
import { del, get, patch, post, put, type JsonBody } from "./client";
import type { MemberRole } from "./types";

const one = (collectionId: string) => ({ params: { path: { collection_id: collectionId } } });

export const collectionsApi = {
  list: async (signal?: AbortSignal) => (await get("/api/collections", { signal })).collections,

  create: (name: string, description?: string) =>
    post("/api/collections", { body: description ? { name, description } : { name } }),

  get: (collectionId: string, signal?: AbortSignal) =>
    get("/api/collections/{collection_id}", { ...one(collectionId), signal }),

  update: (collectionId: string, body: JsonBody<"/api/collections/{collection_id}", "patch">) =>
    patch("/api/collections/{collection_id}", { ...one(collectionId), body }),

  remove: (collectionId: string) => del("/api/collections/{collection_id}", one(collectionId)),

  /** Add a member or change their role (owner only). */
  setMember: (collectionId: string, userId: string, role: MemberRole) =>
    put("/api/collections/{collection_id}/members/{user_id}", {
      params: { path: { collection_id: collectionId, user_id: userId } },
      body: { role },
    }),

  /** Remove a member (owner), or leave (the member themself). */
  removeMember: (collectionId: string, userId: string) =>
    del("/api/collections/{collection_id}/members/{user_id}", {
      params: { path: { collection_id: collectionId, user_id: userId } },
    }),

  addDocument: (collectionId: string, documentId: string) =>
    put("/api/collections/{collection_id}/documents/{document_id}", {
      params: { path: { collection_id: collectionId, document_id: documentId } },
    }),

  removeDocument: (collectionId: string, documentId: string) =>
    del("/api/collections/{collection_id}/documents/{document_id}", {
      params: { path: { collection_id: collectionId, document_id: documentId } },
    }),
};
