import type { ChatMessage } from "./state";

/**
 * The answer searched, and no search found a passage that matches the question well enough (every search's
 * confidence, computed from the passages the model was given, is "insufficient"): "Not in your documents".
 */
export function notCovered(message: ChatMessage): boolean {
  const done = message.searches.filter((s) => s.status === "done" && s.result);
  return (
    message.role === "assistant" &&
    message.status === "complete" &&
    done.length > 0 &&
    done.length === message.searches.length &&
    done.every((s) => !!(s.result?.confidence?.insufficient ?? s.result?.confidence?.insufficient_confidence))
  );
}
