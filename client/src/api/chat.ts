// Asking and following an answer: POST /api/chat and GET /api/threads/{id}/stream answer Server-Sent Events
// (docs/SSE.md), read here with their own fetch; their JSON errors are ApiErrors like every call's.
import { errorFromResponse, type JsonBody } from "./client";
import { toChatEvent, type ChatEvent } from "./chatEvents";
import { SseParser } from "./sse";

/** The body of POST /api/chat (at most one of regenerate_id, continue_id, edit_id; `message` not with them). */
export type ChatRequest = JsonBody<"/api/chat", "post">;

/** The stream ended (or the network failed) before a `done` or `error` event. */
export class ConnectionLostError extends Error {
  constructor(message = "The connection to the server was lost before the answer finished.") {
    super(message);
    this.name = "ConnectionLostError";
  }
}

export function isAbortError(e: unknown): boolean {
  return (
    (e instanceof DOMException && e.name === "AbortError") ||
    (e instanceof Error && e.name === "AbortError")
  );
}

/** One event and its SSE `id` ("<assistant_message_id>:<seq>", docs/SSE.md), when the server sent one. */
export type EventHandler = (ev: ChatEvent, id: string | undefined) => void;

async function open(url: string, init: RequestInit, signal?: AbortSignal): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal, cache: "no-store" });
  } catch (e) {
    if (isAbortError(e) || signal?.aborted) throw e;
    throw new ConnectionLostError("Could not reach the server.");
  }
}

/**
 * Read an SSE response to its `done`/`error` event, delivering each event. Rejects with ConnectionLostError
 * when the stream ends first, or an AbortError when `signal` is aborted (the server's run goes on either way).
 */
export async function readChatStream(res: Response, onEvent: EventHandler, signal?: AbortSignal): Promise<void> {
  if (!res.body) throw new ConnectionLostError();
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  let finished = false;
  const handle = (events: { event: string; data: string; id?: string }[]) => {
    for (const raw of events) {
      const ev = toChatEvent(raw.event, raw.data);
      if (!ev) continue;
      onEvent(ev, raw.id);
      if (ev.type === "done" || ev.type === "error") finished = true;
    }
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      handle(parser.feed(decoder.decode(value, { stream: true })));
      if (finished) break;
    }
    if (!finished) handle(parser.feed(decoder.decode()).concat(parser.flush()));
  } catch (e) {
    if (isAbortError(e) || signal?.aborted) throw e;
    throw new ConnectionLostError();
  } finally {
    reader.cancel().catch(() => undefined); // close the connection once the terminal event arrived
  }
  if (signal?.aborted) throw new DOMException("Aborted", "AbortError");
  if (!finished) throw new ConnectionLostError();
}

/**
 * POST /api/chat: resolves with the open SSE response once the server took the question; rejects with ApiError
 * for a JSON error (400 too long, 404, 409 an answer is already being generated).
 */
export async function postChat(body: ChatRequest, signal?: AbortSignal): Promise<Response> {
  const res = await open(
    "/api/chat",
    {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(body),
    },
    signal,
  );
  if (!res.ok) throw await errorFromResponse(res);
  return res;
}

/** POST /api/chat and read its stream (postChat + readChatStream). */
export async function streamChat(body: ChatRequest, onEvent: EventHandler, signal?: AbortSignal): Promise<void> {
  await readChatStream(await postChat(body, signal), onEvent, signal);
}

/**
 * GET /api/threads/{id}/stream: attach to the thread's answer in progress, replaying the events after
 * `lastEventId` (all of them when it is "<message_id>:0"). Resolves false at once when nothing runs (204).
 */
export async function attachStream(
  threadId: string,
  lastEventId: string | null,
  onEvent: EventHandler,
  signal?: AbortSignal,
): Promise<boolean> {
  const qs = lastEventId ? `?after=${encodeURIComponent(lastEventId)}` : "";
  const headers: Record<string, string> = { Accept: "text/event-stream" };
  if (lastEventId) headers["Last-Event-ID"] = lastEventId;
  const res = await open(`/api/threads/${encodeURIComponent(threadId)}/stream${qs}`, { headers }, signal);
  if (res.status === 204) return false;
  if (!res.ok) throw await errorFromResponse(res);
  await readChatStream(res, onEvent, signal);
  return true;
}
