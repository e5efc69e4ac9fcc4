// Chat threads (/api/threads/...): the list, one thread, rename, delete, per-thread settings, branches, stop,
// export. Asking (POST /api/chat) and following an answer (GET .../stream) are SSE: chat.ts.
import { del, get, getUrl, patch, post } from "./client";
import type { components } from "./schema";

/** What a thread searches and which model answers (PATCH /api/threads/{id} `settings`); null: the default. */
export type ThreadSettings = components["schemas"]["ThreadSettings"];

const one = (threadId: string) => ({ params: { path: { thread_id: threadId } } });

export const threadsApi = {
  list: async (signal?: AbortSignal) => (await get("/api/threads", { signal })).threads,

  get: (threadId: string, signal?: AbortSignal) => get("/api/threads/{thread_id}", { ...one(threadId), signal }),

  rename: (threadId: string, title: string) => patch("/api/threads/{thread_id}", { ...one(threadId), body: { title } }),

  saveSettings: (threadId: string, settings: ThreadSettings) =>
    patch("/api/threads/{thread_id}", { ...one(threadId), body: { settings } }),

  remove: (threadId: string) => del("/api/threads/{thread_id}", one(threadId)),

  /** Stop the thread's answer in progress (saved as incomplete). */
  stop: (threadId: string) => post("/api/threads/{thread_id}/stop", one(threadId)),

  /** Make the branch through `messageId` the active one; returns the thread along it. */
  branch: (threadId: string, messageId: string) =>
    post("/api/threads/{thread_id}/branch", { ...one(threadId), body: { message_id: messageId } }),

  /** The download link of a thread's export. */
  exportUrl: (threadId: string, format: "markdown" | "json") =>
    getUrl("/api/threads/{thread_id}/export", { params: { path: { thread_id: threadId }, query: { format } } }),
};
