import { describe, expect, it } from "vitest";
import type { ChatEvent } from "../api/chatEvents";
import type { Message } from "../api/types";
import { bareToolResult, chunk, serverMessage, toolResult } from "../test/fixtures";
import { applyEvent, chatReducer, fromServerMessage, initialChatState, messageSources, type ChatMessage, type ChatState } from "./state";

const run = (state: ChatState, ...events: ChatEvent[]) =>
  events.reduce((s, event) => chatReducer(s, { type: "event", event }), state);

const sent = () => chatReducer(initialChatState, {
    type: "start",
    mode: { kind: "new", text: "What port?" },
    userKey: "u1",
    assistantKey: "a1",
  });
const last = (s: ChatState) => s.messages[s.messages.length - 1];

describe("chatReducer", () => {
  it("send adds the user message and a streaming assistant placeholder", () => {
    const s = sent();
    expect(s.sending).toBe(true);
    expect(s.messages.map((m) => [m.role, m.status])).toEqual([
      ["user", "complete"],
      ["assistant", "streaming"],
    ]);
    expect(last(s).prompt).toBe("What port?");
  });

  it("thread sets the thread id and the assistant message id", () => {
    const s = run(sent(), { type: "thread", thread_id: "t1", message_id: "m9" });
    expect(s.threadId).toBe("t1");
    expect(last(s).id).toBe("m9");
  });

  it("tool_call starts a running search; tool_result completes it", () => {
    let s = run(sent(), { type: "tool_call", id: "call_1", name: "search_documents", arguments: { query: "port" } });
    expect(last(s).searches).toEqual([{ id: "call_1", query: "port", status: "running", result: null, name: "search_documents" }]);
    s = run(s, { type: "tool_result", ...toolResult({ reranked: true }) });
    const step = last(s).searches[0];
    expect(step.status).toBe("done");
    expect(step.result?.chunks).toHaveLength(2);
    expect(step.result?.reranked).toBe(true);
    expect(step.result).not.toHaveProperty("type");
  });

  it("progress events update their running tool; others are ignored", () => {
    let s = run(sent(), { type: "tool_call", id: "call_1", name: "summarize_documents", arguments: {} });
    s = run(s, { type: "progress", id: "call_1", stage: "map", done: 3, total: 12, message: "pages 5–9" });
    s = run(s, { type: "progress", id: "nope", stage: "map", done: 9, total: 9, message: "" });
    expect(last(s).searches[0].progress).toEqual({ stage: "map", done: 3, total: 12, message: "pages 5–9" });
  });

  it("a tool_result without a matching call still shows up", () => {
    const s = run(sent(), { type: "tool_result", ...toolResult({ id: "orphan" }) });
    expect(last(s).searches[0]).toMatchObject({ id: "orphan", status: "done" });
  });

  it("tokens append, done completes and stops sending", () => {
    let s = run(sent(), { type: "token", delta: "It is " }, { type: "token", delta: "11434 [1]." });
    expect(last(s).content).toBe("It is 11434 [1].");
    expect(last(s).status).toBe("streaming");
    s = run(s, {
      type: "done",
      message_id: "m2",
      finish_reason: "stop",
      usage: { prompt_tokens: 1, completion_tokens: 2, llm_calls: 1, tool_rounds: 1 },
      citations: { cited: [1], invalid: [] },
    });
    expect(last(s).status).toBe("complete");
    expect(last(s).id).toBe("m2");
    expect(s.sending).toBe(false);
  });

  it("error marks the message as error with the server's message", () => {
    const s = run(
      sent(),
      { type: "tool_call", id: "c", name: "search_documents", arguments: { query: "q" } },
      { type: "error", code: "llm_unreachable", message: "Start Ollama with `ollama serve`" },
    );
    expect(last(s).status).toBe("error");
    expect(last(s).error).toEqual({ code: "llm_unreachable", message: "Start Ollama with `ollama serve`" });
    expect(last(s).searches[0].status).toBe("stopped");
    expect(s.sending).toBe(false);
  });

  it("abort keeps the partial answer and marks it incomplete", () => {
    let s = run(sent(), { type: "token", delta: "Partial" });
    s = chatReducer(s, { type: "aborted" });
    expect(last(s).status).toBe("incomplete");
    expect(last(s).content).toBe("Partial");
    expect(last(s).connectionLost).toBe(false);
    expect(s.sending).toBe(false);
  });

  it("events after the message finished are ignored", () => {
    let s = chatReducer(run(sent(), { type: "token", delta: "A" }), { type: "aborted" });
    s = run(s, { type: "token", delta: "B" });
    expect(last(s).content).toBe("A");
  });

  it("connection_lost marks the message incomplete and retryable", () => {
    const s = chatReducer(run(sent(), { type: "token", delta: "x" }), { type: "connection_lost", message: "lost" });
    expect(last(s)).toMatchObject({ status: "incomplete", connectionLost: true, error: { code: "connection_lost" } });
  });

  it("request_failed shows the HTTP error on the message", () => {
    const s = chatReducer(sent(), { type: "request_failed", code: "http_400", message: "Message is empty" });
    expect(last(s)).toMatchObject({ status: "error", error: { code: "http_400", message: "Message is empty" } });
  });

  it("discard removes the failed assistant message and its prompt", () => {
    const s = chatReducer(chatReducer(sent(), { type: "connection_lost" }), { type: "discard", assistantKey: "a1" });
    expect(s.messages).toEqual([]);
  });

  it("loaded maps history; tool results without search_mode survive", () => {
    const s = chatReducer(initialChatState, {
      type: "loaded",
      thread: {
        id: "t1",
        title: "T",
        created_at: "",
        updated_at: "",
        messages: [
          serverMessage({ id: "u", role: "user", content: "q" }),
          serverMessage({
            id: "a",
            tool_calls: [{ id: "call_1", name: "search_documents", arguments: { query: "old" } }],
            tool_results: [bareToolResult("call_1", [chunk()])],
            status: "incomplete",
          }),
        ],
      },
    });
    expect(s.threadId).toBe("t1");
    expect(s.messages[1].searches[0]).toMatchObject({ query: "old", status: "done" });
    expect(s.messages[1].searches[0].result?.search_mode).toBeUndefined();
    expect(s.messages[1].status).toBe("incomplete");
  });
});

