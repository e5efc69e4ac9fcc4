import { useState, type FormEvent } from "react";
import { authApi } from "../api/auth";
import { ApiError, errorMessage } from "../api/client";
import { Field } from "../components/Field";
import { useAuth } from "./AuthContext";
import { AuthLayout } from "./LoginPage";

export const USERNAME_RE = /^[A-Za-z0-9._@-]{1,64}$/;
export const USERNAME_HINT = "Letters, digits and . _ - @ (up to 64).";
export const PASSWORD_HINT = "At least 8 characters.";

/** Client-side checks before a new password is sent; null when fine. */
export function passwordProblem(password: string, confirm?: string): string | null {
  if (password.length < 8) return "The password must have at least 8 characters.";
  if (password.length > 1024) return "The password must have at most 1024 characters.";
  if (confirm !== undefined && password !== confirm) return "The passwords do not match.";
  return null;
}

/** The `?setup_token=` of the link `ragchat serve` printed (a server others can reach asks for it). */
function setupTokenInAddress(): string | null {
  return new URLSearchParams(window.location.search).get("setup_token");
}

/** First run: no account exists yet, so the first one is created as the admin. */
export function SetupPage() {
  const { signedIn, recheck } = useAuth();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [confirm, setConfirm] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy) return;
    const name = username.trim();
    const problem = !USERNAME_RE.test(name) ? `Choose a username: ${USERNAME_HINT}` : passwordProblem(password, confirm);
    if (problem) {
      setError(problem);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const created = await authApi.setup(name, password, setupTokenInAddress());
      window.history.replaceState(null, "", window.location.pathname + window.location.hash); // the token is spent
      signedIn(created);
    } catch (err) {
      setBusy(false);
      if (err instanceof ApiError && err.code === "setup_done") {
        setError("An admin account already exists. Log in instead.");
        window.setTimeout(() => void recheck(), 1500);
      } else setError(errorMessage(err));
    }
  };

  const invalid = error ? true : undefined;
  const describedBy = error ? "setup-error" : undefined;
  return (
    <AuthLayout title="Create the admin account" titleId="setup-title">
      <p className="muted">
        Welcome! ragchat has no accounts yet. This first account is the administrator: it can add other users
        later.
      </p>
      <form className="auth-form" aria-labelledby="setup-title" onSubmit={submit} noValidate data-testid="setup-form">
        <Field
          id="setup-username"
          label="Username"
          hint={USERNAME_HINT}
          autoComplete="username"
          autoCapitalize="none"
          spellCheck={false}
          required
          autoFocus
          value={username}
          onChange={(e) => setUsername(e.target.value)}
          aria-invalid={invalid}
          aria-describedby={describedBy}
          data-testid="setup-username"
        />
        <Field
          id="setup-password"
          label="Password"
          hint={PASSWORD_HINT}
          type="password"
          autoComplete="new-password"
          required
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          aria-invalid={invalid}
          aria-describedby={describedBy}
          data-testid="setup-password"
        />
        <Field
          id="setup-confirm"
          label="Confirm password"
          type="password"
          autoComplete="new-password"
          required
          value={confirm}
          onChange={(e) => setConfirm(e.target.value)}
          aria-invalid={invalid}
          aria-describedby={describedBy}
          data-testid="setup-confirm"
        />
        {error && (
          <div className="error-box" role="alert" id="setup-error" data-testid="setup-error">
            <div className="error-text">{error}</div>
          </div>
        )}
        <button type="submit" className="btn btn-primary btn-block" disabled={busy} data-testid="setup-submit">
          {busy ? "Creating…" : "Create account"}
        </button>
      </form>
    </AuthLayout>
  );
}
