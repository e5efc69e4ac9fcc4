import { useState, type FormEvent } from "react";
import { authApi } from "../api/auth";
import { errorMessage } from "../api/client";
import { useAuth } from "../auth/AuthContext";
import { passwordProblem, PASSWORD_HINT } from "../auth/SetupPage";
import { Field } from "../components/Field";
import { TokensSection } from "./TokensSection";

export function AccountPage() {
  const { auth, user, logout } = useAuth();
  const [leaving, setLeaving] = useState(false);
  const [revokeTokens, setRevokeTokens] = useState(true);

  if (auth === "off")
    return (
      <div className="page">
        <header className="page-header">
          <h1>Account</h1>
        </header>
        <p className="notice" data-testid="auth-off">
          Authentication is off: this server only listens on this computer and everyone using it is the built-in
          local admin. There is no password to change and no need for API tokens.
        </p>
      </div>
    );

  return (
    <div className="page">
      <header className="page-header">
        <h1>Account</h1>
        {user && (
          <p className="muted" data-testid="account-user">
            Signed in as <strong>{user.username}</strong>
            {user.is_admin ? " (admin)" : ""}.
          </p>
        )}
      </header>

      <PasswordForm username={user?.username ?? ""} />
      <TokensSection />

      <section className="card" aria-labelledby="sessions-title">
        <h2 id="sessions-title">Sessions</h2>
        <p className="muted small">
          Log out on every browser and device where you are signed in, this one included.
        </p>
        <label className="checkbox">
          <input
            type="checkbox"
            checked={revokeTokens}
            onChange={(e) => setRevokeTokens(e.target.checked)}
            data-testid="logout-all-revoke-tokens"
          />{" "}
          Also revoke my API tokens (scripts and tools using them stop working)
        </label>
        <button
          type="button"
          className="btn"
          disabled={leaving}
          onClick={() => {
            setLeaving(true);
            void logout(true, revokeTokens);
          }}
          data-testid="logout-all"
        >
          Log out everywhere
        </button>
      </section>
    </div>
  );
}

function PasswordForm({ username }: { username: string }) {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [confirm, setConfirm] = useState("");
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy) return;
    const problem = !current ? "Enter your current password." : passwordProblem(next, confirm);
    if (problem) {
      setResult({ ok: false, text: problem });
      return;
    }
    setBusy(true);
    setResult(null);
    try {
      await authApi.changePassword(current, next);
      setCurrent("");
      setNext("");
      setConfirm("");
      setResult({ ok: true, text: "Password changed. Your other sessions were logged out and your API tokens revoked." });
    } catch (err) {
      setResult({ ok: false, text: errorMessage(err) });
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="card" aria-labelledby="password-title">
      <h2 id="password-title">Change password</h2>
      <p className="muted small">Changing it logs out your other sessions and revokes your API tokens.</p>
      <form className="stack-form" onSubmit={submit} noValidate aria-labelledby="password-title" data-testid="account-password-form">
        {/* Lets password managers tie the new password to this account. */}
        <input type="text" name="username" autoComplete="username" value={username} readOnly hidden />
        <Field
          id="password-current"
          label="Current password"
          type="password"
          autoComplete="current-password"
          required
          value={current}
          onChange={(e) => setCurrent(e.target.value)}
          data-testid="password-current"
        />
        <Field
          id="password-new"
          label="New password"
          hint={PASSWORD_HINT}
          type="password"
          autoComplete="new-password"
          required
          value={next}
          onChange={(e) => setNext(e.target.value)}
          data-testid="password-new"
        />
        <Field
          id="password-confirm"
          label="Confirm new password"
          type="password"
          autoComplete="new-password"
          required
          value={confirm}
          onChange={(e) => setConfirm(e.target.value)}
          data-testid="password-confirm"
        />
        {result && (
          <div
            className={result.ok ? "success-box" : "error-box"}
            role={result.ok ? "status" : "alert"}
            data-testid="password-result"
            data-ok={result.ok}
          >
            <div className="error-text">{result.text}</div>
          </div>
        )}
        <div>
          <button type="submit" className="btn btn-primary" disabled={busy} data-testid="password-submit">
            {busy ? "Changing…" : "Change password"}
          </button>
        </div>
      </form>
    </section>
  );
}
