import { useCallback, useEffect, useReducer, useRef, useState } from "react";
import { api, ApiError, isSessionLost } from "../api/client";
import { ConnectionLostError, isAbortError, streamChat } from "../api/chat";
import { localId } from "../lib/format";
import { chatReducer, initialChatState } from "./state";

interface Options {
  /** A new thread was created by the server (first message of a new chat). */
  onThreadCreated?: (threadId: string) => void;
  /** A send finished (any outcome): refresh the thread list. */
  onSettled?: () => void;
}

/** How a send ended. "unauthorized": the session ended before the server took the message. */
export type SendOutcome = "sent" | "failed" | "unauthorized" | "stopped";

export interface SendOptions {
  /** Narrow the search to these collections. */
  collectionIds?: string[];
}

export function useChat(opts: Options = {}) {
  const [state, dispatch] = useReducer(chatReducer, initialChatState);
  const [loading, setLoading] = useState(false);
  const [loadError, setLoadError] = useState<string | null>(null);
  const stream = useRef<AbortController | null>(null);
  const loadCtrl = useRef<AbortController | null>(null);
  const stateRef = useRef(state);
  stateRef.current = state;
  const optsRef = useRef(opts);
  optsRef.current = opts;
  /** Retry re-sends with the same options (collection filter). */
  const lastSendOpts = useRef<SendOptions>({});

  /** Abort the active stream (if any) and mark its message incomplete. */
  const stop = useCallback(() => {
    const c = stream.current;
    if (!c) return;
    stream.current = null;
    c.abort();
    dispatch({ type: "aborted" });
  }, []);

  const send = useCallback(async (text: string, sendOpts: SendOptions = {}): Promise<SendOutcome> => {
    if (stream.current || !text.trim()) return "failed";
    lastSendOpts.current = sendOpts;
    const c = new AbortController();
    stream.current = c;
    const threadId = stateRef.current.threadId;
    dispatch({ type: "send", text, userKey: localId("u"), assistantKey: localId("a") });
    const active = () => stream.current === c;
    let outcome: SendOutcome = "sent";
    const collections = sendOpts.collectionIds?.length ? { collection_ids: sendOpts.collectionIds } : {};
    try {
      await streamChat(
        { ...(threadId ? { thread_id: threadId } : {}), message: text, ...collections },
        (ev) => {
          if (!active()) return;
          if (ev.type === "thread" && ev.thread_id !== threadId) {
            stateRef.current = { ...stateRef.current, threadId: ev.thread_id };
            optsRef.current.onThreadCreated?.(ev.thread_id);
          }
          dispatch({ type: "event", event: ev });
        },
        c.signal,
      );
    } catch (e) {
      outcome = e instanceof ApiError && isSessionLost(e) ? "unauthorized" : isAbortError(e) ? "stopped" : "failed";
      if (!active()) return outcome === "unauthorized" ? outcome : "stopped"; // stopped or superseded: handled
      if (isAbortError(e)) dispatch({ type: "aborted" });
      else if (e instanceof ConnectionLostError) dispatch({ type: "connection_lost", message: e.message });
      else if (e instanceof ApiError) dispatch({ type: "request_failed", code: `http_${e.status}`, message: e.message });
      else dispatch({ type: "request_failed", message: e instanceof Error ? e.message : String(e) });
    } finally {
      if (active()) stream.current = null;
      optsRef.current.onSettled?.();
    }
    return outcome;
  }, []);

  const retry = useCallback(
    (assistantKey: string) => {
      const msg = stateRef.current.messages.find((m) => m.key === assistantKey);
      if (!msg?.prompt || stream.current) return;
      dispatch({ type: "discard", assistantKey });
      void send(msg.prompt, lastSendOpts.current);
    },
    [send],
  );

  const reset = useCallback(() => {
    stop();
    loadCtrl.current?.abort();
    setLoadError(null);
    setLoading(false);
    dispatch({ type: "reset" });
  }, [stop]);

  const load = useCallback(
    async (id: string) => {
      stop();
      loadCtrl.current?.abort();
      const c = new AbortController();
      loadCtrl.current = c;
      setLoading(true);
      setLoadError(null);
      try {
        const thread = await api.getThread(id, c.signal);
        if (!c.signal.aborted) dispatch({ type: "loaded", thread });
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
    [stop],
  );

  // Abort any in-flight stream when the page unmounts.
  useEffect(
    () => () => {
      stream.current?.abort();
      loadCtrl.current?.abort();
    },
    [],
  );

  return { state, loading, loadError, send, stop, retry, reset, load };
}
