import { useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import { authApi } from "../api/auth";
import { errorMessage } from "../api/client";
import type { SsoConfig } from "../api/types";
import { Field } from "../components/Field";
import { useAuth } from "./AuthContext";

/** The login page (auth on, nobody signed in, or the session ended mid-use). */
export function LoginPage() {
  const { signedIn, expired, lastUsername } = useAuth();
  const [username, setUsername] = useState(lastUsername ?? "");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const passwordRef = useRef<HTMLInputElement>(null);
  const [sso, setSso] = useState<SsoConfig | null>(null);

  // the server says why this browser's last single sign-on failed (once), never the URL
  useEffect(() => {
    const ctrl = new AbortController();
    authApi.ssoConfig(ctrl.signal).then(setSso, () => setSso({ sso: false, local_login: true }));
    return () => ctrl.abort();
  }, []);
  const ssoError = sso?.error;
  const localLogin = sso?.local_login ?? true;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy) return;
    if (!username.trim() || !password) {
      setError("Enter your username and password.");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      signedIn(await authApi.login(username.trim(), password));
    } catch (err) {
      // invalid_credentials: "Wrong username or password." (or that the account is disabled).
      setError(errorMessage(err));
      setPassword("");
      setBusy(false);
      passwordRef.current?.focus();
    }
  };

  return (
    <AuthLayout title="Log in" titleId="login-title">
      {expired && (
        <p className="notice" role="status" data-testid="session-expired">
          Your session has ended. Log in again to continue — anything you were typing is kept.
        </p>
      )}
      {ssoError && (
        <div className="error-box" role="alert" data-testid="sso-error">
          <div className="error-text">Single sign-on failed: {ssoError}</div>
        </div>
      )}
      {sso?.sso && (
        <div className="auth-form" data-testid="sso">
          {sso.unavailable ? (
            <p className="notice" role="status" data-testid="sso-unavailable">
              SSO unavailable: {sso.unavailable}
            </p>
          ) : (
            <a className="btn btn-primary btn-block" href="/api/auth/oidc/login" data-testid="sso-login">
              {sso.label}
            </a>
          )}
        </div>
      )}
      {localLogin && (
        <form className="auth-form" aria-labelledby="login-title" onSubmit={submit} noValidate data-testid="login-form">
          <Field
            id="login-username"
            label="Username"
            name="username"
            autoComplete="username"
            autoCapitalize="none"
            spellCheck={false}
            required
            autoFocus={!lastUsername}
            value={username}
            onChange={(e) => setUsername(e.target.value)}
            aria-invalid={error ? true : undefined}
            aria-describedby={error ? "login-error" : undefined}
            data-testid="login-username"
          />
          <Field
            id="login-password"
            label="Password"
            type="password"
            name="password"
            autoComplete="current-password"
            required
            autoFocus={!!lastUsername}
            ref={passwordRef}
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            aria-invalid={error ? true : undefined}
            aria-describedby={error ? "login-error" : undefined}
            data-testid="login-password"
          />
          {error && (
            <div className="error-box" role="alert" id="login-error" data-testid="login-error">
              <div className="error-text">{error}</div>
            </div>
          )}
          <button type="submit" className="btn btn-primary btn-block" disabled={busy} data-testid="login-submit">
            {busy ? "Logging in…" : "Log in"}
          </button>
        </form>
      )}
    </AuthLayout>
  );
}

/** Centered card for the login and setup pages (no app shell around them). */
export function AuthLayout({ title, titleId, children }: { title: string; titleId: string; children: ReactNode }) {
  return (
    <main id="main" className="auth-page" tabIndex={-1}>
      <div className="auth-card">
        <p className="auth-brand">
          <span className="brand-mark" aria-hidden="true" />
          ragchat
        </p>
        <h1 id={titleId}>{title}</h1>
        {children}
      </div>
    </main>
  );
}