describe("helpers", () => {
  it("messageSources numbers chunks across searches in order", () => {
    const m = fromServerMessage(
      serverMessage({
        tool_calls: [
          { id: "a", name: "search_documents", arguments: { query: "1" } },
          { id: "b", name: "search_documents", arguments: { query: "2" } },
        ],
        tool_results: [toolResult({ id: "a" }), toolResult({ id: "b", chunks: [chunk({ id: 3 })] })],
      }),
    );
    expect(messageSources(m).map((c) => c.id)).toEqual([1, 2, 3]);
  });

  it("a call without a result is shown as stopped", () => {
    const m = fromServerMessage(
      serverMessage({ tool_calls: [{ id: "a", name: "search_documents", arguments: { query: "x" } }] }),
    );
    expect(m.searches[0].status).toBe("stopped");
  });

  describe("runs of issue 21", () => {
    const thread = (statuses: Message["status"][]) => ({
      id: "t1",
      title: "T",
      created_at: "",
      updated_at: "",
      messages: statuses.map((st, i) => ({
        ...serverMessage({ id: `m${i}`, role: i % 2 ? ("assistant" as const) : ("user" as const), content: `text ${i}` }),
        status: st,
        siblings: [`m${i}`],
      })),
    });
    const loaded = (statuses: Message["status"][], running: string | null = null) =>
      chatReducer(initialChatState, { type: "loaded", thread: { ...thread(statuses), running_message_id: running } });

    it("regenerate replaces the answer (and what follows) with a new streaming one", () => {
      const s = chatReducer(loaded(["complete", "complete", "complete", "error"]), {
        type: "start",
        mode: { kind: "regenerate", id: "m1" },
        userKey: "u",
        assistantKey: "a",
      });
      expect(s.messages.map((m) => [m.id, m.status])).toEqual([
        ["m0", "complete"],
        [null, "streaming"],
      ]);
      expect(last(s).prompt).toBe("text 0");
    });

    it("continue streams into the same message; tokens append", () => {
      let s = chatReducer(loaded(["complete", "incomplete"]), {
        type: "start",
        mode: { kind: "continue", id: "m1" },
        userKey: "u",
        assistantKey: "a",
      });
      expect(last(s)).toMatchObject({ id: "m1", status: "streaming", content: "text 1" });
      s = run(s, { type: "token", delta: " more" });
      expect(last(s).content).toBe("text 1 more");
    });

    it("edit puts the edited question in place and drops the rest; the thread event names both ids", () => {
      let s = chatReducer(loaded(["complete", "complete", "complete", "complete"]), {
        type: "start",
        mode: { kind: "edit", id: "m2", text: "new question" },
        userKey: "u",
        assistantKey: "a",
      });
      expect(s.messages.map((m) => m.content)).toEqual(["text 0", "text 1", "new question", ""]);
      s = run(s, { type: "thread", thread_id: "t1", message_id: "m9", question_id: "m8" } as ChatEvent);
      expect(s.messages.slice(2).map((m) => m.id)).toEqual(["m8", "m9"]);
    });

    it("attach replays a running answer from its start; a re-read keeps the keys shown", () => {
      expect(last(loaded(["complete", "streaming"])).status).toBe("incomplete"); // no run generates it
      let s = loaded(["complete", "streaming"], "m1");
      expect(last(s).status).toBe("streaming");
      s = chatReducer(s, { type: "attach", messageId: "m1", replay: true });
      expect(s.sending).toBe(true);
      expect(last(s).content).toBe("");
      const before = s.messages.map((m) => m.key);
      s = chatReducer(s, { type: "loaded", thread: thread(["complete", "complete"]) });
      expect(s.messages.map((m) => m.key)).toEqual(before);
    });

    it("stored messages carry siblings, model and feedback", () => {
      const m = fromServerMessage({ ...serverMessage({ id: "x" }), status: "complete", siblings: ["w", "x"], model: "llama", feedback: { message_id: "x", rating: "up", note: null, updated_at: "" } });
      expect(m).toMatchObject({ siblings: ["w", "x"], model: "llama", feedback: { rating: "up" } });
      const s = chatReducer({ ...initialChatState, messages: [m] }, { type: "feedback", id: "x", feedback: null });
      expect(s.messages[0].feedback).toBeNull();
    });
  });

  it("an error event 'stopped' (Stop here or in another tab) leaves the answer incomplete, without an error box", () => {
    const s = run(sent(), { type: "token", delta: "Part" }, { type: "error", code: "stopped", message: "Stopped — this answer is incomplete." });
    expect(last(s)).toMatchObject({ status: "incomplete", error: null, content: "Part" });
    expect(s.sending).toBe(false);
    const i = run(sent(), { type: "error", code: "interrupted", message: "The server stopped." });
    expect(last(i)).toMatchObject({ status: "incomplete", error: { code: "interrupted" } });
    const stored = fromServerMessage({ ...serverMessage({ status: "incomplete", error: { code: "stopped", message: "Stopped" } }) });
    expect(stored.error).toBeNull();
  });
});

describe("reading and retry events", () => {
  it("notes the reading until the first token, and a retry drops the failed text", () => {
    let m: ChatMessage = { key: "a", id: null, role: "assistant", content: "", status: "streaming", searches: [], error: null, connectionLost: false };
    m = applyEvent(m, { type: "reading", passages: 6 });
    expect(m.reading?.passages).toBe(6);
    m = applyEvent(m, { type: "token", delta: "[1], [2]" });
    expect(m.reading).toBeNull();
    m = applyEvent(m, { type: "retry", reason: "only_citations", message: "The model answered with citation markers only. Asking again…" });
    expect(m.content).toBe("");
    expect(m.retried).toMatch(/Asking again/);
    m = applyEvent(m, { type: "token", delta: "Lava [1]." });
    m = applyEvent(m, { type: "done", message_id: "m1", finish_reason: "stop", usage: { prompt_tokens: 0, completion_tokens: 0, llm_calls: 2, tool_rounds: 1 }, citations: { cited: [1], invalid: [] } });
    expect(m.content).toBe("Lava [1].");
    expect(m.retried).toBeNull();
  });
});
