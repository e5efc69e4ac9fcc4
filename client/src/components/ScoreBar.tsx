import { scoreHint, scorePercent, type ScoreLabel } from "../lib/score";

export function ScoreBar({ score, label }: { score: number; label: ScoreLabel }) {
  const pct = scorePercent(score);
  return (
    <div className="score" data-testid="score-bar" title={`${label}: ${pct}% (${scoreHint(label)})`}>
      <span className="score-label" data-testid="score-label">
        {label}
      </span>
      <span
        className="score-track"
        role="meter"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={pct}
      >
        <span className="score-fill" style={{ width: `${pct}%` }} />
      </span>
      <span className="score-value" data-testid="score-value">
        {pct}%
      </span>
    </div>
  );
}
