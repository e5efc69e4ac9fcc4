import { useCallback, useEffect, useState } from "react";
import { evaluationApi } from "../api/evaluation";
import type { EvalConfigResult, EvalRun, EvalRunSummary } from "../api/types";

const METRICS = ["recall@1", "recall@5", "recall@10", "ndcg@10", "mrr@10"] as const;
const COLORS = ["#4c6ef5", "#12b886", "#fab005", "#e64980", "#7950f2", "#fd7e14"];

/** Grouped bars: one group per metric, one bar per configuration (values 0..max). */
function BarChart(props: { title: string; groups: string[]; series: [string, number[]][]; max?: number; unit?: string }) {
  const { title, groups, series, unit = "" } = props;
  const max = props.max ?? Math.max(1e-9, ...series.flatMap(([, v]) => v));
  const w = 640;
  const h = 220;
  const groupW = (w - 40) / Math.max(1, groups.length);
  const barW = Math.max(2, (groupW - 12) / Math.max(1, series.length));
  return (
    <figure className="eval-chart" data-testid="eval-chart">
      <figcaption>{title}</figcaption>
      {/* text and axis in currentColor: readable in both themes */}
      <svg viewBox={`0 0 ${w} ${h + 40}`} role="img" aria-label={title} width="100%" className="eval-svg">
        <line x1={36} y1={h} x2={w} y2={h} stroke="currentColor" strokeOpacity={0.5} />
        {groups.map((g, gi) => (
          <g key={g}>
            {series.map(([name, values], si) => {
              const v = values[gi] ?? 0;
              const bh = (v / max) * (h - 10);
              return (
                <g key={name}>
                  <rect data-testid="eval-bar" x={40 + gi * groupW + si * barW} y={h - bh} width={barW - 2}
                    height={bh} fill={COLORS[si % COLORS.length]}>
                    <title>{`${name} ${g}: ${v.toFixed(unit ? 1 : 3)}${unit}`}</title>
                  </rect>
                  {/* the value on the bar (what the tooltip says, without hovering) */}
                  <text data-testid="eval-value" x={40 + gi * groupW + si * barW + (barW - 2) / 2} y={h - bh - 3}
                    fontSize={barW >= 22 ? 10 : 8} textAnchor="middle" fill="currentColor">
                    {unit ? Math.round(v) : v.toFixed(2)}
                  </text>
                </g>
              );
            })}
            <text x={40 + gi * groupW + groupW / 2 - 6} y={h + 16} fontSize="12" textAnchor="middle" fill="currentColor">{g}</text>
          </g>
        ))}
        <text x={0} y={12} fontSize="11" fill="currentColor">{max.toFixed(unit ? 0 : 2)}{unit}</text>
      </svg>
      <div className="eval-legend">
        {series.map(([name], si) => (
          <span key={name}>
            <span aria-hidden="true" style={{ color: COLORS[si % COLORS.length] }}>■</span> {name}{" "}
          </span>
        ))}
      </div>
    </figure>
  );
}

function RunCharts({ run }: { run: EvalRun }) {
  const configs = Object.entries(run.results.configs ?? {}) as [string, EvalConfigResult][];
  if (!configs.length) return null;
  return (
    <div data-testid="eval-charts">
      <BarChart title="Recall@k, nDCG@10 and MRR per mode" groups={[...METRICS]} max={1}
        series={configs.map(([n, c]) => [n, METRICS.map((m) => c.metrics[m] ?? 0)])} />
      <BarChart title="Search latency (ms)" groups={["p50", "p95"]} unit=" ms"
        series={configs.map(([n, c]) => [n, [c.latency_ms.p50 ?? 0, c.latency_ms.p95 ?? 0]])} />
    </div>
  );
}

/** The questions a generated evaluation asked, each with the document it was written from. */
function AskedQuestions({ run }: { run: EvalRun }) {
  const asked = run.results.examples ?? [];
  if (!asked.length) return null;
  return (
    <details className="eval-questions" open={asked.length <= 20} data-testid="eval-questions">
      <summary>
        The {asked.length} {asked.length === 1 ? "question" : "questions"} it asked
      </summary>
      <ol>
        {asked.map((q, i) => (
          <li key={i} data-testid="eval-question">
            {q.question} {q.document && <span className="muted small">({q.document})</span>}
          </li>
        ))}
      </ol>
    </details>
  );
}

