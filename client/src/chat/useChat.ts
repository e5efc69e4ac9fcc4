import { useCallback, useEffect, useReducer, useRef, useState } from "react";
import { ApiError, errorMessage, isSessionLost } from "../api/client";
import {
  attachStream,
  ConnectionLostError,
  isAbortError,
  postChat,
  readChatStream,
  type ChatRequest,
  type EventHandler,
} from "../api/chat";
import { feedbackApi, type Rating } from "../api/feedback";
import { threadsApi, type ThreadSettings } from "../api/threads";
import { localId } from "../lib/format";
import { announce } from "./channel";
import { chatReducer, initialChatState, type StartMode } from "./state";

interface Options {
  /** A new thread was created by the server (first message of a new chat). */
  onThreadCreated?: (threadId: string) => void;
  /** A run finished (any outcome): refresh the thread list. */
  onSettled?: () => void;
  /** The question named documents or collections that are gone (deleted, or no longer shared): a 404 naming
   * them (docs/API.md "Unreadable ids"). The page drops them from the chat's scope. */
  onScopeGone?: (kind: "document" | "collection", ids: string[]) => void;
}

/** The ids of a 404 "not found" about the question's scope (`extra: {kind, ids}`), or null. */
export function goneScope(e: unknown): { kind: "document" | "collection"; ids: string[] } | null {
  if (!(e instanceof ApiError) || e.status !== 404) return null;
  const extra = (e.extra ?? {}) as { kind?: unknown; ids?: unknown };
  if ((extra.kind !== "document" && extra.kind !== "collection") || !Array.isArray(extra.ids)) return null;
  return { kind: extra.kind, ids: extra.ids.filter((i): i is string => typeof i === "string") };
}

/**
 * How a send ended. "busy": the thread already has an answer in progress (409); "rejected": the server refused
 * the question (400, e.g. too long); "unauthorized": the session ended before the server took it.
 */
export type SendOutcome = "sent" | "failed" | "unauthorized" | "stopped" | "busy" | "rejected";

export const BUSY_MESSAGE = "An answer is being generated in this conversation. Wait for it to finish, or stop it.";

const settingsBody = (s: ThreadSettings): Partial<ChatRequest> => {
  const out: Partial<ChatRequest> = {};
  if (s.document_ids?.length) out.document_ids = s.document_ids;
  if (s.collection_ids?.length) out.collection_ids = s.collection_ids;
  if (s.search_mode) out.search_mode = s.search_mode;
  if (s.rerank != null) out.rerank = s.rerank;
  if (s.model) out.model = s.model;
  if (s.documents_only != null) out.documents_only = s.documents_only;
  return out;
};

/**
 * One thread's messages and its answer in progress. The answer runs on the server: leaving the page (or another
 * thread) only closes this tab's connection; `load` re-attaches to a running answer, `stop` asks the server to
 * stop it.
 */
