import type { ChatEvent } from "../api/chatEvents";
import type { Feedback } from "../api/feedback";
import type { ChatError, Chunk, CitationReport, Message, ThreadDetail, ToolResult } from "../api/types";
import type { Reading } from "./ProgressNote";

export interface SearchStep {
  id: string;
  query: string;
  status: "running" | "done" | "stopped";
  result: ToolResult | null;
  /** The tool: search_documents (default), find_documents, read_document, summarize_documents. */
  name?: string;
  /** A long tool's last `progress` event (summarize_documents: read, map, reduce). */
  progress?: { stage: string; done: number; total: number; message: string } | null;
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
  /** Ids of the messages sharing this one's parent (the branches), in creation order; itself included. */
  siblings?: string[];
  /** Assistant: the model that answered. */
  model?: string | null;
  feedback?: Feedback | null;
  /** Streaming: the model was handed `passages` passages (0: none yet) at `since` (ms) and has not written yet;
   * `estimate`: how long its first token takes, from its measured speed (the `estimate` event). */
  reading?: Reading | null;
  /** Streaming: the first answer failed a check and the model was asked again (the `retry` event's words). */
  retried?: string | null;
}

export interface ChatState {
  threadId: string | null;
  messages: ChatMessage[];
  /** An answer of this thread is being generated (here, or by another tab this page attached to). */
  sending: boolean;
}

/** How a run starts: a new question, another answer to a question, more of an answer, or an edited question. */
export type StartMode =
  | { kind: "new"; text: string }
  | { kind: "regenerate"; id: string }
  | { kind: "continue"; id: string }
  | { kind: "edit"; id: string; text: string };

export type ChatAction =
  | { type: "reset" }
  | { type: "loaded"; thread: ThreadDetail }
  | { type: "start"; mode: StartMode; userKey: string; assistantKey: string }
  | { type: "attach"; messageId: string; replay: boolean }
  | { type: "feedback"; id: string; feedback: Feedback | null }
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
    status: m.status === "error" || m.status === "incomplete" || m.status === "streaming" ? m.status : "complete",
    searches,
    error: m.error?.code === "stopped" ? null : (m.error ?? null), // the "Stopped" note says it
    connectionLost: false,
    citations: m.citations ?? null,
    siblings: m.siblings ?? undefined,
    model: m.model ?? null,
    feedback: m.feedback ?? null,
  };
}

/** Error codes that end an answer early without failing it (docs/SSE.md): it is saved `incomplete`. */
const INCOMPLETE_CODES = new Set<string>(["stopped", "interrupted", "unauthorized"]);

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
            name: ev.name,
          },
        ],
      };
    case "progress": {
      const idx = msg.searches.findIndex((s) => s.id === ev.id);
      if (idx === -1) return msg;
      const searches = msg.searches.slice();
      searches[idx] = { ...searches[idx], progress: { stage: ev.stage, done: ev.done, total: ev.total, message: ev.message ?? "" } };
      return { ...msg, searches };
    }
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
    case "reading":
      return { ...msg, reading: { passages: ev.passages, since: Date.now() } };
    case "estimate": {
      const { type: _t, ...estimate } = ev;
      void _t;
      return { ...msg, reading: { passages: ev.passages, since: msg.reading?.since ?? Date.now(), estimate } };
    }
    case "retry":
      return { ...msg, content: "", citations: null, reading: null, retried: ev.message };
    case "token":
      return { ...msg, content: msg.content + ev.delta, reading: null };
    case "citations":
      // the check may add markers to sentences a passage supports: the text shown is the checked one
      return { ...msg, citations: ev, content: ev.content ?? msg.content };
    case "done":
      return {
        ...msg,
        reading: null,
        retried: null,
        id: ev.message_id ?? msg.id,
        status: "complete",
        searches: stopRunning(msg.searches),
      };
    case "error":
      return {
        ...msg,
        reading: null,
        retried: null,
        // stopped (here or in another tab), interrupted, signed out: the text so far is kept, incomplete
        status: INCOMPLETE_CODES.has(ev.code) ? "incomplete" : "error",
        error: ev.code === "stopped" ? null : { code: ev.code, message: ev.message },
        searches: stopRunning(msg.searches),
      };
  }
}

