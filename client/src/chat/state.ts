import type { ChatEvent } from "../api/chatEvents";
import type { ChatError, Chunk, CitationReport, Message, ThreadDetail, ToolResult } from "../api/types";

export interface SearchStep {
  id: string;
  query: string;
  status: "running" | "done" | "stopped";
  result: ToolResult | null;
}

export type MessageStatus = "streaming" | "complete" | "incomplete" | "error";

export interface ChatMessage {
  /** Stable React key (server id when known at creation, else local). */
  key: string;
  /** Server message id, once known. */
  id: string | null;
  role: "user" | "assistant";
  content: string;
  status: MessageStatus;
  searches: SearchStep[];
  error: ChatError | null;
  /** The stream dropped before done/error: the UI offers Retry. */
  connectionLost: boolean;
  /** For live assistant messages: the user text that produced it (for Retry). */
  prompt?: string;
  /** The citation check (the `citations` event, or the stored message's); absent: not checked. */
  citations?: CitationReport | null;
}

export interface ChatState {
  threadId: string | null;
  messages: ChatMessage[];
  sending: boolean;
}

export type ChatAction =
  | { type: "reset" }
  | { type: "loaded"; thread: ThreadDetail }
  | { type: "send"; text: string; userKey: string; assistantKey: string }
  | { type: "event"; event: ChatEvent }
  | { type: "aborted" }
  | { type: "connection_lost"; message?: string }
  | { type: "request_failed"; code?: string; message: string }
  | { type: "discard"; assistantKey: string };

export const initialChatState: ChatState = { threadId: null, messages: [], sending: false };

/** All source chunks of a message, in citation order ([1] is the first). */
export function messageSources(msg: Pick<ChatMessage, "searches">): Chunk[] {
  const out: Chunk[] = [];
  for (const s of msg.searches) if (s.result) out.push(...s.result.chunks);
  return out;
}

/** Map a stored server message to UI state (history may lack newer fields). */
export function fromServerMessage(m: Message): ChatMessage {
  const results = new Map((m.tool_results ?? []).map((r) => [r.id, r]));
  const searches: SearchStep[] = (m.tool_calls ?? []).map((c) => {
    const result = results.get(c.id) ?? null;
    results.delete(c.id);
    return {
      id: c.id,
      query: typeof c.arguments?.query === "string" ? c.arguments.query : "",
      status: result ? "done" : "stopped",
      result: result ? { ...result, chunks: result.chunks ?? [] } : null,
    };
  });
  for (const r of results.values()) {
    searches.push({ id: r.id, query: "", status: "done", result: { ...r, chunks: r.chunks ?? [] } });
  }
  return {
    key: m.id,
    id: m.id,
    role: m.role,
    content: m.content ?? "",
    status: m.status === "error" ? "error" : m.status === "incomplete" ? "incomplete" : "complete",
    searches,
    error: m.error ?? null,
    connectionLost: false,
    citations: m.citations ?? null,
  };
}

function stopRunning(searches: SearchStep[]): SearchStep[] {
  return searches.some((s) => s.status === "running")
    ? searches.map((s) => (s.status === "running" ? { ...s, status: "stopped" as const } : s))
    : searches;
}

/** Apply one stream event to the assistant message being generated. */
export function applyEvent(msg: ChatMessage, ev: ChatEvent): ChatMessage {
  switch (ev.type) {
    case "thread":
      return { ...msg, id: ev.message_id ?? msg.id };
    case "tool_call":
      return {
        ...msg,
        searches: [
          ...msg.searches,
          {
            id: ev.id,
            query: typeof ev.arguments?.query === "string" ? ev.arguments.query : "",
            status: "running",
            result: null,
          },
        ],
      };
    case "tool_result": {
      const { type: _t, ...result } = ev;
      void _t;
      const idx = msg.searches.findIndex((s) => s.id === ev.id);
      if (idx === -1) {
        return { ...msg, searches: [...msg.searches, { id: ev.id, query: "", status: "done", result }] };
      }
      const searches = msg.searches.slice();
      searches[idx] = { ...searches[idx], status: "done", result };
      return { ...msg, searches };
    }
    case "token":
      return { ...msg, content: msg.content + ev.delta };
    case "citations":
      return { ...msg, citations: ev };
    case "done":
      return {
        ...msg,
        id: ev.message_id ?? msg.id,
        status: "complete",
        searches: stopRunning(msg.searches),
      };
    case "error":
      return {
        ...msg,
        status: "error",
        error: { code: ev.code, message: ev.message },
        searches: stopRunning(msg.searches),
      };
  }
}

function updateStreaming(state: ChatState, fn: (m: ChatMessage) => ChatMessage): ChatMessage[] {
  const i = state.messages.length - 1;
  const last = state.messages[i];
  if (!last || last.role !== "assistant" || last.status !== "streaming") return state.messages;
  const messages = state.messages.slice();
  messages[i] = fn(last);
  return messages;
}

export function chatReducer(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case "reset":
      return initialChatState;
    case "loaded":
      return {
        threadId: action.thread.id,
        messages: action.thread.messages.map(fromServerMessage),
        sending: false,
      };
    case "send": {
      const base = { searches: [], error: null, connectionLost: false, id: null };
      return {
        ...state,
        sending: true,
        messages: [
          ...state.messages,
          { ...base, key: action.userKey, role: "user", content: action.text, status: "complete" },
          {
            ...base,
            key: action.assistantKey,
            role: "assistant",
            content: "",
            status: "streaming",
            prompt: action.text,
          },
        ],
      };
    }
    case "event": {
      const ev = action.event;
      const next: ChatState = {
        ...state,
        threadId: ev.type === "thread" ? ev.thread_id : state.threadId,
        messages: updateStreaming(state, (m) => applyEvent(m, ev)),
      };
      if (ev.type === "done" || ev.type === "error") next.sending = false;
      return next;
    }
    case "aborted":
      return {
        ...state,
        sending: false,
        messages: updateStreaming(state, (m) => ({
          ...m,
          status: "incomplete",
          searches: stopRunning(m.searches),
        })),
      };
    case "connection_lost":
      return {
        ...state,
        sending: false,
        messages: updateStreaming(state, (m) => ({
          ...m,
          status: "incomplete",
          connectionLost: true,
          error: { code: "connection_lost", message: action.message ?? "Connection lost." },
          searches: stopRunning(m.searches),
        })),
      };
    case "request_failed":
      return {
        ...state,
        sending: false,
        messages: updateStreaming(state, (m) => ({
          ...m,
          status: "error",
          error: { code: action.code ?? "request_failed", message: action.message },
          searches: stopRunning(m.searches),
        })),
      };
    case "discard": {
      // Drop a failed assistant message and the user message that produced it (before Retry).
      const i = state.messages.findIndex((m) => m.key === action.assistantKey);
      if (i === -1) return state;
      const from = i > 0 && state.messages[i - 1].role === "user" ? i - 1 : i;
      return { ...state, messages: [...state.messages.slice(0, from), ...state.messages.slice(i + 1)] };
    }
  }
}
