import { useEffect, useState } from "react";
import { api } from "../api/client";
import type { Health } from "../api/types";

export const HEALTH_POLL_MS = 30_000;

type Problem = { kind: "server" | "ollama" | "model"; text: string } | null;

export function healthProblem(h: Health | null, failed: boolean): Problem {
  if (failed) return { kind: "server", text: "Can't reach the ragchat server. Is it running?" };
  if (!h) return null;
  const o = h.ollama;
  if (!o) return null;
  if (!o.reachable)
    return {
      kind: "ollama",
      text: o.message || "Ollama is not reachable. Start it with `ollama serve` — chat needs it (search still works).",
    };
  if (!o.model_available)
    return {
      kind: "model",
      text: o.message || `The model "${o.model}" is not installed. Run \`ollama pull ${o.model}\`.`,
    };
  return null;
}

/** Polls GET /api/health every 30 s and warns when chat can't work. */
export function HealthBanner() {
  const [health, setHealth] = useState<Health | null>(null);
  const [failed, setFailed] = useState(false);

  useEffect(() => {
    let alive = true;
    const ctrl = new AbortController();
    const check = () =>
      api
        .health(ctrl.signal)
        .then((h) => alive && (setHealth(h), setFailed(false)))
        .catch((e: unknown) => {
          if (alive && !(e instanceof DOMException && e.name === "AbortError")) setFailed(true);
        });
    void check();
    const t = window.setInterval(check, HEALTH_POLL_MS);
    return () => {
      alive = false;
      ctrl.abort();
      window.clearInterval(t);
    };
  }, []);

  const problem = healthProblem(health, failed);
  if (!problem) return null;
  return (
    <div className="banner" role="alert" data-testid="health-banner" data-kind={problem.kind}>
      <strong>{problem.kind === "server" ? "Server offline" : "Chat unavailable"}:</strong>{" "}
      <CodeText text={problem.text} />
    </div>
  );
}

/** Render `backtick` spans as <code> without any HTML parsing. */
export function CodeText({ text }: { text: string }) {
  return (
    <>
      {text.split(/(`[^`]+`)/g).map((part, i) =>
        part.startsWith("`") && part.endsWith("`") && part.length > 1 ? (
          <code key={i}>{part.slice(1, -1)}</code>
        ) : (
          part
        ),
      )}
    </>
  );
}
