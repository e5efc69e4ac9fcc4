import { useEffect, useRef, useState, type FormEvent } from "react";
import { tokensApi } from "../api/tokens";
import { errorMessage } from "../api/client";
import type { ApiToken, NewApiToken } from "../api/types";
import { formatDate } from "../lib/format";

/** Personal API tokens: list, create (the secret is shown once), revoke. */
export function TokensSection() {
  const [tokens, setTokens] = useState<ApiToken[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [days, setDays] = useState("90");
  const [busy, setBusy] = useState(false);
  const [fresh, setFresh] = useState<NewApiToken | null>(null);

  useEffect(() => {
    const ctrl = new AbortController();
    tokensApi
      .list(ctrl.signal)
      .then(setTokens)
      .catch((e: unknown) => !ctrl.signal.aborted && setError(`Couldn't load your tokens: ${errorMessage(e)}`));
    return () => ctrl.abort();
  }, []);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    const n = name.trim();
    if (!n || busy) return;
    setBusy(true);
    setError(null);
    try {
      const t = await tokensApi.create(n, days ? Number(days) : null);
      setFresh(t);
      setName("");
      const { token: _secret, ...row } = t;
      void _secret;
      setTokens((ts) => [row, ...(ts ?? [])]);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  const revoke = async (id: string) => {
    try {
      await tokensApi.revoke(id);
      setTokens((ts) => (ts ?? []).filter((t) => t.id !== id));
      if (fresh?.id === id) setFresh(null);
    } catch (err) {
      setError(errorMessage(err));
    }
  };

  return (
    <section className="card" aria-labelledby="tokens-title">
      <h2 id="tokens-title">API tokens</h2>
      <p className="muted small">
        For scripts, the CLI and other tools: send <code>Authorization: Bearer rc_…</code>. A token acts as you;
        revoke it when it is no longer needed. Logging out everywhere, a password change or an admin's reset revokes
        every token.
      </p>
      <form className="inline-form" onSubmit={create} aria-label="Create an API token">
        <label htmlFor="token-name" className="sr-only">
          Token name
        </label>
        <input
          id="token-name"
          placeholder="Token name, e.g. laptop CLI"
          maxLength={100}
          autoComplete="off"
          value={name}
          onChange={(e) => setName(e.target.value)}
          data-testid="token-name"
        />
        <label htmlFor="token-expiry" className="sr-only">
          Expires
        </label>
        <select id="token-expiry" value={days} onChange={(e) => setDays(e.target.value)} data-testid="token-expiry">
          <option value="7">Expires in 7 days</option>
          <option value="30">Expires in 30 days</option>
          <option value="90">Expires in 90 days</option>
          <option value="365">Expires in a year</option>
          <option value="">Never expires</option>
        </select>
        <button type="submit" className="btn btn-primary" disabled={busy || !name.trim()} data-testid="token-create">
          Create token
        </button>
      </form>
      {fresh && <NewTokenBox token={fresh} onDone={() => setFresh(null)} />}
      {error && (
        <div className="error-box" role="alert" data-testid="token-error">
          <div className="error-text">{error}</div>
        </div>
      )}
      {tokens && tokens.length === 0 && (
        <p className="muted small" data-testid="tokens-empty">
          You have no API tokens.
        </p>
      )}
      {tokens && tokens.length > 0 && (
        <ul className="plain-list" aria-label="API tokens">
          {tokens.map((t) => (
            <TokenRow key={t.id} token={t} onRevoke={revoke} />
          ))}
        </ul>
      )}
    </section>
  );
}

function TokenRow({ token, onRevoke }: { token: ApiToken; onRevoke: (id: string) => Promise<void> }) {
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  return (
    <li className="list-row" data-testid="token-row" data-token-id={token.id}>
      <div className="list-main">
        <strong>{token.name}</strong> <code>{token.prefix}…</code>
        <div className="muted small">
          Created {formatDate(token.created_at)} · {token.last_used_at ? `last used ${formatDate(token.last_used_at)}` : "never used"}
          {" · "}
          {token.expired ? (
            <strong className="warn-text" data-testid="token-expired">
              expired {formatDate(token.expires_at)}
            </strong>
          ) : token.expires_at ? (
            `expires ${formatDate(token.expires_at)}`
          ) : (
            "never expires"
          )}
        </div>
      </div>
      <div className="row-actions">
        {confirm ? (
          <>
            <button
              type="button"
              className="btn btn-danger btn-small"
              disabled={busy}
              onClick={async () => {
                setBusy(true);
                await onRevoke(token.id);
                setBusy(false);
                setConfirm(false);
              }}
              data-testid="token-revoke-confirm"
            >
              Revoke
            </button>
            <button type="button" className="btn btn-small" autoFocus onClick={() => setConfirm(false)}>
              Cancel
            </button>
          </>
        ) : (
          <button
            type="button"
            className="btn btn-small"
            aria-label={`Revoke token ${token.name}`}
            onClick={() => setConfirm(true)}
            data-testid="token-revoke"
          >
            Revoke
          </button>
        )}
      </div>
    </li>
  );
}

function NewTokenBox({ token, onDone }: { token: NewApiToken; onDone: () => void }) {
  const input = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<string | null>(null);
  useEffect(() => input.current?.select(), []);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(token.token);
      setCopied("Copied.");
    } catch {
      input.current?.select();
      setCopied("Press Ctrl+C (⌘C) to copy the selected token.");
    }
  };

  return (
    <div className="token-secret-box" data-testid="token-secret-box">
      <p className="warn-text" role="status">
        <strong>Copy your new token “{token.name}” now.</strong> It won't be shown again.
      </p>
      <div className="inline-form">
        <label htmlFor="token-secret" className="sr-only">
          New API token
        </label>
        <input id="token-secret" ref={input} readOnly value={token.token} className="mono" data-testid="token-secret" />
        <button type="button" className="btn" onClick={() => void copy()} data-testid="token-copy">
          Copy
        </button>
        <button type="button" className="btn" onClick={onDone} data-testid="token-secret-done">
          Done
        </button>
      </div>
      <p className="muted small" aria-live="polite">
        {copied}
      </p>
    </div>
  );
}
