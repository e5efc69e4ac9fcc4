/**
 * The chat's REST calls of issue 21 (docs/API.md): stop, attach, branches, feedback, per-thread settings, models,
 * export. Every payload type is the generated one (./schema.d.ts, `npm run gen:api`).
 */
import { request, json } from "./client";
import type { components } from "./schema";
import type { Document, Message, Thread, ThreadDetail } from "./types";

type Schemas = components["schemas"];

export type Feedback = Schemas["Feedback"];
export type Rating = NonNullable<Feedback["rating"]>;

/** What a thread searches and which model answers (PATCH /api/threads/{id} `settings`); null: the default. */
export type ThreadSettings = Schemas["ThreadSettings"];

export type RunMessage = Message;
export type RunThread = Thread;
export type RunThreadDetail = ThreadDetail;

/** The body of POST /api/chat (at most one of regenerate_id, continue_id, edit_id; `message` not with them). */
export type ChatBody = Omit<Schemas["ChatBody"], "message" | "task"> & { message?: string; task?: Schemas["ChatBody"]["task"] };

export type ModelInfo = Schemas["ChatModel"];
export type ModelList = Schemas["ChatModels"];

const tid = (id: string) => `/api/threads/${encodeURIComponent(id)}`;

export const chatApi = {
  getThread: (id: string, signal?: AbortSignal) => request<RunThreadDetail>(tid(id), { signal }),

  /** Stop the thread's answer in progress (saved as incomplete). */
  stop: (threadId: string) => request<{ stopped: boolean }>(`${tid(threadId)}/stop`, { method: "POST" }),

  /** Make the branch through `messageId` the active one; returns the thread along it. */
  branch: (threadId: string, messageId: string) =>
    request<RunThreadDetail>(`${tid(threadId)}/branch`, json("POST", { message_id: messageId })),

  feedback: (messageId: string, rating: Rating | null, note: string | null) =>
    request<Feedback>(`/api/messages/${encodeURIComponent(messageId)}/feedback`, json("PUT", { rating, note })),

  saveSettings: (threadId: string, settings: ThreadSettings) =>
    request<RunThread>(tid(threadId), json("PATCH", { settings })),

  models: (signal?: AbortSignal) => request<ModelList>("/api/models", { signal }),

  /** The user's documents whose title or filename holds `q` (the server filters when it can; so do we). */
  findDocuments: async (q: string, signal?: AbortSignal): Promise<Document[]> => {
    const qs = new URLSearchParams({ limit: "20", sort: "title", order: "asc" });
    if (q.trim()) qs.set("q", q.trim());
    const { documents } = await request<{ documents: Document[] }>(`/api/documents?${qs.toString()}`, { signal });
    const needle = q.trim().toLowerCase();
    return documents
      .filter((d) => !needle || `${d.title ?? ""} ${d.filename}`.toLowerCase().includes(needle))
      .slice(0, 20);
  },

  getDocument: (id: string, signal?: AbortSignal) =>
    request<Document>(`/api/documents/${encodeURIComponent(id)}`, { signal }),
};

/** The download link of a thread's export. */
export const exportUrl = (threadId: string, format: "markdown" | "json") =>
  `${tid(threadId)}/export?format=${format}`;

/** Where a passage opens in the document viewer. */
export function viewerUrl(chunk: { document_id: string; id: number | string; page?: number | null }): string {
  const qs = new URLSearchParams({ chunk: String(chunk.id) });
  if (chunk.page != null) qs.set("page", String(chunk.page));
  return `/documents/${encodeURIComponent(chunk.document_id)}?${qs.toString()}`;
}
