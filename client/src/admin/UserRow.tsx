import { useState, type FormEvent } from "react";
import { adminApi } from "../api/users";
import type { AdminUser, User } from "../api/types";
import { passwordProblem } from "../auth/SetupPage";
import { formatDate } from "../lib/format";

type Act = (what: string, fn: () => Promise<User | null | void>, id: string) => Promise<boolean>;

/** One user in the admin table, with its actions (reset password and delete open inline). */
export function UserRow({ user: u, isMe, act }: { user: AdminUser; isMe: boolean; act: Act }) {
  const [mode, setMode] = useState<"idle" | "reset" | "delete">("idle");
  const [password, setPassword] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const run = async (what: string, fn: () => Promise<User | null | void>) => {
    setBusy(true);
    const ok = await act(what, fn, u.id);
    setBusy(false);
    return ok;
  };

  const reset = async (e: FormEvent) => {
    e.preventDefault();
    const p = passwordProblem(password);
    if (p) return setProblem(p);
    setProblem(null);
    if (await run(`New password set for ${u.username}; their sessions were ended.`, () => adminApi.resetPassword(u.id, password))) {
      setPassword("");
      setMode("idle");
    }
  };

  return (
    <tr
      data-testid="admin-user-row"
      data-user-id={u.id}
      data-username={u.username}
      data-admin={u.is_admin}
      data-disabled={u.disabled}
    >
      <th scope="row">
        {u.username}
        {isMe && <span className="muted small"> (you)</span>}
      </th>
      <td>{u.is_admin ? <span className="badge">Admin</span> : "User"}</td>
      <td>{u.disabled ? <span className="chip chip-warn">Disabled</span> : "Active"}</td>
      <td>{u.documents}</td>
      <td>{formatDate(u.created_at)}</td>
      <td>{u.last_seen_at ? formatDate(u.last_seen_at) : "Never"}</td>
      <td>
        {mode === "reset" ? (
          <form className="inline-form" onSubmit={reset} aria-label={`New password for ${u.username}`}>
            <label htmlFor={`reset-${u.id}`} className="sr-only">
              New password for {u.username}
            </label>
            <input
              id={`reset-${u.id}`}
              type="password"
              autoComplete="new-password"
              placeholder="New password"
              autoFocus
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              aria-invalid={problem ? true : undefined}
              aria-describedby={problem ? `reset-${u.id}-problem` : undefined}
              data-testid="admin-reset-password"
            />
            <button type="submit" className="btn btn-primary btn-small" disabled={busy} data-testid="admin-reset-submit">
              Set
            </button>
            <button type="button" className="btn btn-small" onClick={() => setMode("idle")}>
              Cancel
            </button>
            {problem && (
              <span id={`reset-${u.id}-problem`} className="field-error small" role="alert">
                {problem}
              </span>
            )}
          </form>
        ) : mode === "delete" ? (
          <div className="row-actions">
            <span className="small">Delete {u.username} and all their documents?</span>
            <button
              type="button"
              className="btn btn-danger btn-small"
              disabled={busy}
              onClick={() => void run(`Deleted ${u.username}.`, async () => (await adminApi.deleteUser(u.id), null))}
              data-testid="admin-delete-confirm"
            >
              Delete
            </button>
            <button type="button" className="btn btn-small" autoFocus onClick={() => setMode("idle")}>
              Cancel
            </button>
          </div>
        ) : (
          <div className="row-actions">
            <button
              type="button"
              className="btn btn-small"
              disabled={busy}
              onClick={() =>
                void run(`${u.disabled ? "Enabled" : "Disabled"} ${u.username}.`, () =>
                  adminApi.updateUser(u.id, { disabled: !u.disabled }),
                )
              }
              aria-label={`${u.disabled ? "Enable" : "Disable"} ${u.username}`}
              data-testid="admin-disable"
            >
              {u.disabled ? "Enable" : "Disable"}
            </button>
            <button
              type="button"
              className="btn btn-small"
              disabled={busy}
              onClick={() =>
                void run(`${u.username} is ${u.is_admin ? "no longer an admin" : "now an admin"}.`, () =>
                  adminApi.updateUser(u.id, { is_admin: !u.is_admin }),
                )
              }
              aria-label={`${u.is_admin ? "Remove admin from" : "Make admin:"} ${u.username}`}
              data-testid="admin-toggle-admin"
            >
              {u.is_admin ? "Remove admin" : "Make admin"}
            </button>
            <button type="button" className="btn btn-small" onClick={() => setMode("reset")}
              aria-label={`Reset password of ${u.username}`}
              data-testid="admin-reset"
            >
              Reset password
            </button>
            <button
              type="button"
              className="btn btn-small btn-danger-outline"
              onClick={() => setMode("delete")}
              aria-label={`Delete ${u.username}`}
              data-testid="admin-delete"
            >
              Delete
            </button>
          </div>
        )}
      </td>
    </tr>
  );
}
