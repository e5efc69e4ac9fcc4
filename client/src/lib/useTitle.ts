import { useEffect } from "react";

/**
 * document.title per page ("Documents — ragchat") and per thread. Several components may ask at once (the
 * app shell names the page, the chat page the thread): the highest `priority` wins, then the latest asked.
 */

const SUFFIX = "ragchat";
interface Entry {
  id: number;
  title: string;
  priority: number;
}
const entries: Entry[] = [];
let nextId = 1;

function apply() {
  let best: Entry | null = null;
  for (const e of entries) if (!best || e.priority > best.priority || (e.priority === best.priority && e.id > best.id)) best = e;
  document.title = best ? `${best.title} — ${SUFFIX}` : SUFFIX;
}

/** The tab's title is `title — ragchat` while the component is mounted (nothing: no claim). The shell's page
 * names use priority 0; a page's own (a thread's title) the default 1, so it wins whatever mounts first. */
export function useTitle(title: string | null | undefined, priority = 1) {
  useEffect(() => {
    const text = title?.trim();
    if (!text) return;
    const entry = { id: nextId++, title: text, priority };
    entries.push(entry);
    apply();
    return () => {
      entries.splice(entries.indexOf(entry), 1);
      apply();
    };
  }, [title, priority]);
}
