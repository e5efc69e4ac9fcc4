import { useCallback, useEffect, useRef, useState, type FormEvent } from "react";
import { auditApi, NO_FILTERS, type AuditEntry, type AuditFilters } from "../api/audit";
import { errorMessage } from "../api/client";
import { Field } from "../components/Field";
import { Spinner } from "../components/Spinner";

const PAGE = 50;

function when(at: string): string {
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? at : d.toLocaleString();
}

function target(e: AuditEntry): string {
  if (!e.target_type) return "—";
  return e.target_id ? `${e.target_type} ${e.target_id}` : e.target_type;
}

/** The details as one line of JSON; long ones (an answer's chunks) fold open on demand. */
function Details({ details }: { details: Record<string, unknown> }) {
  const text = JSON.stringify(details);
  if (text === "{}") return <span className="muted">—</span>;
  if (text.length <= 80) return <code className="audit-details">{text}</code>;
  return (
    <details>
      <summary>
        <code className="audit-details">{text.slice(0, 60)}…</code>
      </summary>
      <pre className="audit-details-full">{JSON.stringify(details, null, 2)}</pre>
    </details>
  );
}

/** The audit log, newest first: filters, pages ("Load older") and a JSON-lines export of what matches. */
export function AuditLog() {
  const [draft, setDraft] = useState<AuditFilters>(NO_FILTERS);
  const [applied, setApplied] = useState<AuditFilters>(NO_FILTERS);
  const [entries, setEntries] = useState<AuditEntry[] | null>(null);
  const [actions, setActions] = useState<string[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const latest = useRef(0);

  const load = useCallback(async (filters: AuditFilters, after: string | null) => {
    const ticket = ++latest.current;
    setBusy(true);
    setError(null);
    try {
      const page = await auditApi.page(filters, after, PAGE);
      if (ticket !== latest.current) return;
      setActions(page.actions);
      setEntries((prev) => (after ? [...(prev ?? []), ...page.entries] : page.entries));
      setCursor(page.next_cursor ?? null);
    } catch (e) {
      if (ticket !== latest.current) return;
      setError(errorMessage(e));
      if (!after) setEntries([]);
    } finally {
      if (ticket === latest.current) setBusy(false);
    }
  }, []);

  useEffect(() => {
    void load(NO_FILTERS, null);
  }, [load]);

  const apply = (e: FormEvent) => {
    e.preventDefault();
    setApplied(draft);
    void load(draft, null);
  };
  const clear = () => {
    setDraft(NO_FILTERS);
    setApplied(NO_FILTERS);
    void load(NO_FILTERS, null);
  };
  const edit = (key: keyof AuditFilters) => (e: { target: { value: string } }) =>
    setDraft((d) => ({ ...d, [key]: e.target.value }));

  return (
    <section className="card" aria-labelledby="audit-title" data-testid="audit-log">
      <h2 id="audit-title">Audit log</h2>
      <p className="muted small">
        Sign-ins, tokens, user changes, sharing, deletions, settings, and the passages each answer showed. Rows are
        never edited; they are removed only after the retention period (AUDIT_RETENTION_DAYS).
      </p>
      <form className="grid-form" onSubmit={apply} aria-label="Filter the audit log" data-testid="audit-filters">
        <Field
          id="audit-actor"
          label="Actor"
          hint="A username or user id"
          value={draft.actor}
          onChange={edit("actor")}
          data-testid="audit-actor"
        />
        <div className="field">
          <label htmlFor="audit-action">Action</label>
          <select id="audit-action" value={draft.action} onChange={edit("action")} data-testid="audit-action">
            <option value="">Any action</option>
            {actions.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </div>
        <Field
          id="audit-target-type"
          label="Target type"
          hint="user, document, collection, token, message"
          value={draft.target_type}
          onChange={edit("target_type")}
          data-testid="audit-target-type"
        />
        <Field
          id="audit-target-id"
          label="Target id"
          value={draft.target_id}
          onChange={edit("target_id")}
          data-testid="audit-target-id"
        />
        <Field
          id="audit-since"
          label="From (UTC)"
          type="date"
          value={draft.since}
          onChange={edit("since")}
          data-testid="audit-since"
        />
        <Field
          id="audit-before"
          label="Before (UTC)"
          type="date"
          value={draft.before}
          onChange={edit("before")}
          data-testid="audit-before"
        />
        <div className="form-row">
          <button type="submit" className="btn btn-primary" disabled={busy} data-testid="audit-apply">
            Apply filters
          </button>
          <button type="button" className="btn" onClick={clear} disabled={busy} data-testid="audit-clear">
            Clear
          </button>
          <a className="btn" href={auditApi.exportUrl(applied)} download data-testid="audit-export">
            Export as JSON lines
          </a>
        </div>
      </form>

      <div aria-live="polite">
        {error && (
          <div className="error-box" role="alert" data-testid="audit-error">
            <div className="error-text">{error}</div>
          </div>
        )}
      </div>

      {entries === null ? (
        <div className="center-state">
          <Spinner label="Loading the audit log" />
        </div>
      ) : (
        <div className="table-wrap" role="region" aria-labelledby="audit-caption" tabIndex={0}>
          <table className="table" data-testid="audit-table">
            <caption id="audit-caption">
              {entries.length === 0
                ? "No matching entries"
                : `${entries.length} entries${cursor ? " (more older)" : ""}`}
            </caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Actor</th>
                <th scope="col">Action</th>
                <th scope="col">Target</th>
                <th scope="col">Client</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={e.id} data-testid="audit-row" data-action={e.action}>
                  <td>
                    <time dateTime={e.at}>{when(e.at)}</time>
                  </td>
                  <td>{e.actor_name}</td>
                  <td>
                    <code>{e.action}</code>
                  </td>
                  <td className="audit-target" title={target(e)}>
                    {target(e)}
                  </td>
                  <td>{e.client ?? "—"}</td>
                  <td>
                    <Details details={e.details} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {cursor && (
        <div className="form-row audit-more">
          <button
            type="button"
            className="btn"
            onClick={() => void load(applied, cursor)}
            disabled={busy}
            data-testid="audit-more"
          >
            {busy ? "Loading…" : "Load older entries"}
          </button>
        </div>
      )}
    </section>
  );
}
