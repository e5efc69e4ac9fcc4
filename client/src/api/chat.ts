import { errorFromResponse } from "./client";
import { toChatEvent, type ChatEvent } from "./chatEvents";
import { SseParser } from "./sse";
import type { ChatRequest } from "./types";

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

/**
 * POST /api/chat and deliver each SSE event to `onEvent`.
 * Resolves after `done`/`error`. Rejects with ApiError for a JSON error
 * response (400/404), ConnectionLostError when the stream drops, or an
 * AbortError when `signal` is aborted.
 */
export async function streamChat(
  body: ChatRequest,
  onEvent: (ev: ChatEvent) => void,
  signal?: AbortSignal,
): Promise<void> {
  let res: Response;
  try {
    res = await fetch("/api/chat", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(body),
      signal,
    });
  } catch (e) {
    if (isAbortError(e) || signal?.aborted) throw e;
    throw new ConnectionLostError("Could not reach the server.");
  }
  if (!res.ok) throw await errorFromResponse(res);
  if (!res.body) throw new ConnectionLostError();

  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  let finished = false;
  const handle = (events: { event: string; data: string }[]) => {
    for (const raw of events) {
      const ev = toChatEvent(raw.event, raw.data);
      if (!ev) continue;
      onEvent(ev);
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
    // Close the connection once the terminal event arrived (or on failure).
    reader.cancel().catch(() => undefined);
  }
  if (signal?.aborted) throw new DOMException("Aborted", "AbortError");
  if (!finished) throw new ConnectionLostError();
}
