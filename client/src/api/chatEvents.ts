import type { components } from "./schema";
import type { CitationCheck, CitationReport, ToolResult } from "./types";

/**
 * The SSE events of POST /api/chat (docs/SSE.md), from the OpenAPI document's `ChatStream`: each of its
 * properties is an event name and its `data:` payload (ThreadEvent, ToolCall, ToolResult, ReadingEvent,
 * EstimateEvent, TokenEvent, DoneEvent, ErrorEvent...).
 */
type ChatStream = components["schemas"]["ChatStream"];

export type ChatEventType = keyof ChatStream;

/** One typed event: its name as `type`, plus its payload's fields. */
export type ChatEvent = { [K in ChatEventType]-?: { type: K } & NonNullable<ChatStream[K]> }[ChatEventType];

// A Record over every event name: the compiler flags a name the schema adds or drops.
const KNOWN: Record<ChatEventType, true> = {
  thread: true,
  tool_call: true,
  tool_result: true,
  reading: true,
  estimate: true,
  progress: true,
  retry: true,
  token: true,
  citations: true,
  done: true,
  error: true,
};

const isKnown = (name: string): name is ChatEventType => Object.prototype.hasOwnProperty.call(KNOWN, name);

/** Turn a raw SSE event into a ChatEvent, or null for unknown/garbled events. */
export function toChatEvent(name: string, data: string): ChatEvent | null {
  if (!isKnown(name)) return null;
  let payload: unknown;
  try {
    payload = JSON.parse(data);
  } catch {
    return null;
  }
  if (!payload || typeof payload !== "object") return null;
  const p = payload as Record<string, unknown>;
  if (name === "error") {
    return {
      type: "error",
      code: String(p.code ?? "error"),
      message: String(p.message ?? "Something went wrong."),
    };
  }
  if (name === "token") return { type: "token", delta: typeof p.delta === "string" ? p.delta : "" };
  if (name === "citations") {
    const checks = Array.isArray(p.citations) ? (p.citations as CitationCheck[]) : [];
    return { ...(p as unknown as CitationReport), citations: checks, type: "citations" };
  }
  if (name === "tool_result") {
    return { ...(p as unknown as ToolResult), chunks: Array.isArray(p.chunks) ? p.chunks : [], type: "tool_result" };
  }
  return { ...p, type: name } as ChatEvent;
}
