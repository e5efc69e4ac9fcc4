import { useEffect, useState, type FormEvent } from "react";
import { collectionsApi } from "../api/collections";
import { errorMessage } from "../api/client";
import type { Access } from "../api/types";
import { Field } from "../components/Field";
import { RetryError } from "../components/RetryError";
import { Spinner } from "../components/Spinner";
import { plural } from "../lib/format";
import { Link, navigate } from "../lib/router";
import { useCollections } from "./CollectionsContext";

export const ROLE_TEXT: Record<Access, string> = { owner: "Owner", write: "Can edit", read: "Read only" };

export function CollectionsPage() {
  const { collections, error, refresh } = useCollections();
  useEffect(() => {
    void refresh(); // fresh document counts and shares
  }, [refresh]);

  return (
    <div className="page">
      <header className="page-header">
        <h1>Collections</h1>
        <p className="muted">
          Group documents and share them with other users, read-only or with write access. Search and chat cover your
          own documents plus those in collections shared with you.
        </p>
      </header>

      <CreateCollection onCreated={refresh} />

      {error && <RetryError message={error} onRetry={() => void refresh()} />}
      {collections === null ? (
        !error && (
          <div className="center-state">
            <Spinner label="Loading collections" />
          </div>
        )
      ) : collections.length === 0 ? (
        <div className="empty" data-testid="collections-empty">
          <h2>No collections yet</h2>
          <p className="muted">Create one above, add documents to it, then share it with people.</p>
        </div>
      ) : (
        <ul className="plain-list card-list" aria-label="Collections" data-testid="collections-list">
          {collections.map((c) => (
            <li key={c.id} className="list-row" data-testid="collection-row" data-collection-id={c.id} data-role={c.role}>
              <div className="list-main">
                <Link to={`/collections/${encodeURIComponent(c.id)}`} className="list-title" data-testid="collection-link">
                  {c.name}
                </Link>
                {c.description && <div className="muted small">{c.description}</div>}
                <div className="muted small">
                  {c.role === "owner" ? "Yours" : `Shared by ${c.owner.username}`} ·{" "}
                  <span data-testid="collection-count">{plural(c.document_count, "document")}</span>
                </div>
              </div>
              <span className={`badge role-${c.role}`} data-testid="collection-role">
                {ROLE_TEXT[c.role] ?? c.role}
              </span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function CreateCollection({ onCreated }: { onCreated: () => Promise<void> }) {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const n = name.trim();
    if (!n || busy) return;
    setBusy(true);
    setError(null);
    try {
      const c = await collectionsApi.create(n, description.trim() || undefined);
      await onCreated();
      navigate(`/collections/${encodeURIComponent(c.id)}`);
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };

  return (
    <section className="card" aria-labelledby="new-collection-title">
      <h2 id="new-collection-title">New collection</h2>
      <form className="grid-form" onSubmit={submit} aria-labelledby="new-collection-title" data-testid="collection-form">
        <Field
          id="collection-name"
          label="Name"
          maxLength={200}
          autoComplete="off"
          required
          value={name}
          onChange={(e) => setName(e.target.value)}
          data-testid="collection-name"
        />
        <Field
          id="collection-description"
          label="Description (optional)"
          maxLength={1000}
          autoComplete="off"
          value={description}
          onChange={(e) => setDescription(e.target.value)}
          data-testid="collection-description"
        />
        <div className="form-row">
          <button type="submit" className="btn btn-primary" disabled={busy || !name.trim()} data-testid="collection-create">
            {busy ? "Creating…" : "Create collection"}
          </button>
        </div>
      </form>
      {error && (
        <div className="error-box" role="alert" data-testid="collection-error">
          <div className="error-text">{error}</div>
        </div>
      )}
    </section>
  );
}
