/**
 * Tabs of one browser tell each other what changed (BroadcastChannel "ragchat"), so that their thread lists
 * stay in sync and a thread open in two tabs shows the answer in progress in both.
 */
export type ChatNews =
  | { type: "threads" } // created, renamed or deleted: refetch the list
  | { type: "answer-started"; thread_id: string }
  | { type: "answer-done"; thread_id: string };

const NAME = "ragchat";
/** This tab: its own channels hear each other, so every message says which tab sent it. */
const TAB = Math.random().toString(36).slice(2);

let sender: BroadcastChannel | null = null;

export function announce(news: ChatNews): void {
  if (typeof BroadcastChannel === "undefined") return;
  try {
    sender ??= new BroadcastChannel(NAME);
    sender.postMessage({ ...news, tab: TAB });
  } catch {
    /* closed or unsupported: other tabs catch up on their next load */
  }
}

/** Hear other tabs' news (never this tab's own); returns the unsubscribe. */
export function listen(onNews: (news: ChatNews) => void): () => void {
  if (typeof BroadcastChannel === "undefined") return () => undefined;
  const ch = new BroadcastChannel(NAME);
  ch.onmessage = (e: MessageEvent<ChatNews & { tab?: string }>) => {
    const d = e.data;
    if (d && typeof d === "object" && typeof d.type === "string" && d.tab !== TAB) onNews(d);
  };
  return () => ch.close();
}

/** The thread the Chat page shows in this tab, so that coming back to Chat opens it again. */
const CURRENT = "ragchat:current-thread";

export function rememberThread(id: string | null): void {
  try {
    if (id) window.sessionStorage.setItem(CURRENT, id);
    else window.sessionStorage.removeItem(CURRENT);
  } catch {
    /* storage disabled */
  }
}

export function rememberedThread(): string | null {
  try {
    return window.sessionStorage.getItem(CURRENT);
  } catch {
    return null;
  }
}
