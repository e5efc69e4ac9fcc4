import { useEffect, useState } from "react";
import type { components } from "../api/schema";

export type Estimate = components["schemas"]["EstimateEvent"];

/** What the model is doing before its first token: handed `passages` (0: none yet) at `since` (ms), with the
 * server's `estimate` of how long its first token takes when the model's speed was measured (docs/SSE.md). */
export interface Reading {
  passages: number;
  since: number;
  estimate?: Estimate | null;
}

/** "about 40 s", "about 2 min": rounded the way people say it. */
export function aboutTime(seconds: number): string {
  if (seconds < 60) return `about ${Math.max(1, Math.round(seconds))} s`;
  const minutes = seconds / 60;
  return `about ${minutes < 10 ? Math.round(minutes * 2) / 2 : Math.round(minutes)} min`;
}

/** The line's words at `elapsed` seconds: "Reading 6 passages… 12 s of about 40 s", "Thinking… about 40 s". */
export function progressText(reading: Reading, elapsed: number): string {
  const { passages, estimate } = reading;
  const stage = passages > 0 ? `Reading ${passages} ${passages === 1 ? "passage" : "passages"}…` : "Thinking…";
  const shown = elapsed >= 1 ? ` ${elapsed} s` : "";
  if (!estimate) return `${stage}${shown}`;
  const expected = estimate.first_token_s;
  if (elapsed < 1) return `${stage} ${aboutTime(expected)}`;
  if (elapsed <= expected) return `${stage}${shown} of ${aboutTime(expected)}`;
  return `${stage}${shown} (usually ${aboutTime(expected)}; still working)`;
}

function speedTitle(estimate: Estimate): string {
  const parts = [`The model reads about ${estimate.prompt_tps.toFixed(1)} tokens/s here (a prompt of ~${estimate.prompt_tokens} tokens)`];
  if (estimate.gen_tps) parts.push(`and writes about ${estimate.gen_tps.toFixed(1)} tokens/s`);
  const whole = estimate.total_s ? `; the whole answer takes ${aboutTime(estimate.total_s)}` : "";
  return `${parts.join(" ")}${whole}, measured on its last ${estimate.samples} ${estimate.samples === 1 ? "call" : "calls"}.`;
}

/** The answer-in-progress line between the search and the first token, ticking every second. */
export function ProgressNote({ reading }: { reading: Reading }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(timer);
  }, []);
  const elapsed = Math.max(0, Math.floor((now - reading.since) / 1000));
  const label = reading.passages > 0 ? "The model is reading the passages" : "The model is thinking";
  return (
    <p
      className="note muted reading"
      data-testid="reading"
      aria-label={label}
      title={reading.estimate ? speedTitle(reading.estimate) : undefined}
    >
      <span className="typing" aria-hidden="true">
        <span />
        <span />
        <span />
      </span>{" "}
      {progressText(reading, elapsed)}
    </p>
  );
}
