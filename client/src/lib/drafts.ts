/**
 * Unsent chat drafts in sessionStorage (this tab only), one per user and thread, so a draft survives
 * the page being replaced by the login form when the session ends mid-use. Cleared on logout.
 */
const PREFIX = "ragchat:draft:";

export const draftKey = (userId: string | null | undefined, threadId: string | null | undefined) =>
  `${PREFIX}${userId || "local"}:${threadId || "new"}`;

export function readDraft(key: string): string {
  try {
    return window.sessionStorage.getItem(key) ?? "";
  } catch {
    return ""; // storage disabled
  }
}

export function writeDraft(key: string, text: string): void {
  try {
    if (text) window.sessionStorage.setItem(key, text);
    else window.sessionStorage.removeItem(key);
  } catch {
    /* storage full or disabled: the draft just isn't kept */
  }
}

export function clearDrafts(): void {
  try {
    const s = window.sessionStorage;
    const keys: string[] = [];
    for (let i = 0; i < s.length; i++) {
      const k = s.key(i);
      if (k?.startsWith(PREFIX)) keys.push(k);
    }
    for (const k of keys) s.removeItem(k);
  } catch {
    /* nothing to clear */
  }
}
