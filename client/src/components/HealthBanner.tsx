import { useEffect, useRef, useState } from "react";
import { healthApi } from "../api/health";
import { reembedApi } from "../api/reembed";
import type { Health, LlmStatus, ReembedProgress } from "../api/types";
import { Icon } from "./Icon";
import { onHealthCheckRequest, publishHealth } from "../lib/health";

export const HEALTH_POLL_MS = 30_000;
/** While a problem shows, it is checked this often: the banner goes soon after the LLM (or server) is back. */
export const PROBLEM_POLL_MS = 5_000;
/** How often the re-embedding progress is polled while the notice shows it. */
export const REEMBED_POLL_MS = 5_000;

/** "ollama": the Ollama server is down; "llm": another (OpenAI-compatible) model server is down. */
export type ProblemKind = "server" | "database" | "ollama" | "llm" | "model";
type Problem = { kind: ProblemKind; text: string } | null;

/** The chat model's status (`llm`); null when the answer lacks it. */
export function llmStatus(h: Health): LlmStatus | null {
  return h.llm ?? null;
}

export function healthProblem(h: Health | null, failed: boolean): Problem {
  if (failed) return { kind: "server", text: "Can't reach the ragchat server. Is it running?" };
  if (!h) return null;
  if (h.status === "down")
    return {
      kind: "database",
      text: `The server can't reach its database${h.db?.error ? ` (${h.db.error})` : ""}. ${
        h.db?.embedded
          ? "It restarts its own database by itself: wait a few seconds."
          : "Check that Postgres is running and DATABASE_URL is right."
      } Nothing works until it answers.`,
    };
  const llm = llmStatus(h);
  if (!llm) return null;
  const ollama = llm.provider === "ollama";
  if (!llm.reachable)
    return {
      kind: ollama ? "ollama" : "llm",
      text:
        llm.message ||
        (ollama
          ? "Ollama is not reachable. Start it with `ollama serve` — chat needs it (search still works)."
          : llm.provider === "openai"
            ? "The model server is not reachable. Check `OPENAI_BASE_URL` — chat needs it (search still works)."
            : "The model server is not reachable — chat needs it (search still works)."),
    };
  if (!llm.model_available)
    return {
      kind: "model",
      text:
        llm.message ||
        (ollama
          ? `The model "${llm.model}" is not installed. Run \`ollama pull ${llm.model}\`.`
          : `The model "${llm.model}" is not available on the model server. Set \`CHAT_MODEL\` to a model it serves.`),
    };
  return null;
}

type Notice = { status: "mismatch" | "reembedding"; text: string } | null;

/** A non-blocking notice when the stored vectors are not (yet) from the configured embedding model. */
export function embeddingsNotice(h: Health | null, failed: boolean): Notice {
  const e = failed ? null : h?.embeddings;
  if (!e || (e.status !== "mismatch" && e.status !== "reembedding")) return null;
  if (e.message) return { status: e.status, text: e.message };
  const stored = e.stored?.model ?? "another model";
  const configured = e.configured.model;
  return e.status === "reembedding"
    ? { status: e.status, text: `Re-embedding with ${configured}; search uses ${stored} until it finishes.` }
    : {
        status: e.status,
        text: `The stored vectors were made by ${stored}, but the configured embedding model is ${configured}. Search keeps using ${stored}; run \`ragchat reembed\` to switch.`,
      };
}

/**
 * Polls GET /api/health every 30 s (every 5 s while a problem shows, and at once when the tab comes back or an
 * answer arrives: a stale "Chat unavailable" would contradict the answer under it). Warns (role="alert") when chat can't work, and shows a
 * non-blocking notice (role="status") when the embedding model changed or a re-embed is under way,
 * with its progress when GET /api/admin/reembed answers.
 */
