import type { ChatMessage } from "./state";

/**
 * The answer searched, and no search found a passage that matches the question well enough (every search's
 * confidence, computed from the passages the model was given, is "insufficient") and the answer's check did not
 * find it supported: "Not in your documents". Reports of older releases carry no verdict: the searches decide.
 */
export function notCovered(message: ChatMessage): boolean {
  // the server's verdict, which also weighs the answer's checks: a fully supported answer is never "not covered"
  const decided = message.citations?.not_covered;
  if (typeof decided === "boolean") return message.role === "assistant" && message.status === "complete" && decided;
  const done = message.searches.filter((s) => s.status === "done" && s.result);
  return (
    message.role === "assistant" &&
    message.status === "complete" &&
    done.length > 0 &&
    done.length === message.searches.length &&
    done.every((s) => !!(s.result?.confidence?.insufficient ?? s.result?.confidence?.insufficient_confidence))
  );
}
