import { useCallback, useEffect, useRef, useState } from "react";
import { threadsApi } from "../api/threads";
import type { Thread } from "../api/types";
import { announce, listen } from "./channel";

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * The conversation list, kept in sync with other tabs: a tab that creates, renames or deletes a thread (or
 * finishes an answer) says so on the "ragchat" channel and the others refetch. `onAnswerNews` hears another
 * tab's answer starting or ending in a thread.
 */
export function useThreads(onAnswerNews: (threadId: string) => void) {
  const [threads, setThreads] = useState<Thread[]>([]);
  const [error, setError] = useState<string | null>(null);
  const news = useRef(onAnswerNews);
  news.current = onAnswerNews;

  const refresh = useCallback(() => {
    threadsApi
      .list()
      .then((t) => {
        setThreads(t);
        setError(null);
      })
      .catch((e: unknown) => setError(`Couldn't load conversations: ${errText(e)}`));
  }, []);

  useEffect(refresh, [refresh]);

  useEffect(
    () =>
      listen((n) => {
        if (n.type === "threads") refresh();
        else {
          if (n.type === "answer-done") refresh();
          news.current(n.thread_id);
        }
      }),
    [refresh],
  );

  const rename = async (id: string, title: string) => {
    try {
      const t = await threadsApi.rename(id, title);
      setThreads((ts) => ts.map((x) => (x.id === id ? { ...x, ...t } : x)));
      setError(null);
      announce({ type: "threads" });
    } catch (e) {
      setError(`Rename failed: ${errText(e)}`);
      throw e;
    }
  };

  const remove = async (id: string) => {
    try {
      await threadsApi.remove(id);
      setThreads((ts) => ts.filter((x) => x.id !== id));
      setError(null);
      announce({ type: "threads" });
      return true;
    } catch (e) {
      setError(`Delete failed: ${errText(e)}`);
      return false;
    }
  };

  return { threads, error, setError, refresh, rename, remove };
}