export function useChat(opts: Options = {}) {
  const [state, dispatch] = useReducer(chatReducer, initialChatState);
  const [loading, setLoading] = useState(false);
  const [loadError, setLoadError] = useState<string | null>(null);
  /** Why the last question was not taken (kept in the composer): busy, too long, unreachable. */
  const [notice, setNotice] = useState<string | null>(null);
  /** What the polite live region says: an answer started, finished, stopped or failed (never each token). */
  const [live, setLive] = useState("");
  /** CHAT_MAX_MESSAGE_CHARS, once a "too long" refusal named it (the counter then uses it). */
  const [limit, setLimit] = useState<number | null>(null);
  const stream = useRef<AbortController | null>(null);
  const stopWanted = useRef<AbortController | null>(null);
  const lastId = useRef<string | null>(null);
  const loadCtrl = useRef<AbortController | null>(null);
  const stateRef = useRef(state);
  stateRef.current = state;
  const optsRef = useRef(opts);
  optsRef.current = opts;

  /** Close this tab's connection to the answer in progress (the server's run goes on). */
  const detach = useCallback(() => {
    const c = stream.current;
    stream.current = null;
    c?.abort();
  }, []);

  /** Re-read the thread (ids, branches, feedback); `attach`: follow an answer in progress found there. */
  const refresh = useCallback(async (id: string, attach = false) => {
    try {
      const thread = await threadsApi.get(id);
      if (stateRef.current.threadId !== id || stream.current) return;
      dispatch({ type: "loaded", thread });
      if (attach && thread.running_message_id) void follow(id, thread.running_message_id);
    } catch {
      /* the shown messages stay; the next load tells */
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  const handler = useCallback((c: AbortController): EventHandler => {
    return (ev, id) => {
      if (ev.type === "thread" && stopWanted.current === c) {
        stopWanted.current = null; // Stop was pressed before the thread was known
        void threadsApi.stop(ev.thread_id).finally(() => c.abort());
        return;
      }
      if (stream.current !== c) return;
      if (id) lastId.current = id;
      if (ev.type === "thread" && ev.thread_id !== stateRef.current.threadId) {
        stateRef.current = { ...stateRef.current, threadId: ev.thread_id };
        optsRef.current.onThreadCreated?.(ev.thread_id);
        announce({ type: "threads" });
      }
      if (ev.type === "thread") announce({ type: "answer-started", thread_id: ev.thread_id });
      if (ev.type === "done") setLive("The answer is complete.");
      if (ev.type === "error") setLive(`The answer failed: ${ev.message}`);
      dispatch({ type: "event", event: ev });
    };
  }, []);

  /** Read a run to its end; a dropped connection re-attaches once from the last event seen. */
  const consume = useCallback(
    async (c: AbortController, read: () => Promise<unknown>) => {
      try {
        await read();
      } catch (e) {
        if (stream.current !== c) return; // stopped, superseded or left: handled there
        const tid = stateRef.current.threadId;
        if (e instanceof ConnectionLostError && tid && lastId.current) {
          try {
            await attachStream(tid, lastId.current, handler(c), c.signal);
          } catch (again) {
            if (stream.current === c && !isAbortError(again)) dispatch({ type: "connection_lost", message: e.message });
          }
        } else if (isAbortError(e)) dispatch({ type: "aborted" });
        else if (e instanceof ConnectionLostError) dispatch({ type: "connection_lost", message: e.message });
        else dispatch({ type: "request_failed", code: e instanceof ApiError ? `http_${e.status}` : undefined, message: errorMessage(e) });
      } finally {
        if (stream.current === c) {
          stream.current = null;
          const tid = stateRef.current.threadId;
          if (tid) {
            announce({ type: "answer-done", thread_id: tid });
            void refresh(tid);
          }
        }
        optsRef.current.onSettled?.();
      }
    },
    [handler, refresh],
  );

  /** Attach to the thread's answer in progress, replaying it from its first event. */
  const follow = useCallback(
    async (threadId: string, messageId: string) => {
      detach();
      const c = new AbortController();
      stream.current = c;
      lastId.current = `${messageId}:0`;
      dispatch({ type: "attach", messageId, replay: true });
      setLive("An answer is being generated.");
      await consume(c, () => attachStream(threadId, `${messageId}:0`, handler(c), c.signal));
    },
    [consume, detach, handler],
  );

  /** POST a question (or regenerate/continue/edit); shows it once the server took it. */
  const run = useCallback(
    async (body: ChatRequest, mode: StartMode): Promise<SendOutcome> => {
      setNotice(null);
      const c = new AbortController();
      let res: Response;
      try {
        res = await postChat(body, c.signal);
      } catch (e) {
        if (e instanceof ApiError && isSessionLost(e)) return "unauthorized";
        if (e instanceof ApiError && e.status === 409) {
          setNotice(BUSY_MESSAGE);
          setLive(BUSY_MESSAGE);
          return "busy";
        }
        const gone = goneScope(e);
        if (gone && optsRef.current.onScopeGone) {
          optsRef.current.onScopeGone(gone.kind, gone.ids);
          const what = gone.ids.length === 1 ? `A ${gone.kind} in this chat's scope is` : `${gone.ids.length} ${gone.kind}s in this chat's scope are`;
          const msg = `${what} gone (deleted, or no longer shared with you), so it was taken out of the scope. Send your question again.`;
          setNotice(msg);
          setLive(msg);
          return "rejected";
        }
        const named = e instanceof ApiError && e.status === 400 ? /the limit is (\d+)/.exec(e.detail) : null;
        if (named) setLimit(Number(named[1]));
        setNotice(errorMessage(e));
        setLive(errorMessage(e));
        return e instanceof ApiError && e.status < 500 ? "rejected" : "failed";
      }
      detach();
      stream.current = c;
      lastId.current = null;
      dispatch({ type: "start", mode, userKey: localId("u"), assistantKey: localId("a") });
      setLive("Generating an answer.");
      void consume(c, () => readChatStream(res, handler(c), c.signal));
      return "sent";
    },
    [consume, detach, handler],
  );

  const withThread = (settings: ThreadSettings): Partial<ChatRequest> => {
    const tid = stateRef.current.threadId;
    return { ...(tid ? { thread_id: tid } : {}), ...settingsBody(settings) };
  };

  /** `task`: summarize or compare the scope's documents whole (the Summarise action) before answering. */
  const send = (text: string, settings: ThreadSettings = {}, task?: ChatRequest["task"]) =>
    text.trim()
      ? run({ ...withThread(settings), message: text, ...(task ? { task } : {}) }, { kind: "new", text })
      : Promise.resolve<SendOutcome>("failed");
  const regenerate = (id: string, settings: ThreadSettings = {}) =>
    run({ ...withThread(settings), message: "", regenerate_id: id }, { kind: "regenerate", id });
  const continueAnswer = (id: string, settings: ThreadSettings = {}) =>
    run({ ...withThread(settings), message: "", continue_id: id }, { kind: "continue", id });
  const edit = (id: string, text: string, settings: ThreadSettings = {}) =>
    run({ ...withThread(settings), message: text, edit_id: id }, { kind: "edit", id, text });

  /** Stop the answer in progress: the server saves it as incomplete. */
  const stop = useCallback(async () => {
    const c = stream.current;
    if (!stateRef.current.sending) return;
    const tid = stateRef.current.threadId;
    stream.current = null;
    dispatch({ type: "aborted" });
    setLive("The answer was stopped.");
    if (!tid) {
      stopWanted.current = c; // the thread is not known yet: stop once it is
      return;
    }
    try {
      await threadsApi.stop(tid);
    } catch {
      /* an older server stops when the connection closes */
    }
    c?.abort();
    announce({ type: "answer-done", thread_id: tid });
    void refresh(tid);
  }, [refresh]);

  const load = useCallback(
    async (id: string, quiet = false) => {
      detach();
      loadCtrl.current?.abort();
      const c = new AbortController();
      loadCtrl.current = c;
      if (!quiet) setLoading(true);
      setLoadError(null);
      setNotice(null);
      try {
        const thread = await threadsApi.get(id, c.signal);
        if (c.signal.aborted) return;
        dispatch({ type: "loaded", thread });
        if (thread.running_message_id) void follow(id, thread.running_message_id);
      } catch (e) {
        if (c.signal.aborted || isAbortError(e)) return;
        dispatch({ type: "reset" });
        setLoadError(
          e instanceof ApiError && e.status === 404
            ? "This conversation doesn't exist (it may have been deleted)."
            : `Couldn't load this conversation: ${e instanceof Error ? e.message : String(e)}`,
        );
      } finally {
        if (loadCtrl.current === c) setLoading(false);
      }
    },
    [detach, follow],
  );

  /** Another tab started or finished an answer in this thread: show it (attached) unless this tab runs it. */
  const otherTabNews = useCallback(
    (threadId: string) => {
      if (stateRef.current.threadId === threadId && !stream.current) void refresh(threadId, true);
    },
    [refresh],
  );

  const retry = useCallback(
    (assistantKey: string) => {
      const msg = stateRef.current.messages.find((m) => m.key === assistantKey);
      const tid = stateRef.current.threadId;
      if (!msg || stream.current) return;
      if (tid && msg.id) return void load(tid, true); // the answer may have finished on the server
      if (!msg.prompt) return;
      dispatch({ type: "discard", assistantKey });
      void send(msg.prompt);
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [load],
  );

  const rate = async (id: string, rating: Rating | null, note: string | null) => {
    const feedback = await feedbackApi.put(id, rating, note);
    dispatch({ type: "feedback", id, feedback });
  };

  /** Show another branch (the sibling `messageId`). */
  const branch = async (messageId: string) => {
    const tid = stateRef.current.threadId;
    if (!tid || stream.current) return;
    try {
      dispatch({ type: "loaded", thread: await threadsApi.branch(tid, messageId) });
    } catch (e) {
      setNotice(`Couldn't switch branches: ${errorMessage(e)}`);
    }
  };

  const reset = useCallback(() => {
    detach();
    loadCtrl.current?.abort();
    setLoadError(null);
    setLoading(false);
    setNotice(null);
    dispatch({ type: "reset" });
  }, [detach]);

  // Leaving the page closes the connection only: the answer keeps generating on the server.
  useEffect(
    () => () => {
      detach();
      loadCtrl.current?.abort();
    },
    [detach],
  );

  return {
    state,
    loading,
    loadError,
    notice,
    setNotice,
    live,
    limit,
    send,
    regenerate,
    continueAnswer,
    edit,
    stop,
    retry,
    reset,
    load,
    rate,
    branch,
    otherTabNews,
  };
}