const blank = { searches: [], error: null, connectionLost: false, id: null, citations: null, feedback: null };

/** The messages once a run starts (see StartMode); null when its message is not shown. */
function startMessages(messages: ChatMessage[], mode: StartMode, userKey: string, assistantKey: string) {
  const answer = (prompt: string): ChatMessage => ({
    ...blank,
    key: assistantKey,
    role: "assistant",
    content: "",
    status: "streaming",
    prompt,
  });
  const question = (text: string): ChatMessage => ({ ...blank, key: userKey, role: "user", content: text, status: "complete" });
  if (mode.kind === "new") return [...messages, question(mode.text), answer(mode.text)];
  const i = messages.findIndex((m) => m.id === mode.id);
  if (i === -1) return null;
  if (mode.kind === "continue") {
    const m = messages[i];
    return [...messages.slice(0, i), { ...m, status: "streaming" as const, error: null, connectionLost: false, citations: null }];
  }
  if (mode.kind === "edit") return [...messages.slice(0, i), question(mode.text), answer(mode.text)];
  const prompt = i > 0 && messages[i - 1].role === "user" ? messages[i - 1].content : "";
  return [...messages.slice(0, i), answer(prompt)];
}

/** Stored messages, keeping the React keys of those already shown (no remount when a thread is re-read). */
function keepKeys(state: ChatState, thread: ThreadDetail): ChatMessage[] {
  const keys = new Map<string, string>();
  if (state.threadId === thread.id) for (const m of state.messages) if (m.id) keys.set(m.id, m.key);
  return thread.messages.map((raw) => {
    const m = fromServerMessage(raw);
    // A row still "streaming" that no run generates (it just ended) is shown as unfinished.
    const status = m.status === "streaming" && m.id !== thread.running_message_id ? "incomplete" : m.status;
    return { ...m, status, key: keys.get(m.id ?? "") ?? m.key };
  });
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
      return { threadId: action.thread.id, messages: keepKeys(state, action.thread), sending: false };
    case "start": {
      const messages = startMessages(state.messages, action.mode, action.userKey, action.assistantKey);
      return messages ? { ...state, sending: true, messages } : state;
    }
    case "attach": {
      const i = state.messages.findIndex((m) => m.id === action.messageId);
      const messages = state.messages.slice();
      const fresh = { ...blank, id: action.messageId, key: action.messageId, role: "assistant" as const, content: "" };
      const m = i === -1 ? fresh : messages[i];
      const next: ChatMessage = {
        ...m,
        ...(action.replay ? { content: "", searches: [], citations: null } : {}),
        status: "streaming",
        error: null,
        connectionLost: false,
      };
      if (i === -1) messages.push(next);
      else messages[i] = next;
      return { ...state, sending: true, messages };
    }
    case "feedback":
      return {
        ...state,
        messages: state.messages.map((m) => (m.id === action.id ? { ...m, feedback: action.feedback } : m)),
      };
    case "event": {
      const ev = action.event;
      let messages = updateStreaming(state, (m) => applyEvent(m, ev));
      const questionId = ev.type === "thread" ? (ev as { question_id?: string | null }).question_id : null;
      if (questionId && messages.length > 1 && messages[messages.length - 2].role === "user") {
        messages = messages.slice();
        const q = messages[messages.length - 2];
        messages[messages.length - 2] = { ...q, id: q.id ?? questionId };
      }
      const next: ChatState = {
        ...state,
        threadId: ev.type === "thread" ? ev.thread_id : state.threadId,
        messages,
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
