import { useCallback, useEffect, useState, type FormEvent } from "react";
import { collectionsApi } from "../api/collections";
import { ApiError, errorMessage } from "../api/client";
import type { CollectionDetail } from "../api/types";
import { useAuth } from "../auth/AuthContext";
import { Spinner } from "../components/Spinner";
import { Link, navigate } from "../lib/router";
import { CollectionDocuments } from "./CollectionDocuments";
import { useCollections } from "./CollectionsContext";
import { ROLE_TEXT } from "./CollectionsPage";
import type { CollectionAct } from "./act";
import { CollectionMembers } from "./CollectionMembers";

export function CollectionDetailPage({ id }: { id: string }) {
  const [detail, setDetail] = useState<CollectionDetail | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [feedback, setFeedback] = useState<{ ok: boolean; text: string } | null>(null);
  const { refresh } = useCollections();
  const { user } = useAuth();

  const load = useCallback(async () => {
    try {
      setDetail(await collectionsApi.get(id));
      setLoadError(null);
    } catch (e) {
      setLoadError(
        e instanceof ApiError && e.status === 404
          ? "This collection doesn't exist, or it isn't shared with you."
          : `Couldn't load this collection: ${errorMessage(e)}`,
      );
    }
  }, [id]);

  useEffect(() => {
    void load();
  }, [load]);

  const act: CollectionAct = async (fn, { done, reload = true } = {}) => {
    setFeedback(null);
    try {
      await fn();
      if (done) setFeedback({ ok: true, text: done });
      await Promise.all([reload && load(), refresh()]);
      return true;
    } catch (e) {
      setFeedback({ ok: false, text: errorMessage(e) });
      return false;
    }
  };

  const back = (
    <Link to="/collections" className="back-link" data-testid="collections-back">
      ← Collections
    </Link>
  );
  if (loadError)
    return (
      <div className="page">
        {back}
        <div className="error-box" role="alert" data-testid="error-box">
          <div className="error-text">{loadError}</div>
        </div>
      </div>
    );
  if (!detail)
    return (
      <div className="page center-state">
        <Spinner label="Loading collection" />
      </div>
    );

  const isOwner = detail.role === "owner";
  const leave = async () => {
    if (user && (await act(() => collectionsApi.removeMember(detail.id, user.id), { reload: false })))
      navigate("/collections");
  };

  return (
    <div className="page" data-testid="collection-detail" data-collection-id={detail.id} data-role={detail.role}>
      {back}
      <Header detail={detail} act={act} />
      <p className="muted small">
        Owner: {isOwner ? "you" : detail.owner.username} · Your access:{" "}
        <span data-testid="collection-my-role">{ROLE_TEXT[detail.role] ?? detail.role}</span>
      </p>
      <div aria-live="polite">
        {feedback && (
          <div
            className={feedback.ok ? "success-box" : "error-box"}
            role={feedback.ok ? undefined : "alert"}
            data-testid={feedback.ok ? "collection-notice" : "collection-error"}
          >
            <div className="error-text">{feedback.text}</div>
          </div>
        )}
      </div>
      <CollectionMembers detail={detail} act={act} />
      <CollectionDocuments detail={detail} act={act} myId={user?.id ?? null} />
      {!isOwner && user && (
        <section className="card" aria-labelledby="leave-title">
          <h2 id="leave-title">Leave</h2>
          <p className="muted small">Its documents will no longer appear in your search and chat.</p>
          <button type="button" className="btn" onClick={() => void leave()} data-testid="collection-leave">
            Leave this collection
          </button>
        </section>
      )}
    </div>
  );
}

/** Name and description; the owner can rename or delete. */
function Header({ detail, act }: { detail: CollectionDetail; act: CollectionAct }) {
  const [mode, setMode] = useState<"view" | "edit" | "delete">("view");
  const [name, setName] = useState(detail.name);
  const [description, setDescription] = useState(detail.description ?? "");
  const isOwner = detail.role === "owner";

  const save = async (e: FormEvent) => {
    e.preventDefault();
    if (!name.trim()) return;
    const patch = { name: name.trim(), description: description.trim() };
    if (await act(() => collectionsApi.update(detail.id, patch), { done: "Saved." })) setMode("view");
  };

  if (mode === "edit")
    return (
      <form className="grid-form card" onSubmit={save} aria-label="Rename collection" data-testid="collection-rename-form">
        <div className="field">
          <label htmlFor="rename-name">Name</label>
          <input id="rename-name" autoFocus required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} data-testid="collection-rename-name" />
        </div>
        <div className="field">
          <label htmlFor="rename-description">Description</label>
          <input id="rename-description" maxLength={1000} value={description} onChange={(e) => setDescription(e.target.value)} data-testid="collection-rename-description" />
        </div>
        <div className="row-actions">
          <button type="submit" className="btn btn-primary" disabled={!name.trim()} data-testid="collection-rename-save">
            Save
          </button>
          <button type="button" className="btn" onClick={() => setMode("view")}>
            Cancel
          </button>
        </div>
      </form>
    );

  return (
    <header className="page-header detail-header">
      <div>
        <h1 data-testid="collection-title">{detail.name}</h1>
        {detail.description && <p className="muted">{detail.description}</p>}
      </div>
      {isOwner && (
        <div className="row-actions">
          {mode === "delete" ? (
            <>
              <span className="small">Delete this collection? Its documents stay with their owners.</span>
              <button
                type="button"
                className="btn btn-danger btn-small"
                onClick={async () => {
                  if (await act(() => collectionsApi.remove(detail.id), { reload: false })) navigate("/collections");
                }}
                data-testid="collection-delete-confirm"
              >
                Delete
              </button>
              <button type="button" className="btn btn-small" autoFocus onClick={() => setMode("view")}>
                Cancel
              </button>
            </>
          ) : (
            <>
              <button type="button" className="btn btn-small" onClick={() => setMode("edit")} data-testid="collection-rename">
                Rename
              </button>
              <button type="button" className="btn btn-small btn-danger-outline" onClick={() => setMode("delete")} data-testid="collection-delete">
                Delete
              </button>
            </>
          )}
        </div>
      )}
    </header>
  );
}
