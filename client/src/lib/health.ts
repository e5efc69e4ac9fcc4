import { useSyncExternalStore } from "react";
import type { Health } from "../api/types";

/**
 * The last GET /api/health answer, shared: HealthBanner polls and publishes it; other components read it
 * here (no second poller). Null until the first answer, or when the server could not be reached.
 */
let current: Health | null = null;
const listeners = new Set<() => void>();

export function publishHealth(health: Health | null): void {
  if (health === current) return;
  current = health;
  for (const listener of listeners) listener();
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Ask the banner's poller to check now (e.g. an answer just came: the LLM works, whatever the banner said). */
const checkers = new Set<() => void>();
export function requestHealthCheck(): void {
  for (const check of checkers) check();
}
export function onHealthCheckRequest(check: () => void): () => void {
  checkers.add(check);
  return () => checkers.delete(check);
}

export function useHealth(): Health | null {
  return useSyncExternalStore(subscribe, () => current);
}

/** Why the LLM rerank cannot work now (its model server is unreachable), or null when it may. */
export function rerankUnavailable(health: Health | null): string | null {
  const llm = health?.llm;
  if (!llm || llm.reachable) return null;
  const server = llm.provider === "ollama" ? "Ollama" : "the model server";
  return `Rerank needs the language model, and ${server} is not reachable right now.`;
}
