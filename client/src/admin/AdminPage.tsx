import { useCallback, useEffect, useState, type FormEvent, type KeyboardEvent } from "react";
import { adminApi } from "../api/users";
import { errorMessage } from "../api/client";
import type { AdminUser, User } from "../api/types";
import { useAuth } from "../auth/AuthContext";
import { passwordProblem, PASSWORD_HINT, USERNAME_HINT, USERNAME_RE } from "../auth/SetupPage";
import { Field } from "../components/Field";
import { Spinner } from "../components/Spinner";
import { AuditLog } from "./AuditLog";
import { UserRow } from "./UserRow";

export type Outcome = { ok: boolean; text: string } | null;

export function AdminPage() {
  const { isAdmin, user: me } = useAuth();
  const [users, setUsers] = useState<AdminUser[] | null>(null);
  const [feedback, setFeedback] = useState<Outcome>(null);
  const [tab, setTab] = useState<Tab>("users");

  const load = useCallback(async () => {
    try {
      setUsers(await adminApi.listUsers());
    } catch (e) {
      setFeedback({ ok: false, text: `Couldn't load users: ${errorMessage(e)}` });
    }
  }, []);

  useEffect(() => {
    if (isAdmin) void load();
  }, [isAdmin, load]);

  if (!isAdmin)
    return (
      <div className="page">
        <h1>Admin</h1>
        <p className="notice" data-testid="admin-forbidden">
          Only administrators can see this page.
        </p>
      </div>
    );

  /** Run an action on a user; show the server's message when it is refused. */
  const act = async (what: string, fn: () => Promise<User | null | void>, id: string) => {
    setFeedback(null);
    try {
      const updated = await fn();
      if (updated === null) setUsers((us) => (us ?? []).filter((u) => u.id !== id));
      else if (updated) setUsers((us) => (us ?? []).map((u) => (u.id === id ? { ...u, ...updated } : u)));
      setFeedback({ ok: true, text: what });
      return true;
    } catch (e) {
      setFeedback({ ok: false, text: errorMessage(e) });
      return false;
    }
  };

  return (
    <div className="page page-wide">
      <header className="page-header">
        <h1>Admin</h1>
        <p className="muted">Add users, disable or delete accounts, reset passwords, and read the audit log.</p>
      </header>

      <AdminTabs tab={tab} onChange={setTab} />
      {tab === "audit" ? (
        <div role="tabpanel" id="admin-panel-audit" aria-labelledby="admin-tab-audit">
          <AuditLog />
        </div>
      ) : (
      <div role="tabpanel" id="admin-panel-users" aria-labelledby="admin-tab-users">
      <AddUserForm
        onAdded={(u) => {
          setUsers((us) => [...(us ?? []), { ...u, documents: 0, last_seen_at: null }]);
          setFeedback({ ok: true, text: `Added ${u.username}.` });
        }}
        onError={(text) => setFeedback({ ok: false, text })}
      />

      <div aria-live="polite">
        {feedback && (
          <div
            className={feedback.ok ? "success-box" : "error-box"}
            role={feedback.ok ? undefined : "alert"}
            data-testid={feedback.ok ? "admin-notice" : "admin-error"}
          >
            <div className="error-text">{feedback.text}</div>
          </div>
        )}
      </div>

      {users === null ? (
        <div className="center-state">
          <Spinner label="Loading users" />
        </div>
      ) : (
        <div className="table-wrap" role="region" aria-labelledby="users-caption" tabIndex={0}>
          <table className="table" data-testid="admin-users">
            <caption id="users-caption">Users</caption>
            <thead>
              <tr>
                <th scope="col">Username</th>
                <th scope="col">Role</th>
                <th scope="col">Status</th>
                <th scope="col">Documents</th>
                <th scope="col">Created</th>
                <th scope="col">Last seen</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {users.map((u) => (
                <UserRow key={u.id} user={u} isMe={u.id === me?.id} act={act} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      </div>
      )}
    </div>
  );
}

type Tab = "users" | "audit";
const TABS: { id: Tab; label: string }[] = [
  { id: "users", label: "Users" },
  { id: "audit", label: "Audit log" },
];

/** ARIA tabs: arrow keys move between them, the selected one is the only one in the tab order. */
function AdminTabs({ tab, onChange }: { tab: Tab; onChange: (t: Tab) => void }) {
  const onKey = (e: KeyboardEvent<HTMLButtonElement>) => {
    const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
    if (!step) return;
    e.preventDefault();
    const next = TABS[(TABS.findIndex((t) => t.id === tab) + step + TABS.length) % TABS.length];
    onChange(next.id);
    document.getElementById(`admin-tab-${next.id}`)?.focus();
  };
  return (
    <div className="admin-tabs" role="tablist" aria-label="Admin sections">
      {TABS.map((t) => (
        <button
          key={t.id}
          type="button"
          role="tab"
          id={`admin-tab-${t.id}`}
          aria-selected={tab === t.id}
          aria-controls={`admin-panel-${t.id}`}
          tabIndex={tab === t.id ? 0 : -1}
          onClick={() => onChange(t.id)}
          onKeyDown={onKey}
          data-testid={`admin-tab-${t.id}`}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}

function AddUserForm({ onAdded, onError }: { onAdded: (u: AdminUser) => void; onError: (text: string) => void }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [admin, setAdmin] = useState(false);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy) return;
    const name = username.trim();
    const problem = !USERNAME_RE.test(name) ? `Username: ${USERNAME_HINT}` : passwordProblem(password);
    if (problem) return onError(problem);
    setBusy(true);
    try {
      const user = await adminApi.createUser({ username: name, password, is_admin: admin });
      onAdded({ ...user, documents: 0, last_seen_at: null });
      setUsername("");
      setPassword("");
      setAdmin(false);
    } catch (err) {
      onError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="card" aria-labelledby="add-user-title">
      <h2 id="add-user-title">Add a user</h2>
      <form className="grid-form" onSubmit={submit} noValidate aria-labelledby="add-user-title" data-testid="admin-add-form">
        <Field
          id="admin-add-username"
          label="Username"
          hint={USERNAME_HINT}
          autoComplete="off"
          autoCapitalize="none"
          spellCheck={false}
          value={username}
          onChange={(e) => setUsername(e.target.value)}
          data-testid="admin-add-username"
        />
        <Field
          id="admin-add-password"
          label="Password"
          hint={PASSWORD_HINT}
          type="password"
          autoComplete="new-password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          data-testid="admin-add-password"
        />
        <div className="form-row">
          <label className="checkbox">
            <input type="checkbox" checked={admin} onChange={(e) => setAdmin(e.target.checked)} data-testid="admin-add-admin" />
            Administrator
          </label>
          <button type="submit" className="btn btn-primary" disabled={busy} data-testid="admin-add-submit">
            {busy ? "Adding…" : "Add user"}
          </button>
        </div>
      </form>
    </section>
  );
}