export function HealthBanner() {
  const [health, setHealth] = useState<Health | null>(null);
  const [failed, setFailed] = useState(false);
  const [progress, setProgress] = useState<ReembedProgress | null>(null);
  const [dismissed, setDismissed] = useState<string | null>(null);
  const checkNow = useRef<() => void>(() => undefined);

  useEffect(() => {
    let alive = true;
    const ctrl = new AbortController();
    const check = () =>
      healthApi
        .get(ctrl.signal)
        .then((h) => alive && (setHealth(h), setFailed(false), publishHealth(h)))
        .catch((e: unknown) => {
          if (!alive || isAbort(e)) return;
          setFailed(true);
          publishHealth(null);
        });
    checkNow.current = () => void check();
    void check();
    const t = window.setInterval(check, HEALTH_POLL_MS);
    // Back to the tab, or back online: what the banner says may be old.
    const onVisible = () => document.visibilityState === "visible" && void check();
    const offRequest = onHealthCheckRequest(() => void check());
    window.addEventListener("focus", onVisible);
    window.addEventListener("online", onVisible);
    document.addEventListener("visibilitychange", onVisible);
    return () => {
      alive = false;
      ctrl.abort();
      window.clearInterval(t);
      offRequest();
      window.removeEventListener("focus", onVisible);
      window.removeEventListener("online", onVisible);
      document.removeEventListener("visibilitychange", onVisible);
    };
  }, []);

  const problem = healthProblem(health, failed);
  const problemKind = problem?.kind ?? null;
  // A problem shown: look again often, so that it is not shown long after it was fixed.
  useEffect(() => {
    if (!problemKind) return;
    const t = window.setInterval(() => checkNow.current(), PROBLEM_POLL_MS);
    return () => window.clearInterval(t);
  }, [problemKind]);
  const notice = embeddingsNotice(health, failed);
  const reembedding = notice?.status === "reembedding";

  // While re-embedding, poll its progress; its `embeddings` also tells when the switch is done.
  // Not an admin (or an older server): no progress, the notice just shows the message.
  useEffect(() => {
    if (!reembedding) return;
    let alive = true;
    const ctrl = new AbortController();
    const poll = () =>
      reembedApi
        .progress(ctrl.signal)
        .then((p) => {
          if (!alive) return;
          setProgress(p.state === "building" ? p : null);
          const embeddings = p.embeddings;
          if (embeddings) setHealth((h) => h && { ...h, embeddings });
        })
        .catch((e: unknown) => {
          if (!alive || isAbort(e)) return;
          window.clearInterval(t);
          setProgress(null);
        });
    void poll();
    const t = window.setInterval(poll, REEMBED_POLL_MS);
    return () => {
      alive = false;
      ctrl.abort();
      window.clearInterval(t);
      setProgress(null); // no stale numbers at the start of a later re-embed
    };
  }, [reembedding]);

  const noticeKey = notice && `${notice.status}:${notice.text}`;

  const dismiss = () => {
    setDismissed(noticeKey);
    // The button goes away: continue from the start of the page's content.
    document.getElementById("main")?.focus();
  };

  return (
    <>
      {problem && (
        <div className="banner" role="alert" data-testid="health-banner" data-kind={problem.kind}>
          <strong>
            {problem.kind === "server"
              ? "Server offline"
              : problem.kind === "database"
                ? "Database unavailable"
                : "Chat unavailable"}
            :
          </strong>{" "}
          <CodeText text={problem.text} />
        </div>
      )}
      {notice && noticeKey !== dismissed && (
        <div className="banner banner-info" data-testid="embeddings-notice" data-status={notice.status}>
          <div className="banner-body" role="status">
            <strong>{reembedding ? "Re-embedding documents" : "Embedding model changed"}:</strong>{" "}
            <CodeText text={notice.text} />
            {reembedding && progress && <ReembedBar progress={progress} />}
          </div>
          <button
            type="button"
            className="icon-button banner-dismiss"
            aria-label="Dismiss notice"
            title="Dismiss"
            onClick={dismiss}
            data-testid="embeddings-notice-dismiss"
          >
            <Icon name="close" />
          </button>
        </div>
      )}
    </>
  );
}

/** Progress of a re-embed. The numbers are not live text (no announcement every poll); the bar carries them. */
function ReembedBar({ progress }: { progress: ReembedProgress }) {
  const pct = Math.max(0, Math.min(100, progress.percent));
  const counts = `${progress.done.toLocaleString()} of ${progress.total.toLocaleString()} chunks`;
  return (
    <div className="banner-progress">
      <div
        className="progress"
        role="progressbar"
        aria-label="Re-embedding progress"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={pct}
        aria-valuetext={`${Math.floor(pct)}% (${counts})`}
        data-testid="reembed-progress"
      >
        <span style={{ width: `${pct}%` }} />
      </div>
      <span className="muted small" aria-hidden="true" data-testid="reembed-percent">
        {Math.floor(pct)}% · {counts}
      </span>
    </div>
  );
}

function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === "AbortError";
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