function CompareTable({ a, b }: { a: EvalRun; b: EvalRun }) {
  const ca = a.results.configs ?? {};
  const cb = b.results.configs ?? {};
  const names = Object.keys(ca).filter((n) => n in cb);
  return (
    <table className="eval-compare" data-testid="eval-compare">
      <thead>
        <tr><th>config · metric</th><th>run {a.id}</th><th>run {b.id}</th><th>Δ</th></tr>
      </thead>
      <tbody>
        {names.flatMap((n) =>
          METRICS.map((m) => {
            const x = ca[n].metrics[m] ?? 0;
            const y = cb[n].metrics[m] ?? 0;
            return (
              <tr key={`${n}-${m}`}>
                <td>{n} {m}</td><td>{x.toFixed(3)}</td><td>{y.toFixed(3)}</td>
                <td>{(y - x >= 0 ? "+" : "") + (y - x).toFixed(3)}</td>
              </tr>
            );
          }),
        )}
      </tbody>
    </table>
  );
}

export function EvaluatePage() {
  const [n, setN] = useState(20);
  const [rerank, setRerank] = useState(false);
  const [runs, setRuns] = useState<EvalRunSummary[]>([]);
  const [current, setCurrent] = useState<EvalRun | null>(null);
  const [other, setOther] = useState<EvalRun | null>(null);
  const [error, setError] = useState<string | null>(null);

  const refresh = useCallback(() => {
    evaluationApi.list().then(setRuns, (e: Error) => setError(e.message));
  }, []);
  useEffect(refresh, [refresh]);

  // Poll the shown run while it runs.
  useEffect(() => {
    if (!current || current.status !== "running") return;
    const timer = setTimeout(() => {
      evaluationApi.get(current.id).then((r) => {
        setCurrent(r);
        if (r.status !== "running") refresh();
      }, (e: Error) => setError(e.message));
    }, 500);
    return () => clearTimeout(timer);
  }, [current, refresh]);

  const start = async () => {
    setError(null);
    try {
      const started = await evaluationApi.start({ n, rerank });
      setCurrent(await evaluationApi.get(started.id));
      refresh();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const show = async (id: number, slot: "current" | "other") => {
    try {
      const run = await evaluationApi.get(id);
      (slot === "current" ? setCurrent : setOther)(run);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  return (
    <div className="page" data-testid="evaluate-page">
      <h1>Evaluate retrieval</h1>
      <p>Questions are generated by the LLM from passages of your documents; each mode is scored on finding the source.</p>
      <div className="eval-form">
        <label>Questions <input type="number" min={1} max={500} value={n} aria-label="Questions"
          onChange={(e) => setN(Number(e.target.value))} /></label>
        <label><input type="checkbox" checked={rerank} onChange={(e) => setRerank(e.target.checked)} /> also with rerank</label>
        <button type="button" className="btn" onClick={() => void start()}
          disabled={current?.status === "running"}>Start evaluation</button>
      </div>
      {error && <div className="error-box" role="alert">{error}</div>}
      {current && (
        <section data-testid="eval-current">
          <h2>Run {current.id}: {current.status}</h2>
          {current.status === "running" && (
            <p data-testid="eval-progress">{current.progress.stage} {current.progress.done}/{current.progress.total}</p>
          )}
          {current.notes && <p>{current.notes}{current.partial ? " (partial corpus)" : ""}</p>}
          {current.status === "done" && <RunCharts run={current} />}
          {current.status === "done" && <AskedQuestions run={current} />}
          {other && other.id !== current.id && <CompareTable a={other} b={current} />}
        </section>
      )}
      <h2>Past runs</h2>
      <table data-testid="eval-runs">
        <tbody>
          {runs.map((r) => (
            <tr key={r.id}>
              <td>{r.id}</td><td>{new Date(r.created_at).toLocaleString()}</td><td>{r.dataset}</td><td>{r.status}</td>
              <td>{r.notes}</td>
              <td>
                <button type="button" className="btn" onClick={() => void show(r.id, "current")}>Show</button>{" "}
                <button type="button" className="btn" onClick={() => void show(r.id, "other")}>Compare with shown</button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
