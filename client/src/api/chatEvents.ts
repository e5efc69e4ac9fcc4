import type { ApiErrorBody, ToolResult } from "./types";

/** The typed events of POST /api/chat. */
export type ChatEvent =
  | { type: "thread"; thread_id: string; message_id: string }
  | {
      type: "tool_call";
      id: string;
      name: string;
      arguments: { query?: string; document_ids?: string[] | null } & Record<string, unknown>;
    }
  | ({ type: "tool_result" } & ToolResult)
  | { type: "token"; delta: string }
  | { type: "done"; message_id?: string; finish_reason?: string | null; usage?: unknown }
  | ({ type: "error" } & ApiErrorBody);

const KNOWN = new Set(["thread", "tool_call", "tool_result", "token", "done", "error"]);

/** Turn a raw SSE event into a ChatEvent, or null for unknown/garbled events. */
export function toChatEvent(name: string, data: string): ChatEvent | null {
  if (!KNOWN.has(name)) return null;
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
  if (name === "tool_result") {
    return { ...(p as unknown as ToolResult), chunks: Array.isArray(p.chunks) ? p.chunks : [], type: "tool_result" };
  }
  return { ...p, type: name } as ChatEvent;
}
